"""docs/ci.md's CI examples work as written (issue 32): their commands are taken from the doc and run here.

What cannot run here is named, not pretended: apt-get (root, the system's packages), `nodeconf run` (the VM:
tests/e2e/test_wheel.py runs an installed nodeconf against it) and `make run` itself (its plan is checked with
`make -n`, with and without npm). The venvs get no pip of their own (this interpreter's pip installs into them)
and the wheel is installed `--no-deps`, its dependencies seen through a .pth file, as in tests/e2e/test_wheel.py:
resolving them from the package index took ≈ 3 min. Cost: the wheel build (≈ 22 s) and a venv (≈ 7 s).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CI_DOC = ROOT / "docs" / "ci.md"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)
NPM_MISSING = "make: npm not found: no Allure HTML"
# How a job's command runs here (see the module docstring); a command matching none runs as written.
VENV = re.compile(r"^python3 -m venv (\S+)$")
PIP_INSTALL = re.compile(r"^(\S+)/bin/pip install ")
PIP_WHEEL = re.compile(r"^(\S+)/bin/pip wheel ")
INSTALL_HOST = re.compile(r'^bash "(.*)/install-host\.sh"$')
DIST = re.compile(r"(?<![\w/.-])dist(?=/| |$)")
NOT_HERE = (re.compile(r"^apt-get "), re.compile(r"/bin/nodeconf run\b"))


def _section_yaml(heading: str) -> dict[str, Any]:
    """The YAML example of the docs/ci.md section whose `##` heading starts with `heading`."""
    text = CI_DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    found = YAML_BLOCK.search(text[start:end if end > 0 else None])
    assert found, f"no yaml example under {heading!r}"
    loaded = yaml.safe_load(found[1])
    assert isinstance(loaded, dict)
    return loaded


def _github_commands() -> list[str]:
    steps = _section_yaml("GitHub Actions")["jobs"]["nodeconf"]["steps"]
    return [step["run"] for step in steps if "run" in step]


def _gitlab_jobs() -> dict[str, list[str]]:
    jobs = _section_yaml("GitLab CI")
    return {name: job["script"] for name, job in jobs.items() if isinstance(job, dict) and "script" in job}


def _apt_packages(commands: list[str]) -> set[str]:
    return {word for command in commands if "apt-get install" in command
            for word in command.split("apt-get install", 1)[1].split() if not word.startswith("-")}


@pytest.mark.parametrize("commands", [_github_commands(), *_gitlab_jobs().values()],
                         ids=["github", *_gitlab_jobs()])
def test_each_job_installs_the_debian_packages_its_commands_need(commands: list[str]) -> None:
    """debian:bookworm has no venv module, make or git: a job that uses them installs them first."""
    apt = _apt_packages(commands)
    later = "\n".join(command for command in commands if "apt-get" not in command)
    needs = {"python3-venv": "python3 -m venv" in later, "make": later.startswith("make ") or "\nmake " in later,
             "git": " wheel " in later or later.startswith("make ")}  # the wheel and the report record the commit
    assert {package for package, needed in needs.items() if needed} <= apt, commands


@pytest.mark.parametrize("npm", [False, True], ids=["without-npm", "with-npm"])
def test_the_github_jobs_make_run_needs_npm_only_for_allure(npm: bool, tmp_path: Path) -> None:
    """`make -n` prints the plan (a recipe naming $(MAKE) runs even then); the lock file is taken as new (-W), so
    the Allure install is planned whenever it would run."""
    targets = [command.split()[1] for command in _github_commands() if command.startswith("make ")]
    assert targets == ["run"]
    if npm:
        (tmp_path / "npm").write_text("#!/bin/sh\n")  # only looked up by `command -v`, never executed by -n
        (tmp_path / "npm").chmod(0o755)
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(["/usr/bin/make", "-n", "-W", "nodeconf/report/npm/package-lock.json", *targets],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    # the sub-make that installs Allure runs with npm only: it plans install-tool.sh, or (-W is not passed down to a
    # sub-make) finds Allure installed already
    reached = "install-tool.sh" in done.stdout or "Nothing to be done for 'report-tool'" in done.stdout
    assert reached is npm, done.stdout
    said = [line for line in done.stdout.splitlines() if line.startswith(NPM_MISSING)]  # not the echoed recipe
    assert bool(said) is not npm, done.stdout
    assert done.stdout.rstrip().endswith(".venv/bin/nodeconf run")


def _runnable_here(command: str) -> str | None:
    """The command as it runs here, None when it cannot (NOT_HERE)."""
    if any(pattern.search(command) for pattern in NOT_HERE):
        return None
    command = DIST.sub('"$DIST"', command.replace("/opt/", "$OPT/"))
    if found := VENV.match(command):
        return f"make_venv {found[1]}"
    if found := PIP_INSTALL.match(command):
        return f'"$PY" -m pip --python {found[1]}/bin/python install --no-deps -q {command[found.end():]}'
    if found := PIP_WHEEL.match(command):
        return f'"$PY" -m pip wheel -q {command[found.end():]}'
    if found := INSTALL_HOST.match(command):  # installing needs root; the script and its list are in the wheel
        return f'test -f "{found[1]}/install-host.sh" && test -f "{found[1]}/host-packages.txt"'
    return command


MAKE_VENV = """make_venv() {
  "$PY" -m venv --without-pip "$1"
  purelib=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\\n' "$DEPS" > "$purelib/project_dependencies.pth"
}
"""


def _run_job(commands: list[str], cwd: Path, tmp: Path) -> str:
    script = "set -euo pipefail\n" + MAKE_VENV + "\n".join(
        line for line in map(_runnable_here, commands) if line is not None)
    env = {**os.environ, "PY": sys.executable, "DEPS": sysconfig.get_paths()["purelib"], "OPT": str(tmp / "opt"),
           "DIST": str(tmp / "dist")}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, f"{script}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_gitlab_jobs_build_install_and_explain_from_the_wheel(tmp_path: Path) -> None:
    jobs = _gitlab_jobs()
    assert list(jobs) == ["nodeconf-wheel", "nodeconf"]
    assert not [command for command in jobs["nodeconf"] if re.search(r"pip install (?!dist/)", command)], \
        "install the wheel file, never a name from a package index"
    _run_job(jobs["nodeconf-wheel"], ROOT, tmp_path)  # the build job runs in the checkout
    assert [path.name for path in (tmp_path / "dist").iterdir()] == ["nodeconf-0.1.0-py3-none-any.whl"]
    project = tmp_path / "project"  # the test job gets dist/ as an artifact, no checkout
    project.mkdir()
    out = _run_job(jobs["nodeconf"], project, tmp_path)
    assert re.search(r"^suites: \S+/opt/nodeconf/\S+/nodeconf/bundled/suites \(installed\)$", out, re.MULTILINE), out
    assert '"name": "res-demo"' in out and '"qosClass": "Burstable"' in out, out[-2000:]
    assert not (project / "reports").exists()  # nothing ran against a node
    helped = subprocess.run([str(tmp_path / "opt" / "nodeconf" / "bin" / "nodeconf"), "--help"], cwd=project,
                            capture_output=True, text=True, timeout=60, check=False)
    assert helped.returncode == 0 and "explain" in helped.stdout and "run" in helped.stdout, helped.stderr
