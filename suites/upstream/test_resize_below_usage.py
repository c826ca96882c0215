"""A memory limit decreased below current usage, container and pod level: a small decrease applies, one below what
the pod holds waits (the limit stays), and reverting to the original applies.

Sources: upstream test/e2e/common/node/pod_resize.go doPodResizeMemoryLimitDecreaseTest "decrease memory limit
below usage" and test/e2e/common/node/pod_level_resources_resize.go "decrease pod-level memory limit below usage"
(each: 1. a slightly lowered limit is actuated, 2. a greatly lowered one stays in progress with the old values,
3. the original is actuated again). Upstream's pod holds almost nothing and lowers to 10Ki; nodeconf's container
holds 48 MiB (memhog) under 96Mi, lowers to 80Mi, then to 32Mi, below what it holds. The status, the message and
memory.max of the container and pod cgroups come from the oracle (decide_resize with the usage read from
memory.current, expect).

Guarantee relied on: the kubelet never writes a memory limit below the cgroup's current usage; the resize stays
in progress and the cgroup keeps its limit (kuberuntime_manager doPodResizeAction: "memory limit (N) below current
usage"; seed requests-limits-qos "defers it if current usage is above the new limit"), and pages a process has
touched and still maps stay charged to its cgroup's memory.current unless reclaimed (cgroup-v2.rst Memory; under
no limit pressure there is none: 48 MiB held under 80Mi).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import Pod
from nodeconf.nodes.base import PodHandle
from nodeconf.semantics.resize import ContainerUsage
from suites.toolkit.builders import container, pod
from suites.toolkit.checks import check_pod, deploy_pods, settled_evidence, wait_until
from suites.toolkit.compare import ComparedValue, assert_matches, compare_pod
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog
from suites.toolkit.pressure import MIB
from suites.toolkit.resize import decision, status_rows

pytestmark = [pytest.mark.independent, pytest.mark.min_profile("1.35")]

RESIZE_TEST = "test/e2e/common/node/pod_resize.go"
PLR_RESIZE_TEST = "test/e2e/common/node/pod_level_resources_resize.go"
RULE = ("upstream doPodResizeMemoryLimitDecreaseTest: a memory limit below current usage is not actuated "
        "(oracle: decide_resize)")
HOLD_MIB = 48
ORIGINAL, SLIGHTLY_LOWER, BELOW_USAGE = "96Mi", "80Mi", "32Mi"
HOLD = memhog(HOLD_MIB)  # the container's own process: it holds the memory until the pod is deleted


def _container_pod(limit: str) -> Pod:
    """One container holding 48 MiB, memory request == limit (upstream's c1: MemReq == MemLim, no cpu)."""
    return pod(container("c1", {"memory": limit}, {"memory": limit}, command=HOLD), name="below-usage")


def _pod_level_pod(limit: str) -> Pod:
    """The same container without resources of its own under a pod-level memory request == limit."""
    return pod(container("c1", command=HOLD), name="below-usage-plr",
               resources={"requests": {"memory": limit}, "limits": {"memory": limit}})


def _container_body(limit: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c1", "resources": {"requests": {"memory": limit},
                                                                "limits": {"memory": limit}}}]}}


def _pod_level_body(limit: str) -> dict[str, Any]:
    return {"spec": {"resources": {"requests": {"memory": limit}, "limits": {"memory": limit}}}}


LEVELS: Mapping[str, tuple[Callable[[str], Pod], Callable[[str], dict[str, Any]]]] = {
    "container": (_container_pod, _container_body),
    "pod": (_pod_level_pod, _pod_level_body),
}


def _usage(handle: PodHandle) -> dict[str, ContainerUsage]:
    files = handle.evidence(("memory.current", "memory.swap.current")).container("c1").cgroup
    return {"c1": ContainerUsage(files.number("memory.current"), files.number("memory.swap.current"))}


@pytest.mark.parametrize("level", [
    pytest.param("container", marks=pytest.mark.upstream_e2e(
        file=RESIZE_TEST, case="Pod InPlace Resize Container / decrease memory limit below usage")),
    pytest.param("pod", marks=pytest.mark.upstream_e2e(
        file=PLR_RESIZE_TEST, case="PLR Pod InPlace Resize / decrease pod-level memory limit below usage")),
])
def test_memory_limit_below_usage_waits(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, level: str) -> None:
    """96Mi → 80Mi applies; → 32Mi, below the 48 MiB the container holds, stays in progress with memory.max at
    80Mi; → 96Mi applies again. Each step's status and message and the memory.max of container and pod cgroups
    are the oracle's for the usage read just before it."""
    make, body = LEVELS[level]
    deployed = deploy_pods(deploy, oracle, kubelet, [make(ORIGINAL)])
    handle = deployed.handle(make(ORIGINAL).name)
    check_pod(handle, deployed.expected(handle.pod.name))
    wait_until(f"the container holds {HOLD_MIB} MiB", lambda: (_usage(handle)["c1"].memory or 0) >= HOLD_MIB * MIB)
    rows: list[ComparedValue] = []
    actuated = make(ORIGINAL)
    for step, limit in (("slightly lower", SLIGHTLY_LOWER), ("below usage", BELOW_USAGE), ("revert", ORIGINAL)):
        status, message = decision(oracle, kubelet, actuated, make(limit), _usage(handle))
        got = handle.resize(body(limit))
        rows += status_rows(handle.pod.name, got, status, message, f"{RULE} ({step} to {limit})")
        if status == "Applied":
            actuated = make(limit)
        # the limits in force: the new ones once applied, else the last applied (nothing below usage is written)
        expected = oracle.expect([actuated], kubelet.config).pods[0]
        evidence = settled_evidence(handle)
        rows += [row for row in compare_pod(expected, evidence) if row.file == "memory.max"]
    assert_matches(f"pod {handle.pod.ref} memory limit decreased below usage ({level} level)", rows)
