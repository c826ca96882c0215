"""`nodeconf completion bash|zsh` (issue 32 item 5): the generated bash function, run by bash itself on the words a
user typed, offers nodeconf's subcommands, options and listed values.

Cost: one `nodeconf completion` subprocess per shell and a bash subprocess per case (milliseconds each).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def script(shell: str) -> str:
    done = subprocess.run([sys.executable, "-m", "nodeconf", "completion", shell], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


@pytest.fixture(scope="module")
def bash_script() -> str:
    return script("bash")


def complete(bash_script: str, line: str, tmp_path: Path) -> list[str]:
    """What bash's completion offers for `line` (the cursor at its end), through the function `complete -p`
    registered for nodeconf, in a bash without the user's startup files."""
    words = line.split(" ")
    program = (f"{bash_script}\n"
               "read -r -a spec <<< \"$(complete -p nodeconf)\"\n"
               "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}\n"
               "\"${spec[-2]}\" nodeconf \"${COMP_WORDS[COMP_CWORD]}\" \"${COMP_WORDS[COMP_CWORD-1]}\"\n"
               "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run([bash, "--norc", "--noprofile", "-c", program, "bash", *words], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    return [word for word in done.stdout.splitlines() if word]


@pytest.mark.parametrize(("line", "offered"), [
    pytest.param("nodeconf ex", ["explain"], id="subcommand"),
    pytest.param("nodeconf c", ["checks", "clean", "completion"], id="subcommands-sharing-a-prefix"),
    pytest.param("nodeconf run --no", ["--node"], id="run-option"),
    pytest.param("nodeconf explain --no", ["--no-swap-controller"], id="explain-option"),
    pytest.param("nodeconf explain pod.yaml --pro", ["--profile"], id="option-after-a-manifest"),
    pytest.param("nodeconf explain pod.yaml -o ", ["json", "yaml", "table"], id="listed-values"),
    pytest.param("nodeconf node ", ["down", "ssh", "status", "up"], id="nested-subcommands"),
    pytest.param("nodeconf node up --m", ["--memory"], id="nested-option"),
    pytest.param("nodeconf completion ", ["bash", "zsh"], id="positional-choices"),
])
def test_bash_offers(bash_script: str, line: str, offered: list[str], tmp_path: Path) -> None:
    assert complete(bash_script, line, tmp_path) == offered


def test_a_file_argument_is_left_to_bash_file_completion(bash_script: str, tmp_path: Path) -> None:
    """`complete -o default`: with no words of its own the function offers nothing and bash completes file names."""
    assert complete(bash_script, "nodeconf explain po", tmp_path) == []
    assert "complete -o default -F _nodeconf nodeconf" in bash_script


def test_every_option_of_every_subcommand_is_offered(bash_script: str, tmp_path: Path) -> None:
    from nodeconf.cli.main import SUBCOMMANDS, build_parser

    _, subparsers = build_parser(SUBCOMMANDS)
    for name, parser in subparsers.choices.items():
        options = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
        assert set(complete(bash_script, f"nodeconf {name} --", tmp_path)) == options, name


def test_zsh_runs_the_same_function_through_bashcompinit(bash_script: str) -> None:
    zsh = script("zsh")
    assert zsh.startswith("#compdef nodeconf\n")
    assert "autoload -U +X bashcompinit && bashcompinit\n" in zsh
    assert zsh.endswith(bash_script.split("\n", 1)[1])


def test_an_unknown_shell_is_one_line_exit_2() -> None:
    done = subprocess.run([sys.executable, "-m", "nodeconf", "completion", "fish"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stdout) == (2, "")
    assert len(done.stderr.splitlines()) == 1 and "invalid choice: 'fish'" in done.stderr
