"""singleProcessOOMKill: the container cgroup's memory.oom.group (1 by default on cgroup v2, 0 with the option) and
what the OOM killer then kills inside a container of two processes.

Source: upstream test/e2e_node/oomkiller_linux_test.go "OOMKiller [LinuxOnly] [NodeConformance]" / "multi process
container" (a 15Mi-limited container whose shell runs a memory hog beside `sleep`; with memory.oom.group=1 the
whole container is killed: exit code 137). nodeconf runs the same shape under
both values of the kubelet's singleProcessOOMKill (kubelet 1.32+), the hog started by exec so that its start is
known; the container is Guaranteed, so no swap mode gives it swap and the OOM comes at its memory.max.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import CgroupFiles, ContainerState, Node, PodHandle, PodStatus
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import POLL_S, Deployed, check_pod, settled_evidence
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.toolkit.pods import memhog
from suites.upstream.shared import Res, container, make_pod, module_kubelet, shared_deployment

pytestmark = [pytest.mark.upstream_e2e(
    file="test/e2e_node/oomkiller_linux_test.go",
    case="OOMKiller [LinuxOnly] [NodeConformance] / multi process container / "
         "The containers terminated by OOM killer should have the reason set to OOMKilled")]

pytestmark.append(pytest.mark.runs_alone("reconfigures the kubelet (singleProcessOOMKill) and OOM-kills a hog"))

APP = "app"
HOG_MIB = 96
# Guaranteed, memory.max 32Mi: a hog touching 96 MiB is far above it; cpu enough for python under emulation.
LIMITS = Res("500m", "500m", "32Mi", "32Mi")
OOM_KILLS_HOG = ("kernel mm/oom_kill.c: a charge above memory.max that reclaim cannot satisfy invokes the memcg OOM "
                 "killer, which SIGKILLs the task of the cgroup with the highest oom_badness (resident memory; both "
                 "processes share the container's oom_score_adj), the 96 MiB hog: exec exit code 128 + 9")
GROUP = ("kernel cgroup-v2.rst memory.oom.group: when set, the OOM killer kills all tasks of the cgroup together "
         "(or none), counted in memory.events oom_group_kill (5.17+); when 0 only the chosen task dies")
SETTLE = 20.0  # seconds to wait for the group-killed container's restart (the first one comes without back-off)


@pytest.fixture(scope="module", params=[False, True], ids=["oom-group", "single-process"])
def deployed(request: pytest.FixtureRequest, node: Node, oracle: Oracle, base_config: KubeletConfig,
             _applied: Applied) -> Iterator[Deployed]:
    """The sleeping container on a kubelet with singleProcessOOMKill off / on; restartPolicy Always (upstream:
    Never), so that the pod and its cgroup outlive a group kill and its memory.events can be read."""
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    kubelet.use(replace(base_config, single_process_oom_kill=request.param))
    pod = make_pod("oom-group", [container(APP, LIMITS)])
    with shared_deployment(node, oracle, kubelet, [pod]) as running:
        yield running


def _oom_group(deployed: Deployed) -> Expected:
    return next(c for c in deployed.expectation.pods[0].containers if c.name == APP).cgroup.files["memory.oom.group"]


def test_pod_matches_the_oracle(deployed: Deployed) -> None:
    """The pod runs as Guaranteed, every cgroup value the oracle's (memory.oom.group included)."""
    check_pod(deployed.handles[0], deployed.expectation.pods[0], QosClass.GUARANTEED)


@pytest.mark.needs_kernel("5.17")  # memory.events oom_group_kill (cgroup-v2.rst); memory.oom.group itself is older
def test_oom_kills_the_hog_or_the_whole_container(deployed: Deployed) -> None:
    """A hog exec'd beside the container's sleep goes over memory.max: the hog is killed (137) either way; with
    memory.oom.group 1 the sleep dies with it (a group kill: the container ends with 137, upstream's assertion,
    and is restarted), with 0 the sleep keeps running and no group kill is counted."""
    handle = deployed.handles[0]
    want = _oom_group(deployed)
    evidence = settled_evidence(handle)
    own = evidence.container(APP).cgroup
    sibling = evidence.container(APP).pids
    before = _group_kills(evidence.pod_cgroup)
    result = handle.exec(APP, memhog(HOG_MIB), timeout=90)
    group = want.value == "1"
    state = _settled(handle, group).container(APP)
    after = handle.evidence()
    pod = after.pod_cgroup.path
    assert_matches("container OOM kill scope", [
        compare_value("oom-group", APP, own.path, "memory.oom.group", want, own.get("memory.oom.group")),
        compare_value("oom-group", APP, own.path, "hog exec exit code", Expected("137", OOM_KILLS_HOG),
                      str(result.rc)),
        compare_value("oom-group", "", pod, "memory.events oom_group_kill grew by",
                      Expected("1" if group else "0", GROUP), str(_group_kills(after.pod_cgroup) - before)),
        compare_value("oom-group", APP, own.path, "container after the OOM kill",
                      Expected("restarted after exit code 137" if group else "running, never restarted", GROUP),
                      _fate(state)),
        compare_value("oom-group", APP, own.path, "sleep's process still in the cgroup",
                      Expected("no" if group else "yes", GROUP),
                      "yes" if set(sibling) & set(after.container(APP).pids) else "no"),
    ])


def _fate(state: ContainerState) -> str:
    last = state.last_terminated
    if state.restart_count >= 1 and last is not None:
        return f"restarted after exit code {last.exit_code}"
    return f"{state.state}, never restarted" if state.restart_count == 0 else f"{state.state}, restarted"


def _group_kills(pod: CgroupFiles) -> int:
    """oom_group_kill of the pod cgroup's memory.events: hierarchical, so it counts the container's group kills
    also once the container's own cgroup is gone (cgroup-v2.rst memory.events vs memory.events.local)."""
    return pod.keyed("memory.events").get("oom_group_kill", 0)


def _settled(handle: PodHandle, group: bool) -> PodStatus:
    """The pod's status once the container restarted (a group kill expected), else at once; never raises."""
    deadline = time.monotonic() + (SETTLE if group else 0.0)
    while True:
        status = handle.status()
        if status.container(APP).restart_count >= 1 or time.monotonic() >= deadline:
            return status
        time.sleep(POLL_S)
