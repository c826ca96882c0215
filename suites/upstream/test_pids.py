"""Pod PID limits: the kubelet's podPidsLimit is the pod cgroup's pids.max, and a fork beyond it fails.

Source: upstream test/e2e_node/pids_test.go "PodPidsLimit" / "With config updated with pids limits" / "should set
pids.max for Pod" (a Guaranteed pod with limits cpu 10m, memory 100Mi; the pod cgroup's pids.max equals the
configured podPidsLimit). nodeconf configures 32 instead of upstream's 1024 so that the behaviour check reaches the
limit in a few forks. The per-pod `pid` limit of the PerPodPIDLimit gate (same file) is not modelled by the oracle.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import Node, PodHandle
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import Deployed, check_pod, settled_evidence
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.toolkit.pods import forker
from suites.upstream.shared import Res, container, make_pod, module_kubelet, shared_deployment

pytestmark = [pytest.mark.upstream_e2e(
    file="test/e2e_node/pids_test.go",
    case="PodPidsLimit / With config updated with pids limits / should set pids.max for Pod")]

pytestmark.append(pytest.mark.runs_alone("reconfigures the kubelet (podPidsLimit) and forks up to the pids limit"))

LIMIT = 32
# Twice the limit: a node that ignores podPidsLimit lets every fork through and the check sees no refusal.
ATTEMPTS = 2 * LIMIT
PIDS = "pids"
FORKER = "forker"
REFUSED = ("kernel cgroup-v2.rst PID controller: a fork or clone that would take the cgroup (or an ancestor) above "
           "pids.max fails with EAGAIN (kernel/cgroup/pids.c pids_can_fork → -EAGAIN)")
EVENTS = ("kernel/cgroup/pids.c: a refused fork counts in pids.events `max` of the forking task's cgroup before "
          "Linux 6.13 (pids_can_fork), of the cgroup whose pids.max was hit and its ancestors since 6.13 unless "
          "cgroup2 is mounted with pids_localevents (pids_event; cgroup-v2.rst pids.events)")
FEWER = ("the pod's pids.max bounds every task of the pod cgroup (its containers, pause, the forker itself), so "
         "the forker's children alone are fewer than the limit")


@pytest.fixture(scope="module")
def deployed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Deployed]:
    """Upstream's Guaranteed pod (limits cpu 10m, memory 100Mi) on a kubelet with podPidsLimit 32, with a second
    container that forks: at 10m of cpu the forker alone would need minutes (cpu.max 1000 100000)."""
    if "pids" not in oracle.facts.cgroup_controllers:
        pytest.skip("the node's cgroup v2 root offers no pids controller (CONFIG_CGROUP_PIDS off): no pids.max")
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    kubelet.use(replace(base_config, pod_pids_limit=LIMIT))
    pod = make_pod("pids", [container("app", Res(cpu_lim="10m", mem_lim="100Mi")),
                            container(FORKER, Res(cpu_lim="1", mem_lim="100Mi"))])
    with shared_deployment(node, oracle, kubelet, [pod]) as running:
        yield running


def _pids_max(deployed: Deployed) -> Expected:
    expected = deployed.expectation.pods[0]
    assert expected.cgroup is not None, f"the oracle gives pod {expected.pod.ref} no cgroup"
    return deployed.expectation.node_limits[expected.cgroup.path]["pids.max"]


def test_pod_matches_the_oracle(deployed: Deployed) -> None:
    """Upstream's pod runs (CreateSync) as Guaranteed, every cgroup value the oracle's."""
    check_pod(deployed.handles[0], deployed.expectation.pods[0], QosClass.GUARANTEED)


def test_pod_pids_max_is_pod_pids_limit(deployed: Deployed) -> None:
    """Upstream "should set pids.max for Pod": the pod cgroup's pids.max is podPidsLimit (oracle: 32)."""
    want = _pids_max(deployed)
    assert want.value == str(LIMIT), f"oracle pod pids.max {want.value}, not the configured {LIMIT}"
    pod = settled_evidence(deployed.handles[0]).pod_cgroup
    assert_matches("pod pids.max", [compare_value(PIDS, "", pod.path, "pids.max", want, pod.get("pids.max"))])


def test_fork_beyond_pids_max_fails(deployed: Deployed) -> None:
    """A process of the pod's second container forks up to twice the limit: a fork is refused with EAGAIN before
    its children reach the limit (the limit is the pod's, shared by both containers), and the pod cgroup's
    pids.events `max` grows; pids.max is the oracle's."""
    handle = deployed.handles[0]
    before = _refusals(handle)
    result = handle.exec(FORKER, forker(ATTEMPTS), timeout=60)
    assert result.rc == 0, f"forker exited {result.rc}: {result.stderr[-500:]}"
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    after = handle.evidence(("pids.events",)).pod_cgroup
    assert_matches("pod pids limit behaviour", [
        compare_value(PIDS, "", after.path, "pids.max", _pids_max(deployed), after.get("pids.max")),
        compare_value(PIDS, FORKER, after.path, "fork refused with", Expected("EAGAIN", REFUSED),
                      outcome["error"] or "no refusal"),
        compare_value(PIDS, FORKER, after.path, f"children forked ({outcome['forked']}) below {LIMIT}",
                      Expected("yes", FEWER), "yes" if outcome["forked"] < LIMIT else "no"),
        compare_value(PIDS, "", after.path, "pids.events max of pod + forker grew", Expected("yes", EVENTS),
                      "yes" if _refusals(handle) > before else "no"),
    ])


def _refusals(handle: PodHandle) -> int:
    """pids.events `max` of the pod cgroup plus that of the forking container's cgroup."""
    evidence = handle.evidence(("pids.events",))
    return sum(_events_max(files.get("pids.events"))
               for files in (evidence.pod_cgroup, evidence.container(FORKER).cgroup))


def _events_max(text: str | None) -> int:
    """The `max` count of a pids.events file (0 when the file was not read)."""
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "max":
            return int(value)
    return 0
