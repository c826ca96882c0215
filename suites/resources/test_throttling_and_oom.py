"""The article's burner (CFS throttling at a 200m limit) and eater (OOMKilled against a 64Mi limit) on a real kernel.

Source: requests-limits-qos article, "CPU: the CFS quota and throttling", "Memory: OOMKilled", "Hands-on".
"""

from __future__ import annotations

import time

import pytest

from fixtures.node import Deploy
from nodeconf.nodes.base import PodEvidence
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import check_admission, check_pod, check_qos, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_measured, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import pod
from suites.toolkit.tolerance import Band, cpu_usage_band, periods_band, throttled_fraction_band

pytestmark = [pytest.mark.requests_limits]

THROTTLING = "requests-limits-qos article, Hands-on burner: 633 of 637 periods throttled, usage exactly 200m"
OOM = "requests-limits-qos article, Hands-on eater: exit code 137 = 128 + 9, reason OOMKilled, memory.events"
# A busy loop is throttled in nearly every period (44 of 46 measured on the VM); a host with other load may leave
# the guest's vCPU unscheduled for a while, so half of the periods is the floor.
MIN_THROTTLED = 0.5
# The host (TCG, shared cores) may not run the guest's vCPU every moment: up to 30 % below the quota rate.
USAGE_SHORTFALL = 0.3
SAMPLING_WINDOW_S = 3.0
AT_LEAST_ONCE = Band(1, 2**63, "at least once")


def _cpu(evidence: PodEvidence) -> dict[str, int]:
    return evidence.container("burner").cgroup.keyed("cpu.stat")


def _throttled(evidence: PodEvidence) -> int:
    """Periods throttled at the container or the pod level: both carry the 200m quota and the kernel counts the
    stall where the quota ran out first (the article: the pod group's and the container's cpu.stat together)."""
    return sum(c.keyed("cpu.stat")["nr_throttled"] for c in (evidence.pod_cgroup, evidence.container("burner").cgroup))


def test_burner_is_throttled_to_its_quota(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """cpu.max 20000 100000 on container and pod; nr_throttled in most periods; usage ≈ 200m over the window."""
    burner = deploy_pods(deploy, oracle, kubelet, [pod("requests-limits/burner.yaml")])
    handle = burner.handle("burner")
    before = check_pod(handle, burner.expected("burner"), QosClass.BURSTABLE)
    started = time.monotonic()
    time.sleep(SAMPLING_WINDOW_S)  # the measurement window itself, not a wait for a condition
    after = handle.evidence()
    wall_us = int((time.monotonic() - started) * 1_000_000)
    first, last = _cpu(before), _cpu(after)
    quota, period = after.container("burner").cgroup.cpu_max()
    assert quota is not None, "burner has a cpu limit, so cpu.max must have a quota"
    periods = last["nr_periods"] - first["nr_periods"]
    window_us = periods * period
    path = after.container("burner").cgroup.path
    rows = [
        compare_measured("burner", "burner", path, "periods in the window", periods_band(wall_us, period, 5),
                         periods, f"{THROTTLING}; CFS periods of {period} us"),
        compare_measured("burner", "burner", path, "throttled share of periods", throttled_fraction_band(
            MIN_THROTTLED), min(1.0, (_throttled(after) - _throttled(before)) / max(periods, 1)), THROTTLING),
        compare_measured("burner", "burner", path, "cpu usage per period time", cpu_usage_band(
            quota, period, max(window_us, period), USAGE_SHORTFALL),
            (last["usage_usec"] - first["usage_usec"]) / max(window_us, 1), THROTTLING),
    ]
    assert_matches("pod default/burner throttling", rows)


def test_eater_is_oom_killed_and_restarted(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """exit code 137, reason OOMKilled, the restart counted, and the pod cgroup's memory.events counters."""
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
        compare_value("eater", "eater", path, "last termination reason", Expected("OOMKilled", OOM), last.reason),
        compare_measured("eater", "eater", path, "restart count", AT_LEAST_ONCE,
                         status.container("eater").restart_count, f"{OOM}; restartPolicy Always"),
        *(compare_measured("eater", "", path, f"memory.events {key}", AT_LEAST_ONCE, events.get(key, 0), OOM)
          for key in ("max", "oom", "oom_kill", "oom_group_kill")),
    ]
    assert_matches("pod default/eater OOM", rows)
