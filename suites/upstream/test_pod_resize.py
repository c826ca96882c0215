"""In-place pod resize, upstream's matrix: cpu and memory up and down, with and without limits, under each
resizePolicy, container and pod level; the status, the restart counts and the final cgroup values, then the rollback.

Source: upstream test/e2e/common/node/pod_resize.go ("guaranteed qos - 1 container with resize policy",
"burstable pods - 1 container with all requests & limits set and resize policy": each "resizing" entry under each
policy entry, then doPatchAndRollback) and test/e2e/common/node/pod_level_resources_resize.go ("PLR guaranteed qos"
pod-level entries; its container-level entries leave the pod-level resources out, so they are pod_resize.go's). The
status and every cgroup value come from the oracle (decide_resize, expect); the restart counts are the upstream
tests' own expectRestart rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.nodes.base import Node
from suites.toolkit.checks import check_pod
from suites.toolkit.compare import assert_matches
from suites.toolkit.kubelet import Applied, Oracle
from suites.upstream.resize_steps import Resizable, resize_step, restore
from suites.upstream.resize_table import (
    BURSTABLE,
    BURSTABLE_CASES,
    BURSTABLE_ORIGINAL,
    GUARANTEED,
    GUARANTEED_CASES,
    GUARANTEED_ORIGINAL,
    PLR_BURSTABLE_CASES,
    PLR_GUARANTEED_CASES,
    PLR_ORIGINAL,
    PLR_RESIZE_TEST,
    PLR_WITH_CONTAINERS,
    POD_LEVEL,
    POD_LEVEL_CASES,
    RESIZE_TEST,
    expect_pod_level_restart,
    expect_restart,
)
from suites.upstream.shared import POLICIES, Res, container, make_pod, module_kubelet, shared_deployment

pytestmark = [pytest.mark.min_profile("1.35")]

pytestmark.append(pytest.mark.independent)

RESIZE = "upstream test/e2e/common/node/pod_resize.go doPatchAndRollback (oracle: decide_resize)"
PLR_RESIZE = "upstream test/e2e/common/node/pod_level_resources_resize.go doPatchAndRollbackPLR"
RESTART = "upstream pod_resize.go expectRestart: RestartContainer and that resource's requests or limits changed"
PLR_RESTART = ("upstream pod_level_resources_resize.go expectRestart: a pod-level change restarts, per its policy, "
               "a container without values of its own")


def table_pod(name: str, own: Mapping[str, Res | None], pod_res: Res | None = None) -> Pod:
    """Four containers, one per resizePolicy entry, with their own resources; pod-level ones when given."""
    return make_pod(name, [container(policy, own[policy], POLICIES[policy]) for policy in POLICIES], pod_res)


def _module_pod(node: Node, oracle: Oracle, base: KubeletConfig, applied: Applied, pod: Pod) -> Iterator[Resizable]:
    kubelet = module_kubelet(node, oracle, base, applied)
    with shared_deployment(node, oracle, kubelet, [pod]) as deployed:
        handle = deployed.handle(pod.name)
        handle.wait_running()  # its first deployment is judged by test_table_pod_deployed, a check of its own
        yield Resizable.running(handle, deployed.expected(pod.name), pod, kubelet)


@pytest.fixture(scope="module")
def guaranteed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Resizable]:
    yield from _module_pod(node, oracle, base_config, _applied,
                           table_pod("resize-guaranteed", dict.fromkeys(POLICIES, GUARANTEED_ORIGINAL)))


@pytest.fixture(scope="module")
def burstable(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Resizable]:
    yield from _module_pod(node, oracle, base_config, _applied,
                           table_pod("resize-burstable", dict.fromkeys(POLICIES, BURSTABLE_ORIGINAL)))


@pytest.fixture(scope="module")
def pod_level(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Resizable]:
    yield from _module_pod(node, oracle, base_config, _applied, table_pod(
        "resize-plr", dict.fromkeys(POLICIES, PLR_WITH_CONTAINERS), PLR_ORIGINAL))


@pytest.fixture(scope="module")
def pod_level_only(node: Node, oracle: Oracle, base_config: KubeletConfig,
                   _applied: Applied) -> Iterator[Resizable]:
    yield from _module_pod(node, oracle, base_config, _applied,
                           table_pod("resize-plr-only", dict.fromkeys(POLICIES), PLR_ORIGINAL))


@mirrors(RESIZE_TEST, *GUARANTEED_CASES, *BURSTABLE_CASES)
@mirrors(PLR_RESIZE_TEST, *POD_LEVEL_CASES)
@pytest.mark.parametrize("table", ["guaranteed", "burstable", "pod_level", "pod_level_only"])
def test_table_pod_deployed(request: pytest.FixtureRequest, table: str) -> None:
    """Each table pod as first deployed, before any resize: every cgroup value as the oracle says. A mismatch here
    fails this check (and shows again in each resize check's rows), never the module's set-up."""
    pod: Resizable = request.getfixturevalue(table)
    check_pod(pod.handle, pod.deployed)


def _container_body(name: str, res: Res) -> dict[str, object]:
    return {"spec": {"containers": [{"name": name, "resources": res.doc()}]}}


def _container_case(oracle: Oracle, pod: Resizable, original: Res, desired: Res, policy: str, entry: str) -> None:
    """Resize one container of the table pod and roll it back, as doPatchAndRollback does."""
    own = {p: original for p in POLICIES}
    resized = table_pod(pod.original.name, {**own, policy: desired}, None)
    restore(pod)
    rows = resize_step(oracle, pod, resized, _container_body(policy, desired),
                   {policy: expect_restart(policy, original, desired)}, RESIZE, RESTART, "after resize")
    rows += resize_step(oracle, pod, pod.original, _container_body(policy, original),
                    {policy: expect_restart(policy, desired, original)}, RESIZE, RESTART, "after rollback")
    assert_matches(f"pod {pod.original.ref} container {policy} resize {entry} and rollback", rows)


@mirrors(RESIZE_TEST, *GUARANTEED_CASES)
@mirrors(PLR_RESIZE_TEST, *PLR_GUARANTEED_CASES)
@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("entry", list(GUARANTEED))
def test_guaranteed_resize(oracle: Oracle, guaranteed: Resizable, entry: str, policy: str) -> None:
    """"guaranteed qos - 1 container with resize policy [policy] resizing [entry]": requests == limits move
    together; Applied at once, restarts per policy, cgroup values of container and pod as the oracle says."""
    _container_case(oracle, guaranteed, GUARANTEED_ORIGINAL, GUARANTEED[entry], policy, entry)


@mirrors(RESIZE_TEST, *BURSTABLE_CASES)
@mirrors(PLR_RESIZE_TEST, *PLR_BURSTABLE_CASES)
@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("entry", list(BURSTABLE))
def test_burstable_resize(oracle: Oracle, burstable: Resizable, entry: str, policy: str) -> None:
    """"burstable pods - 1 container with all requests & limits set and resize policy [policy] resizing [entry]":
    requests and limits move separately; restarts per policy, cgroup values (Memory QoS included) as the oracle says."""
    _container_case(oracle, burstable, BURSTABLE_ORIGINAL, BURSTABLE[entry], policy, entry)


@mirrors(PLR_RESIZE_TEST, *POD_LEVEL_CASES)
@pytest.mark.parametrize("entry", list(POD_LEVEL))
def test_pod_level_resize(oracle: Oracle, pod_level: Resizable, pod_level_only: Resizable, entry: str) -> None:
    """"PLR guaranteed qos - 1 container with resize policy resizing [entry]": spec.resources resized and rolled
    back on a pod with one container per policy; containers with values of their own keep running, the others
    restart per policy; pod and container cgroup values as the oracle says."""
    own, desired = POD_LEVEL[entry]
    pod = pod_level if own is not None else pod_level_only
    containers = dict.fromkeys(POLICIES, own)
    resized = table_pod(pod.original.name, containers, desired)

    def body(res: Res) -> dict[str, object]:
        return {"spec": {"resources": res.doc()}}

    restore(pod)
    rows = resize_step(oracle, pod, resized, body(desired),
                   {p: expect_pod_level_restart(p, own, PLR_ORIGINAL, desired) for p in POLICIES},
                   PLR_RESIZE, PLR_RESTART, "after resize")
    rows += resize_step(oracle, pod, pod.original, body(PLR_ORIGINAL),
                    {p: expect_pod_level_restart(p, own, desired, PLR_ORIGINAL) for p in POLICIES},
                    PLR_RESIZE, PLR_RESTART, "after rollback")
    assert_matches(f"pod {pod.original.ref} pod-level resize {entry} and rollback", rows)
