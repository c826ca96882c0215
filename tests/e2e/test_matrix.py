"""Several nodes in one `nodeconf run` (issue 14 item 1): two reference VMs in parallel on a small selection give
check ids, JUnit testsuites and an HTML matrix per node, and leave no VM behind; a node that cannot be opened breaks
its own checks only, the VM's pass, and the run exits 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nodeconf.infra.vm import paths
from nodeconf.infra.vm.state import is_our_qemu, list_states

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[2]
SELECTION = ("-k", "res_demo")
RUN_TIMEOUT_S = 1500


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A nodeconf cache of this test's own: the real cache's images (and everything else in it) linked in, but a
    `vms/` directory that only this test's run writes. So what the run leaves is seen exactly, whatever VMs other
    tests (on the other xdist worker) run meanwhile."""
    own = tmp_path / "xdg-cache" / "nodeconf"
    own.mkdir(parents=True)
    for entry in paths.cache_root().iterdir():
        if entry.name != "vms":
            (own / entry.name).symlink_to(entry)
    return own


def nodeconf_run(reports: Path, cache: Path, *nodes: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "nodeconf", "run", *(f"--node={node}" for node in nodes), "--reports",
            str(reports), "--", "-p", "no:randomly", *SELECTION]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache.parent)})


def left_behind(cache: Path) -> list[str]:
    """The VMs recorded in the cache and the qemu processes naming its `vms/` directory."""
    return [f"vm {state.name}" for state in list_states(cache)] + [
        f"qemu {entry.name}" for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and is_our_qemu(int(entry.name), cache)]


def junit_suites(reports: Path) -> dict[str, list[str]]:
    root = ET.parse(reports / "junit.xml").getroot()
    return {suite.get("name", ""): [case.get("name", "") for case in suite.iter("testcase")]
            for suite in root.iter("testsuite")}


def summary(reports: Path) -> dict[str, str]:
    """check id -> status from summary.json."""
    checks = json.loads((reports / "summary.json").read_text())["checks"]
    return {check["name"]: check["status"] for check in checks}


def test_two_vms_in_parallel(tmp_path: Path, cache: Path) -> None:
    reports = tmp_path / "reports"
    run = nodeconf_run(reports, cache, "vm", "vm?name=b")
    assert run.returncode == 0, run.stdout + run.stderr
    statuses = summary(reports)
    assert statuses and all(status == "passed" for status in statuses.values()), statuses
    on_vm = sorted(name for name in statuses if "[vm" in name)
    on_b = sorted(name for name in statuses if "[b" in name)
    assert on_vm and [name.replace("[vm", "[b") for name in on_vm] == on_b
    assert len(on_vm) + len(on_b) == len(statuses)
    suites = junit_suites(reports)
    assert sorted(suites["vm"]) == on_vm and sorted(suites["b"]) == on_b
    page = (reports / "html" / "nodeconf-report.html").read_text()
    assert 'id="nodes"' in page and page.index('id="nodes"') < page.index('id="checks"')
    assert '<th scope="row">kernel</th>' in page
    for name in ("vm", "b"):
        assert "kernel_version=" in (reports / "allure-results" / f"environment-{name}.properties").read_text()
    assert left_behind(cache) == [], "a VM of the run is left"


@pytest.fixture
def unreachable_ssh(tmp_path: Path) -> str:
    """An ssh:// spec with a real key and a pinned host key, on a loopback port nothing listens on."""
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {(tmp_path / 'id_ed25519.pub').read_text().split(' ', 2)[0]} "
                           f"{(tmp_path / 'id_ed25519.pub').read_text().split()[1]}\n")
    return f"ssh://root@127.0.0.1:{port}?key={key}&known_hosts={known_hosts}&name=down"


def test_a_node_that_cannot_be_opened_breaks_only_its_checks(tmp_path: Path, cache: Path,
                                                              unreachable_ssh: str) -> None:
    reports = tmp_path / "reports"
    run = nodeconf_run(reports, cache, "vm", unreachable_ssh)
    assert run.returncode == 2, run.stdout + run.stderr
    statuses = summary(reports)
    down = {name: status for name, status in statuses.items() if "[down" in name}
    up = {name: status for name, status in statuses.items() if "[vm" in name}
    assert down and set(down.values()) == {"broken"}, statuses
    assert up and set(up.values()) == {"passed"}, statuses
    assert "ERROR" in run.stderr.splitlines()[-1] or "ERROR" in run.stdout.splitlines()[-1]
    assert left_behind(cache) == [], "a VM of the run is left"
