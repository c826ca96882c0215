"""The wheel as a vendor installs it: built, installed into a fresh venv, `nodeconf run` from an unrelated directory.

The venv (no pip of its own: this pip installs into it) gets the wheel without dependencies and sees this project's
installed dependencies through a .pth file: resolving them from the package index took ≈ 3 min on the shared host and
a venv with its own pip ≈ 25 s; the wheel's own content is what is tested. Measured: build ≈ 22 s, venv + install ≈ 7 s.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from nodeconf.report.properties import read_properties
from nodeconf.report.run_info import RUN_KEYS
from nodeconf.semantics.profile import DEFAULT_VERSION

ROOT = Path(__file__).resolve().parents[2]
# What a run needs besides the nodeconf package's modules (issue 17).
WHEEL_MEMBERS = (
    "nodeconf/bundled/conftest.py", "nodeconf/bundled/pytest.ini", "nodeconf/bundled/suites/conftest.py",
    "nodeconf/bundled/suites/resources/test_res_demo.py", "nodeconf/bundled/workloads/programs/memhog.py",
    "nodeconf/bundled/workloads/requests-limits/res-demo.yaml", "nodeconf/build_commit.txt",
    "nodeconf/fixtures/evidence.py", "nodeconf/infra/kind/limitedswap.yaml", "nodeconf/infra/vm/guest_init.sh",
    "nodeconf/infra/vm/guest_fstab.txt",
    "nodeconf/report/report.css", "nodeconf/report/install-tool.sh", "nodeconf/report/npm/package-lock.json",
)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    workdir: Path  # an unrelated directory: no checkout around it

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=self.workdir, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = (base / "dist").glob("nodeconf-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                    "-q", str(wheel)], check=True, capture_output=True, timeout=300)
    purelib = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                   "['purelib'])"], check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    workdir = base / "elsewhere"
    workdir.mkdir()
    return Installed(wheel, venv, workdir)


def _head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_wheel_carries_what_a_run_needs(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        recorded = wheel.read("nodeconf/build_commit.txt").decode().strip()
    assert [member for member in WHEEL_MEMBERS if member not in names] == []
    assert not [name for name in names if "__pycache__" in name]
    assert recorded.removesuffix("+modified") == _head()


def test_wheel_owns_only_the_nodeconf_package(installed: Installed) -> None:
    """Issue 32: no top-level `fixtures` or `infra` (`fixtures` is another PyPI project's import name): installing
    nodeconf never overwrites another distribution's package."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        tops = {name.split("/")[0] for name in wheel.namelist()}
    assert tops == {"nodeconf", "nodeconf-0.1.0.dist-info"}
    for name in ("fixtures", "infra"):
        found = installed.run(installed.bin("python"), "-c", f"import {name}")
        assert found.returncode != 0 and "ModuleNotFoundError" in found.stderr, found.stdout + found.stderr


def test_wheel_metadata_names_the_licence_and_only_used_dependencies(installed: Installed) -> None:
    """Issue 32: Apache-2.0 with its text in the wheel, classifiers and the README as description; no dependency
    that nothing imports (pytest-testinfra was one, and its plugin added 11 options to every run)."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        (metadata_name,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = wheel.read(metadata_name).decode()
    assert [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: Framework :: Pytest" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert not [line for line in requires if "testinfra" in line]


def test_installed_copy_is_used_outside_a_checkout(installed: Installed) -> None:
    where = installed.run(installed.bin("python"), "-c", "import nodeconf, nodeconf.fixtures, nodeconf.infra; "
                          "print(nodeconf.__file__, nodeconf.fixtures.__file__, nodeconf.infra.__file__)")
    assert where.returncode == 0, where.stderr
    assert all(path.startswith(str(installed.venv)) for path in where.stdout.split()), where.stdout
    version = installed.run(installed.bin("nodeconf"), "--version")
    assert version.returncode == 0, version.stderr
    first, suites = version.stdout.splitlines()
    assert first.startswith("nodeconf 0.1.0 (commit ") and _head() in first
    assert suites.startswith(f"suites: {installed.venv}") and suites.endswith("nodeconf/bundled/suites (installed)")


def test_pytest_driven_by_hand_collects_the_installed_suites(installed: Installed) -> None:
    suites = installed.run(installed.bin("python"), "-c",
                           "from nodeconf.resources import locate_tree; print(locate_tree().suites)").stdout.strip()
    done = installed.run(installed.bin("python"), "-m", "pytest", "--collect-only", "-q", suites,
                         "-p", "nodeconf.fixtures.evidence", "-k", "res_demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "suites/resources/test_res_demo.py::test_res_demo_container_pod_and_pause" in done.stdout
    assert "Warning" not in done.stdout


@pytest.mark.vm
def test_installed_nodeconf_run_records_what_judged_the_node(installed: Installed) -> None:
    vendor = installed.workdir / "vendor-repo"  # a CI repository with packages named like ours
    for name in ("fixtures", "infra", "suites"):
        (vendor / name).mkdir(parents=True)
        (vendor / name / "__init__.py").write_text(f"raise ImportError('the vendor repository {name} was imported')")
    reports = vendor / "reports"
    done = subprocess.run([installed.bin("nodeconf"), "run", "--node", "vm", "-k", "res_demo"], cwd=vendor,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"

    results = reports / "allure-results"
    entries = dict(read_properties(results / "environment.properties"))
    assert [key for key in RUN_KEYS if key not in entries] == []
    assert entries["nodeconf version"] == "0.1.0"
    assert entries["nodeconf commit"].removesuffix("+modified") == _head()
    assert entries["profile"] == DEFAULT_VERSION and entries["node"] == "vm"  # no --profile: the newest
    assert entries["kubelet config"] == "(none given: nodeconf defaults)"
    assert entries["command"] == "nodeconf run --node vm -k res_demo"  # the program by name, no temp path
    started, finished = (datetime.fromisoformat(entries[key]) for key in ("started", "finished"))
    assert started.utcoffset() == timedelta(0) and started <= finished
    assert entries["controller"] == socket.gethostname()
    assert int(entries["memory_capacity"]) > 0 and entries["kernel_version"]
    # nodeconf's own launcher provides the runtime layer and writes the formula the run accepts (non-linear).
    assert (entries["runtime"], entries["cpu_weight_formula"]) == ("direct", "nonlinear")
    assert "measured_cpu_weight_formula" not in entries

    attached = [json.loads(path.read_text()) for path in results.glob("*-container.json")]
    kubelet = [a for c in attached for f in c.get("befores", []) for a in f.get("attachments", [])
               if a["name"].startswith("kubelet config")]
    assert kubelet, "the kubelet configuration is not attached"
    content = (results / kubelet[0]["source"]).read_bytes()
    assert b"KubeletConfiguration" in content
    assert hashlib.sha256(content).hexdigest() == entries["kubelet config sha256"]

    summary = json.loads((reports / "summary.json").read_text())
    assert (summary["schema"], summary["verdict"], summary["exit_code"]) == (2, "PASS", 0)
    assert summary["counts"] == {"total": 4, "failed": 0, "broken": 0, "skipped": 0, "passed": 4}
    assert summary["run"]["nodeconf_commit"] == entries["nodeconf commit"]
    assert {(c["status"], c["node"], c["suite"], c["source"], c["first_mismatch"]) for c in summary["checks"]} == {
        ("passed", "vm", "resources", "requests_limits", None)}

    html = (reports / "html" / "nodeconf-report.html").read_text()
    for key in ("nodeconf version", "nodeconf commit", "kubelet config sha256", "started", "controller"):
        assert f"<dt>{key}</dt>" in html
    assert entries["kubelet config sha256"] in html and entries["nodeconf commit"] in html
