"""No subcommand takes a prefix of its options (`--nod` is not `--node`, issue 32): one line, exit 2, nothing run."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.cli import main as cli_main


def _long_options(parser: argparse.ArgumentParser) -> list[tuple[list[str], str]]:
    """(words before the option, option) for every long option of `parser` and of its nested subcommands."""
    found: list[tuple[list[str], str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [([name, *words], option) for words, option in _long_options(sub)]
        found += [([], option) for option in action.option_strings if option.startswith("--")]
    return found


def _every_long_option() -> list[tuple[list[str], str]]:
    """Each subcommand's long options, built as main() builds them."""
    options = []
    for command, (module, _) in cli_main.SUBCOMMANDS.items():
        parser = cli_main._OneLineParser(prog="nodeconf")
        subparsers = parser.add_subparsers()
        importlib.import_module(module).add_parser(subparsers)
        options += [([command, *words], option) for words, option in _long_options(subparsers.choices[command])]
    return options


OPTIONS = _every_long_option()
# A valid word after the option where the subcommand takes choices (else argparse refuses "x" first).
POSITIONAL = {"node": "status", "completion": "bash"}


def test_every_subcommand_has_long_options_to_check() -> None:
    commands = {words[0] for words, _ in OPTIONS}
    assert commands == set(cli_main.SUBCOMMANDS)


@pytest.mark.parametrize(("words", "option"), OPTIONS, ids=[" ".join([*w, o]) for w, o in OPTIONS])
def test_a_prefix_of_an_option_is_refused(words: list[str], option: str, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = option[:-1]
    for module, _ in cli_main.SUBCOMMANDS.values():  # parsing must refuse it: no subcommand may start
        monkeypatch.setattr(importlib.import_module(module), "run", lambda args: pytest.fail("the command ran"))
    argv = [*words, prefix, POSITIONAL.get(words[0], "x")]
    with pytest.raises(SystemExit) as exited:
        cli_main.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"unrecognized arguments: {prefix}" in err


def test_the_top_level_version_option_takes_no_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main.main(["--versio", "clean"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --versio" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "hint"), [
    (["run", "--nod", "vm"], "--nod (did you mean --node?)"),
    (["run", "--nod=vm"], "--nod (did you mean --node?)"),
    (["run", "--node", "vm", "--kubelet-conf", "k.yaml", "-k", "swap"], "did you mean --kubelet-config?"),
    (["run", "--node", "vm", "--profiel", "1.34"], "--profiel (did you mean --profile?)"),
    (["explain", "--kub", "1.34", "pod.yaml"], "did you mean --kubelet-config or --kubernetes-version?"),
])
def test_a_mistyped_option_names_the_one_meant(argv: list[str], hint: str, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`nodeconf run` hands options it does not know to pytest; one that looks like its own is refused first."""
    monkeypatch.setattr(importlib.import_module("nodeconf.cli.run"), "run", lambda args: pytest.fail("pytest ran"))
    with pytest.raises(SystemExit) as exited:
        cli_main.main(argv)
    assert exited.value.code == 2
    assert hint in capsys.readouterr().err


def test_run_still_passes_pytest_options_on(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run(args: argparse.Namespace) -> int:
        seen.append(args.pytest_args)
        return 0

    monkeypatch.setattr(importlib.import_module("nodeconf.cli.run"), "run", run)
    pytest_options = ["-k", "swap", "--maxfail=1", "--strict-markers", "--no-header", "--co", "--report-log=r.json",
                      "--durations", "5"]
    assert cli_main.main(["run", "--node", "vm", *pytest_options, "--", "-x"]) == 0
    assert seen == [[*pytest_options, "--", "-x"]]


def test_pytest_refuses_a_prefix_of_nodeconfs_pytest_options(tmp_path: Path) -> None:
    """After `--` nodeconf run hands everything to pytest, whose parser takes no prefixes either (pytest >= 8:
    PytestArgumentParser allow_abbrev=False); this holds it for the options the suites add (`--node`)."""
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--nod", "vm", str(root / "suites")], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root), "XDG_CACHE_HOME": str(tmp_path)},
                          timeout=300, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --nod" in done.stderr


@pytest.mark.parametrize("command", ["explain", "run"])
@pytest.mark.parametrize("option", ["--profile", "--kubernetes-version"])
def test_the_version_has_one_name_and_an_alias_on_explain_and_run(command: str, option: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """explain and run both read `--profile X.Y`; `--kubernetes-version`, explain's old name, means the same."""
    seen: list[str] = []
    module = importlib.import_module(f"nodeconf.cli.{command}")

    def record(args: argparse.Namespace) -> int:
        seen.append(args.profile)
        return 0

    monkeypatch.setattr(module, "run", record)
    assert cli_main.main([command, option, "1.36", *(["pod.yaml"] if command == "explain" else [])]) == 0
    assert seen == ["1.36"]


def test_explain_names_the_profile_option_for_an_unknown_version(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
    assert cli_main.main(["explain", str(pod), "--kubernetes-version", "1.20"]) == 2
    assert capsys.readouterr().err == ("nodeconf: --profile: unknown Kubernetes version '1.20' "
                                       "(supported: 1.34, 1.35, 1.36, 1.37, 1.38)\n")
