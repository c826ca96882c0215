"""Node-pressure eviction on pid.available: the low-priority fork bomb goes first, then the high-priority one, the
innocent pod stays; the node reports PIDPressure while the bombs run and not after.

Source: upstream test/e2e_node/eviction_test.go PriorityPidEvictionOrdering (a pid.available threshold the bombs
cross: the node's available pids minus what they consume; a low-priority and a high-priority fork bomb and an
innocent high-priority pod; runEvictionTest: the PIDPressure condition, the order, phase Failed with reason
Evicted, the DisruptionTarget condition, the condition gone afterwards); the oracle's ranking
(pkg/kubelet/eviction/helpers.go rankPIDPressure) and signal (makeSignalObservations, pidlimit Stats).
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.fixtures.node import Deploy
from nodeconf.nodes.base import Node, NodeError, NotApplicable, PodHandle
from nodeconf.semantics.eviction import PodProcesses, rank_for_pid_pressure
from nodeconf.semantics.expectation import Expected
from suites.toolkit.checks import POLL_S, check_admission, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import forker, pod, renamed, with_container
from suites.toolkit.pressure import eviction_order

pytestmark = [pytest.mark.disruptive,
              pytest.mark.runs_alone("node PID pressure (a pid.available threshold) and the eviction of every pod")]

# Upstream's pod names, and the value its high priority class gives (a node sees the resolved priority).
LOW, HIGH, INNOCENT = ("fork-bomb-container-with-low-priority", "fork-bomb-container-with-high-priority",
                       "innocent-pod")
HIGH_PRIORITY = 999_999_999
# Children each bomb forks (upstream: 5000 each, a threshold 4000 below the available pids). The high-priority bomb
# holds more, so a node ranking by process count alone evicts it first. CONSUMED sits between the noise of the
# node's own task count (ssh sessions, agent threads, kworkers: a few tasks) and what either bomb holds, by more
# than 30 tasks both ways: pressure holds while either bomb runs and ends once both are gone.
LOW_FORKS, HIGH_FORKS, CONSUMED = 48, 72, 36
# podPidsLimit: the pod cgroup's pids.max bounds each bomb whatever it does (kernel cgroup-v2.rst PID controller: a
# fork that would take the cgroup above pids.max fails with EAGAIN), with room for the bomb itself and the pause.
POD_PIDS_LIMIT = 2 * HIGH_FORKS
ORDER = ("upstream eviction_test.go PriorityPidEvictionOrdering: the low-priority fork bomb before the high-priority "
         "one, the innocent pod never (pkg/kubelet/eviction/helpers.go rankPIDPressure: priority, then processes)")
CONDITION = ("upstream runEvictionTest: the node reports PIDPressure while pid.available is below the threshold "
             "(helpers.go signalToNodeCondition; nodestatus setters: event NodeHasInsufficientPID) and no longer "
             "once the bombs are gone")
EVICTED = "upstream verifyEvictionOrdering: an evicted pod is Failed with reason Evicted (eviction.Reason)"
EVENT = "upstream verifyEvictionEvents: one event with reason Evicted for each evicted pod"
SPARED = "upstream PriorityPidEvictionOrdering: evictionPriority 0, the innocent pod is never evicted"


@mirrors("test/e2e_node/eviction_test.go",
         *(f"PriorityPidEvictionOrdering / when we run containers with PodAndContainerStatsFromCRI={cri} that should "
           "cause PIDPressure / should eventually evict all of the correct pods" for cri in ("true", "false")),
         "PriorityPidEvictionOrdering / when we run containers that should cause PIDPressure; baseline scenario to "
         "verify DisruptionTarget is added / should eventually evict all of the correct pods")
def test_pid_pressure_evicts_by_priority(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """The bombs fork and hold their children; then a pid.available threshold CONSUMED below what the node would
    have without them: the node evicts the low-priority bomb, then the high-priority one, and spares the innocent
    pod. Each evicted pod carries the DisruptionTarget condition (upstream's baseline scenario, verifyPodConditions):
    eviction_order orders them by it and fails without it.

    Relies on pids.current / cgroup.procs counting a cgroup's tasks exactly (kernel cgroup-v2.rst), on
    /proc/loadavg counting every task of the node (the kubelet's running count, pidlimit runningTaskCount) and on
    pids.max capping each bomb: the order follows from priority alone, the threshold from counts the bombs hold."""
    if "pids" not in oracle.facts.cgroup_controllers:
        pytest.skip("the node's cgroup v2 root offers no pids controller (CONFIG_CGROUP_PIDS off): no pids.max")
    config = kubelet.use(replace(kubelet.config, pod_pids_limit=POD_PIDS_LIMIT))
    besteffort = pod("requests-limits/qos-classes.yaml", "qos-besteffort")
    low = with_container(renamed(besteffort, LOW), "app", command=[*forker(LOW_FORKS), "--hold"])
    high = replace(with_container(renamed(besteffort, HIGH), "app", command=[*forker(HIGH_FORKS), "--hold"]),
                   priority_value=HIGH_PRIORITY)
    innocent = replace(renamed(besteffort, INNOCENT), priority_value=HIGH_PRIORITY)
    deployed = deploy_pods(deploy, oracle, kubelet, [low, innocent, high])
    for h in deployed.handles:
        check_admission(h, deployed.expected(h.pod.name))
    held = _hold(kubelet.node, deployed.handles, {LOW: LOW_FORKS + 1, HIGH: HIGH_FORKS + 1})
    oracle_order = [p.pod.name for p in rank_for_pid_pressure(
        [PodProcesses(h.pod, held[h.pod.name]) for h in deployed.handles])][:2]
    bombs = [h for h in deployed.handles if h.pod.name != INNOCENT]

    try:
        observed = kubelet.node.pid_observation()
    except NotApplicable as err:
        pytest.skip(str(err))
    threshold = observed.available + LOW_FORKS + HIGH_FORKS - CONSUMED
    kubelet.use(replace(config, eviction_hard={"pid.available": str(threshold)}))
    evicted = eviction_order(bombs, timeout=60)
    _wait_pressure_ends(kubelet.node, timeout=30)
    conditions = kubelet.node.conditions()
    rows: list[ComparedValue] = [
        compare_value("", "", "(eviction)", "eviction order", Expected(f"{LOW}, {HIGH}", ORDER), ", ".join(evicted)),
        compare_value("", "", "(eviction)", "eviction order (oracle)", Expected(", ".join(oracle_order), ORDER),
                      ", ".join(evicted)),
        compare_value("", "", "(node)", "NodeHasInsufficientPID event", Expected("yes", CONDITION),
                      "yes" if any(e.reason == "NodeHasInsufficientPID" for e in conditions.events) else "no"),
        compare_value("", "", "(node)", "PIDPressure after the evictions", Expected("False", CONDITION),
                      str(conditions.pid_pressure)),
    ]
    for h in bombs:
        status = h.status()
        rows.append(compare_value(h.pod.name, "", "(status)", "phase and reason", Expected("Failed/Evicted", EVICTED),
                                  f"{status.phase}/{status.reason}"))
        rows.append(compare_value(h.pod.name, "", "(events)", "Evicted events", Expected("1", EVENT),
                                  str(sum(e.reason == "Evicted" for e in status.events))))
    spared = next(h for h in deployed.handles if h.pod.name == INNOCENT).status()
    rows.append(compare_value(INNOCENT, "", "(status)", "phase", Expected("Running", SPARED), spared.phase))
    assert_matches("node under PID pressure", rows)


def _hold(node: Node, handles: tuple[PodHandle, ...], tasks: dict[str, int],
          timeout: float = 120.0) -> dict[str, int]:
    """Poll until each bomb's container holds its tasks (the forker and its children: cgroup.procs); each pod's
    process count then (its container's, as the kubelet counts a pod's processes)."""
    deadline = time.monotonic() + timeout
    while True:
        counts = {h.pod.name: len(e.container("app").pids)
                  for h, e in zip(handles, node.evidence_of(handles), strict=True)}
        if all(counts[name] >= want for name, want in tasks.items()):
            return counts
        if time.monotonic() > deadline:
            raise NodeError(f"the fork bombs hold {counts} processes, not {tasks}, after {timeout:g} s")
        time.sleep(POLL_S)


def _wait_pressure_ends(node: Node, timeout: float) -> None:
    """Poll until PIDPressure clears or `timeout` passes (the node rechecks the signal after each eviction)."""
    deadline = time.monotonic() + timeout
    while node.conditions().pid_pressure and time.monotonic() < deadline:
        time.sleep(POLL_S)
