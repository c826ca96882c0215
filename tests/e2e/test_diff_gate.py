"""`nodeconf report --diff` as a regression gate (issue 33): a passing run and a run of the same checks on the same
booted reference VM started with a self-test fault; the diff lists exactly the checks the fault breaks.

Both runs reach the session's reference VM as an `ssh://` node named `vm` (so check ids are those of `--node vm`),
one after the other; the enforcer each run starts on it is stopped and removed by that run. Which checks the fault
breaks is worked out by hand, as in test_suite_self.py: the runtime's linear shares→weight formula gives res-demo's
250m container weight 10 instead of 35 and the Guaranteed 500m container 20 instead of 59 (requests-limits-qos
article, cgroup table); containers without a cpu request have 2 shares, weight 1 in both formulas, and pod and QoS
cgroups are written with the kubelet's linear formula either way, so every other check passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from nodeconf.infra.vm.machine import VirtualMachine

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[2]
SELECTION = "suites/resources/test_res_demo.py"
FAULT = "cpu-weight-formula=linear"
BROKEN_BY_FAULT = {"test_res_demo_container_pod_and_pause[vm]", "test_qos_class_slice_and_oom_score_adj[vm-guaranteed]"}
RUN_TIMEOUT_S = 600


def ssh_spec(vm: VirtualMachine, extra: str = "") -> str:
    """The booted VM as an ssh:// node: its client key, its host key pinned, named `vm`."""
    key_type, key_data = vm.image.host_public_key.split()[:2]
    host_key = quote(f"{key_type} {key_data}", safe="")
    return f"ssh://root@127.0.0.1:{vm.ssh_port}?key={vm.image.client_key}&host_key={host_key}&name=vm{extra}"


def nodeconf(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodeconf", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)


def test_report_diff_lists_exactly_the_checks_a_fault_breaks(reference_vm: VirtualMachine, tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    passing = nodeconf("run", f"--node={ssh_spec(reference_vm)}", "--reports", str(good), "--", SELECTION)
    assert passing.returncode == 0, passing.stdout[-3000:] + passing.stderr[-3000:]
    faulty = nodeconf("run", f"--node={ssh_spec(reference_vm, f'&fault={FAULT}')}", "--reports", str(bad), "--",
                      SELECTION)
    assert faulty.returncode == 1, faulty.stdout[-3000:] + faulty.stderr[-3000:]

    diff = nodeconf("report", "--diff", str(good), str(bad))
    assert diff.returncode == 1, diff.stdout + diff.stderr
    changes = json.loads((bad / "summary.json").read_text())["diff"]
    verdicts = {change["id"].rpartition("#")[2]: (change["before"], change["after"]) for change in changes["verdicts"]}
    assert verdicts == {name: ("passed", "failed") for name in BROKEN_BY_FAULT}, diff.stdout
    assert changes["mismatches"] == []
    facts = {fact["key"]: (fact["before"], fact["after"]) for fact in changes["facts"]}
    assert facts["node"][1] == facts["node"][0] + f"&fault={FAULT}", facts
    # Measured on a probe container: the faulty enforcer really writes the linear formula's weights.
    assert facts["cpu_weight_formula"] == ("nonlinear", "linear"), facts
    page = (bad / "html" / "nodeconf-report.html").read_text()
    assert 'id="diff"' in page and "test_res_demo_container_pod_and_pause[vm]" in page

    assert nodeconf("report", "--diff", str(good), str(good)).returncode == 0
