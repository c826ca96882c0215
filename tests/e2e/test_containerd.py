"""`nodeconf run` on each containerd variant (Debian bookworm, trixie and sid with systemd and Debian's containerd
1.6, 1.7 and 2.x, SystemdCgroup): the enforcer drives the node's containerd over CRI v1 as a kubelet, and the run comes
to a verdict, reports containerd as the node's runtime with its version and config, reads the container back from
containerd's own scope, and every failure names containerd's version.

One check each (res-demo: a pause sandbox and one container, 38 compared values) in a `nodeconf run` of its own, one
VM per test (no xdist group: the three spread over both workers). Measured 2026-12-03 (load ≈11): bookworm 199 s,
sid 113 s; trixie ≈50-95 s before. Each with the image
cached (boot ≈26 s, agent start with two image imports and a probe sandbox, RunPodSandbox ≈9 s and
CreateContainer+StartContainer ≈7 s under TCG), plus ≈2-4.5 min for an image's first build on a cold machine.
Expectations come from the variant and the archive it is built from (bookworm ships containerd 1.6.20 with runc
1.1.5, trixie 1.7.24 with runc 1.1.15, sid containerd 2.x with runc 1.3), never from the node. Source: issue 28
"Done when"; RUNTIME-FACTS §1 (cgroupsPath: a scope `cri-containerd-<id>.scope` in a `.slice` parent).
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[2]
CHECK = "suites/resources/test_res_demo.py::test_res_demo_container_pod_and_pause"
# The daemon serving containerd's socket: Debian's containerd.service sets OOMScoreAdjust=-999 in all three.
DAEMON = "suites/upstream/test_daemon_oom_score_adj.py::test_node_daemon_oom_score_adj"
SCOPE = re.compile(r"/cri-containerd-(?P<id>[0-9a-f]{64})\.scope$")
# Debian release → the containerd and runc version prefixes its archive ships (sid moves within 2.x and 1.3).
VARIANTS = {"bookworm": ("1.6.20", "1.1.5"), "trixie": ("1.7.24", "1.1.15"), "sid": ("2.", "1.3.")}


def properties(path: Path) -> dict[str, str]:
    """Allure's environment.properties (key=value, spaces in keys escaped)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.replace("\\ ", " "): value for key, value in pairs}


@pytest.mark.parametrize("debian", VARIANTS)
def test_a_run_through_containerd_comes_to_a_verdict_and_reads_containerds_scopes(tmp_path: Path,
                                                                                   debian: str) -> None:
    containerd, runc = VARIANTS[debian]
    reports = tmp_path / "reports"
    node = f"vm?debian={debian}&init=systemd&runtime=containerd"
    done = subprocess.run(
        [sys.executable, "-m", "nodeconf", "run", "--node", node, "--reports", str(reports), "--", CHECK, DAEMON,
         "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert done.returncode in (0, 1), f"exit {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"

    facts = properties(reports / "allure-results" / "environment.properties")
    assert facts["runtime"] == "containerd"
    assert facts["runtime_version"].startswith(containerd), facts["runtime_version"]
    config = facts["runtime_config"]
    for pair in ("SystemdCgroup=True", "disable_hugetlb_controller=True", f"oci_runtime_version={runc}"):
        assert pair in config, config

    rows = [row for attachment in (reports / "allure-results").glob("*-attachment.csv")
            for row in csv.DictReader(io.StringIO(attachment.read_text()))]
    hello = {row["cgroup_path"] for row in rows if row["container"] == "hello"}
    assert len(hello) == 1, hello
    (path,) = hello
    assert SCOPE.search(path) is not None, path
    assert path.startswith("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod")

    cases = list(ET.parse(reports / "junit.xml").iter("testcase"))
    outcomes = {case.get("name", ""): [f.tag for f in case] for case in cases if "daemon" in case.get("name", "")}
    assert list(outcomes.values()) == [[], ["skipped"]], outcomes  # the runtime daemon judged and passed; no kubelet
    failures = [f"{f.get('message') or ''}\n{f.text or ''}" for case in cases
                for f in case if f.tag in ("failure", "error")]
    assert (done.returncode == 1) == bool(failures), failures
    for failure in failures:  # a failure names the runtime that made it, with its version
        assert f"containerd {facts['runtime_version']}" in failure, failure
