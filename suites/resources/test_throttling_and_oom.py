"""The article's burner (CFS throttling at a 200m limit) and eater (OOMKilled against a 64Mi limit) on a real kernel.

Source: requests-limits-qos article, "CPU: the CFS quota and throttling", "Memory: OOMKilled", "Hands-on".
"""

from __future__ import annotations

import time

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.nodes.base import PodEvidence, PodHandle
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import POLL_S, check_admission, check_pod, check_qos, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_measured, compare_reason, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import pod
from suites.toolkit.tolerance import Band

pytestmark = [pytest.mark.requests_limits]

pytestmark.append(pytest.mark.runs_alone(
    "CPU throttling needs the burner to get its quota's worth of CPU, and the OOM eater loads node memory"))

THROTTLING = f"{ARTICLE}, Hands-on burner: 633 of 637 periods throttled, usage exactly 200m"
OOM = f"{ARTICLE}, Hands-on eater: exit code 137 = 128 + 9, reason OOMKilled, memory.events"
# Periods to watch before judging (the article's burner ran for 637); the wait ends on the counters, not a clock.
MIN_PERIODS = 20
WAIT_S = 120.0
# One scheduler tick a task may run past its quota before update_curr throttles it (HZ=250: Debian's kernel);
# an overrun is paid back from the next period's quota (kernel/sched/fair.c distribute_cfs_runtime).
TICK_US = 4_000
AT_LEAST_ONCE = Band(1, 2**63, "at least once")


def _cpu(evidence: PodEvidence) -> dict[str, int]:
    return evidence.container("burner").cgroup.keyed("cpu.stat")


def _throttled(evidence: PodEvidence) -> int:
    """Periods throttled at the container or the pod level: both carry the 200m quota and the kernel counts the
    stall where the quota ran out first (the article: the pod group's and the container's cpu.stat together)."""
    return sum(c.keyed("cpu.stat")["nr_throttled"] for c in (evidence.pod_cgroup, evidence.container("burner").cgroup))


def _wait_periods(handle: PodHandle, before: PodEvidence) -> PodEvidence:
    """Poll the burner's cpu.stat until MIN_PERIODS CFS periods passed with at least one throttled (or WAIT_S,
    then the rows show what was seen): a wait for counters, so a slow host only makes it longer."""
    deadline = time.monotonic() + WAIT_S
    while True:
        after = handle.evidence()
        periods = _cpu(after)["nr_periods"] - _cpu(before)["nr_periods"]
        if (periods >= MIN_PERIODS and _throttled(after) > _throttled(before)) or time.monotonic() > deadline:
            return after
        time.sleep(POLL_S)


def test_burner_is_throttled_to_its_quota(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """cpu.max 20000 100000 on container and pod; the busy loop is throttled, and never uses more than its quota.

    Guaranteed (kernel/sched/fair.c CFS bandwidth): a group never runs more than `quota` per period, but for one
    tick of overrun that the next period pays back, so usage <= quota x (periods + 1) + a tick over any window
    (the window's first period may be partly used); a task that exhausts its quota is throttled (nr_throttled).
    A busy loop always runnable exhausts 20 ms in some period once the host runs the guest's vCPU for 20 ms.
    NOT guaranteed, so not asserted: how many periods are throttled or how close usage comes to the quota (the
    host may not run the guest's vCPU), nor how many periods a wall-clock window holds.
    """
    burner = deploy_pods(deploy, oracle, kubelet, [pod("requests-limits/burner.yaml")])
    handle = burner.handle("burner")
    before = check_pod(handle, burner.expected("burner"), QosClass.BURSTABLE)
    after = _wait_periods(handle, before)
    first, last = _cpu(before), _cpu(after)
    quota, _ = after.container("burner").cgroup.cpu_max()
    assert quota is not None, "burner has a cpu limit, so cpu.max must have a quota"
    periods = last["nr_periods"] - first["nr_periods"]
    path = after.container("burner").cgroup.path
    ceiling = quota * (periods + 1) + TICK_US
    rows = [
        # Each level (pod and container, both with the quota) is throttled at most once per its own period; their
        # period timers start apart, so each level sees at most periods + 1 while the container sees `periods`.
        compare_measured("burner", "burner", path, "periods throttled while watched", Band(
            1, 2 * (periods + 1), f"at least one; at most once per period ({periods}, +1) at each of 2 levels"),
            _throttled(after) - _throttled(before), THROTTLING),
        compare_measured("burner", "burner", path, "cpu usage_usec while watched", Band(
            0, ceiling, f"quota {quota} us x ({periods} periods + 1) + one {TICK_US} us tick"),
            last["usage_usec"] - first["usage_usec"], THROTTLING),
    ]
    assert_matches("pod default/burner throttling", rows)


# The pod cgroup's memory.events counters an OOM kill raises; oom_group_kill exists from Linux 5.17 (kernel
# cgroup-v2.rst memory.events), and the kill is a group kill because the kubelet sets memory.oom.group=1 on the
# container (singleProcessOOMKill false, the default on cgroup v2).
@pytest.mark.upstream_e2e(file="test/e2e_node/oomkiller_linux_test.go",
                          case="OOMKiller [LinuxOnly] [NodeConformance] / single process container / "
                               "The containers terminated by OOM killer should have the reason set to OOMKilled")
@pytest.mark.parametrize("counters", [
    pytest.param(("max", "oom", "oom_kill"), id="memory-events"),
    pytest.param(("oom_group_kill",), id="group-kill", marks=pytest.mark.needs_kernel("5.17")),
])
def test_eater_is_oom_killed_and_restarted(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                           counters: tuple[str, ...]) -> None:
    """exit code 137, reason OOMKilled, the restart counted, and the pod cgroup's memory.events counters (a
    reason other than OOMKilled names the node's CRI runtime when the kernel counted the kill)."""
    eater = deploy_pods(deploy, oracle, kubelet, [pod("requests-limits/eater.yaml")])
    handle, expected = eater.handle("eater"), eater.expected("eater")
    check_admission(handle, expected)
    check_qos(handle, expected, QosClass.BURSTABLE)
    status = handle.wait_for(lambda s: s.container("eater").restart_count >= 1
                             and s.container("eater").last_terminated is not None, timeout=90,
                             what="eater OOM-killed and restarted")
    last = status.container("eater").last_terminated
    assert last is not None
    pod_cgroup = handle.evidence().pod_cgroup
    events = pod_cgroup.keyed("memory.events")
    path = pod_cgroup.path
    rows: list[ComparedValue] = [
        compare_value("eater", "eater", path, "last exit code", Expected("137", OOM), str(last.exit_code)),
        compare_reason("eater", "eater", path, "last termination reason", Expected("OOMKilled", OOM), last.reason,
                       (last.reason, last.exit_code), oracle.facts, events.get("oom_kill", 0)),
        compare_measured("eater", "eater", path, "restart count", AT_LEAST_ONCE,
                         status.container("eater").restart_count, f"{OOM}; restartPolicy Always"),
        *(compare_measured("eater", "", path, f"memory.events {key}", AT_LEAST_ONCE, events.get(key, 0), OOM)
          for key in counters),
    ]
    assert_matches("pod default/eater OOM", rows)
