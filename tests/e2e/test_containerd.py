"""`nodeconf run` on the containerd variant (Debian trixie, systemd, Debian's containerd with SystemdCgroup): the
enforcer drives the node's containerd over CRI v1 as a kubelet, and the run comes to a verdict, reports containerd
as the node's runtime with its config, and reads the container back from containerd's own scope.

One check (res-demo: a pause sandbox and one container, 38 compared values) in a `nodeconf run` of its own: ≈2.5 min
on this machine with the image cached (boot ≈26 s, agent start with two image imports, RunPodSandbox ≈9 s and
CreateContainer+StartContainer ≈7 s under TCG), plus ≈2-4.5 min for the image's first build on a cold machine.
Expectations come from the variant and the archive it is built from (trixie ships containerd 1.7.24 and runc
1.1.15), never from the node. Source: issue 28 "Done when"; RUNTIME-FACTS §1 (cgroupsPath: a scope
`cri-containerd-<id>.scope` in a `.slice` parent).
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[2]
NODE = "vm?debian=trixie&init=systemd&runtime=containerd"
CHECK = "suites/resources/test_res_demo.py::test_res_demo_container_pod_and_pause"
SCOPE = re.compile(r"/cri-containerd-(?P<id>[0-9a-f]{64})\.scope$")


def properties(path: Path) -> dict[str, str]:
    """Allure's environment.properties (key=value, spaces in keys escaped)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.replace("\\ ", " "): value for key, value in pairs}


def test_a_run_through_containerd_comes_to_a_verdict_and_reads_containerds_scopes(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    done = subprocess.run(
        [sys.executable, "-m", "nodeconf", "run", "--node", NODE, "--reports", str(reports), "--", CHECK, "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert done.returncode in (0, 1), f"exit {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"

    facts = properties(reports / "allure-results" / "environment.properties")
    assert facts["runtime"] == "containerd"
    assert facts["runtime_version"].startswith("1.7.24")
    config = facts["runtime_config"]
    for pair in ("SystemdCgroup=True", "disable_hugetlb_controller=True", "oci_runtime_version=1.1.15"):
        assert pair in config, config

    rows = [row for attachment in (reports / "allure-results").glob("*-attachment.csv")
            for row in csv.DictReader(io.StringIO(attachment.read_text()))]
    hello = {row["cgroup_path"] for row in rows if row["container"] == "hello"}
    assert len(hello) == 1, hello
    (path,) = hello
    found = SCOPE.search(path)
    assert found is not None, path
    assert path.startswith("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod")
