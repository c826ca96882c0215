"""The node's own kubelet and CRI runtime daemon are OOM-protected: oom_score_adj -999.

Source: upstream test/e2e_node/container_manager_test.go "Validate OOM score adjustments" / "once the node is setup"
("container runtime's oom-score-adj should be -999", "Kubelet's oom-score-adj should be -999"). The values are the
processes' /proc/PID/oom_score_adj, read when the node was opened: the runtime daemon is the process serving
containerd's or CRI-O's default socket (SO_PEERCRED), whether or not nodeconf drives it; a kubelet is a process
named `kubelet`. Where nodeconf's enforcer plays the kubelet (no kubelet process) the kubelet check does not apply:
its -999 is nodeconf's own doing, and judging it would judge nodeconf, not the node.
"""

from __future__ import annotations

import pytest

from nodeconf.semantics.oom import KUBELET_DAEMON, RUNTIME_DAEMON, daemon_oom_score_adj
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Oracle

CASE = ("Container Manager Misc [Serial] / Validate OOM score adjustments [NodeFeature:OOMScoreAdj] / once the node is "
        "setup / ")
pytestmark = pytest.mark.independent  # reads the facts read when the node was opened; deploys nothing

FILE = "test/e2e_node/container_manager_test.go"
NOT_READ = ("nodeconf did not read the node's processes (a kube: node: the kubelet and the runtime run outside the "
            "reader pod's PID namespace)")
NONE_FOUND = {
    RUNTIME_DAEMON: "no process serves containerd's or CRI-O's default socket on this node: nodeconf starts the "
                    "containers itself (runtime=direct, runc or crun), there is no runtime daemon to judge",
    KUBELET_DAEMON: "no kubelet process runs on this node: its kubelet is nodeconf's enforcer, whose own -999 would "
                    "judge nodeconf, not the node",
}


@pytest.mark.parametrize("daemon", [
    pytest.param(RUNTIME_DAEMON, marks=pytest.mark.upstream_e2e(
        file=FILE, case=CASE + "container runtime's oom-score-adj should be -999")),
    pytest.param(KUBELET_DAEMON, marks=pytest.mark.upstream_e2e(
        file=FILE, case=CASE + "Kubelet's oom-score-adj should be -999")),
])
def test_node_daemon_oom_score_adj(oracle: Oracle, daemon: str) -> None:
    """Each process of the daemon has oom_score_adj -999 (the oracle's)."""
    facts = oracle.facts
    found = facts.runtime_daemon_oom_score_adj if daemon == RUNTIME_DAEMON else facts.kubelet_oom_score_adj
    if found is None:
        pytest.skip(NOT_READ)
    if not found:
        pytest.skip(NONE_FOUND[daemon])
    expected = daemon_oom_score_adj(daemon)
    where = "socket" if daemon == RUNTIME_DAEMON else "pid"
    assert_matches(f"the node's {daemon} daemon", [
        compare_value("", daemon, f"({where} {process})", "oom_score_adj", expected, str(adj))
        for process, adj in found])
