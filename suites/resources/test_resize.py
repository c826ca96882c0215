"""In-place resize: the article's cpu limit to one core, its two refusals, and KEP-5359's limits.swap up and down.

Source: requests-limits-qos article, "Changing resources on the fly" and "Hands-on" resize; kep-5359-swap-awareness
"In-Place Pod Resize" (an increase at once, a decrease deferred until memory.swap.current is below it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from fixtures.compare import ComparedValue, assert_matches, compare_value
from fixtures.node import Deploy
from fixtures.tolerance import page_floor
from nodeconf.manifest import MEMORY, SWAP, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodHandle, ResizeStatus
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.resize import decide_resize
from suites.checks import check_pod, deploy_pods, settled_evidence, wait_until
from suites.conftest import Kubelet, Oracle
from suites.pods import PROGRAMS_DIR, pod, with_container
from suites.pressure import MIB

pytestmark = [pytest.mark.requests_limits]

RESIZE = "requests-limits-qos article, Hands-on in-place resize"
SWAP_RESIZE = "KEP-5359 In-Place Pod Resize: increase applied at once, decrease deferred until swap usage is below"


@dataclass(frozen=True)
class Usage:
    """Current usage as the oracle's resize decision reads it."""

    memory: int | None
    swap: int | None


def _patch(container: str, resources: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": container, "resources": {k: dict(v) for k, v in resources.items()}}]}}


def _usage_masked(message: str) -> str:
    """A deferral message without the usage figure it quotes (usage moves between our sample and the node's)."""
    return re.sub(r"usage \(\d+\)", "usage (N)", message)


def _status_rows(name: str, got: ResizeStatus, status: str, message: str, rule: str) -> list[ComparedValue]:
    return [compare_value(name, "", "(resize)", "resize status", Expected(status, rule), got.status),
            compare_value(name, "", "(resize)", "resize message", Expected(_usage_masked(message), rule),
                          _usage_masked(got.message))]


def _decision(oracle: Oracle, kubelet: Kubelet, current: Pod, desired: Pod,
              usage: Mapping[str, Usage] | None = None) -> tuple[str, str]:
    decision = decide_resize(current, desired, usage or {}, oracle.facts, kubelet.config,
                             oracle.profile(kubelet.config))
    return decision.status.value, decision.message


def _pid(handle: PodHandle, container: str) -> tuple[int, ...]:
    return settled_evidence(handle).container(container).pids


def test_cpu_limit_to_one_core_without_restart(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """limits.cpu 500m → 1: cpu.max 100000 100000 on container and pod group, same process, restarts 0."""
    demo = pod("requests-limits/res-demo.yaml")
    deployed = deploy_pods(deploy, oracle, kubelet, [demo])
    handle = deployed.handle("res-demo")
    check_pod(handle, deployed.expected("res-demo"), QosClass.BURSTABLE)
    before = _pid(handle, "hello")
    desired = with_container(demo, "hello", limits={"cpu": "1", MEMORY: "128Mi"})
    status, message = _decision(oracle, kubelet, demo, desired)
    got = handle.resize(_patch("hello", {"limits": {"cpu": "1"}}))
    after = settled_evidence(handle)
    state = after.status.container("hello")
    assert_matches("pod default/res-demo resized", [
        *_status_rows("res-demo", got, status, message, RESIZE),
        compare_value("res-demo", "hello", after.container("hello").cgroup.path, "cpu.max",
                      Expected("100000 100000", RESIZE), after.container("hello").cgroup.get("cpu.max")),
        compare_value("res-demo", "", after.pod_cgroup.path, "cpu.max", Expected("100000 100000", RESIZE),
                      after.pod_cgroup.get("cpu.max")),
        compare_value("res-demo", "hello", after.container("hello").cgroup.path, "restarts and process",
                      Expected(f"0 restarts, pids {before}", RESIZE),
                      f"{state.restart_count} restarts, pids {after.container('hello').pids}"),
    ])


@pytest.mark.parametrize(("case", "resources", "message"), [
    # After the article's first resize (limits.cpu 1), requests.cpu 1 would make res-demo Guaranteed.
    ("qos-change", {"requests": {"cpu": "1"}},
     'The Pod "res-demo" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change as a result '
     "of resizing"),
    ("infeasible", {"requests": {"cpu": "3"}, "limits": {"cpu": "4"}},
     'pods "res-demo" is forbidden: node didn\'t have enough allocatable resources: cpu, requested: 3000, '
     "allocatable: 2000"),
])
def test_resize_refused_with_the_articles_message(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                  node_facts: NodeFacts, case: str,
                                                  resources: dict[str, dict[str, str]], message: str) -> None:
    """The QoS class is immutable; a request that can never fit is refused at once; nothing changes on the node."""
    if case == "infeasible" and node_facts.cpu_capacity_milli != 2000:
        pytest.skip("the article's message names a 2-cpu node")
    demo = pod("requests-limits/res-demo.yaml")
    if case == "qos-change":
        demo = with_container(demo, "hello", limits={"cpu": "1", MEMORY: "128Mi"})
    deployed = deploy_pods(deploy, oracle, kubelet, [demo])
    handle = deployed.handle("res-demo")
    check_pod(handle, deployed.expected("res-demo"), QosClass.BURSTABLE)
    hello = demo.containers[0].resources
    requests = {**{k: str(q) for k, q in hello.requests.items()}, **resources.get("requests", {})}
    limits = {**{k: str(q) for k, q in hello.limits.items()}, **resources.get("limits", {})}
    status, oracle_message = _decision(oracle, kubelet, demo, with_container(demo, "hello", requests=requests,
                                                                             limits=limits))
    got = handle.resize(_patch("hello", resources))
    assert_matches(f"pod default/res-demo {case} resize", [
        compare_value("res-demo", "", "(resize)", "refusal message (article)", Expected(message, RESIZE),
                      got.message),
        *_status_rows("res-demo", got, status, oracle_message, RESIZE),
    ])
    check_pod(handle, deployed.expected("res-demo"), QosClass.BURSTABLE)


@pytest.mark.kep5359
@pytest.mark.needs_swap
@pytest.mark.min_profile("1.38")
def test_swap_limit_resize_up_at_once_and_down_deferred(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                       node_facts: NodeFacts) -> None:
    """limits.swap 32Mi → 64Mi applies at once; → 8Mi waits while memory.swap.current ≥ 8Mi, and completes
    once the hog releases its memory."""
    kubelet.swap("WorkloadControlledSwap")
    hold = ["sh", "-c", f'python3 "{PROGRAMS_DIR}/memhog.py" 48 & exec sleep infinity']
    workload = with_container(pod("kep-5359/limits-memory-lt-swap.yaml"), "app", command=hold,
                              limits={MEMORY: "32Mi", SWAP: "32Mi"})
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle = deployed.handle(workload.name)
    check_pod(handle, deployed.expected(workload.name))

    def swap_used() -> int:
        return handle.evidence().container("app").cgroup.number("memory.swap.current")

    wait_until("the hog's excess in swap", lambda: swap_used() >= 8 * MIB)
    page = node_facts.page_size
    rows: list[ComparedValue] = []
    # (from, to, memory.swap.max right after the request): up applies at once, down waits for usage.
    for before, after, right_after in (("32Mi", "64Mi", 64), ("64Mi", "8Mi", 64)):
        status, message = _decision(
            oracle, kubelet, with_container(workload, "app", limits={MEMORY: "32Mi", SWAP: before}),
            with_container(workload, "app", limits={MEMORY: "32Mi", SWAP: after}), {"app": Usage(None, swap_used())})
        got = handle.resize(_patch("app", {"limits": {SWAP: after}}))
        files = handle.evidence().container("app").cgroup
        rows += _status_rows(workload.name, got, status, message, f"{SWAP_RESIZE} ({before} → {after})")
        rows.append(compare_value(workload.name, "app", files.path, f"memory.swap.max right after {after}",
                                  Expected(str(page_floor(right_after * MIB, page)), SWAP_RESIZE),
                                  files.get("memory.swap.max")))
    result = handle.exec("app", ["pkill", "-f", "memhog.py"])
    assert result.rc == 0, f"could not stop the hog: {result.stderr}"
    wait_until("the deferred swap decrease applied", lambda: handle.evidence().container("app").cgroup.get(
        "memory.swap.max") == str(8 * MIB), timeout=60)
    final = handle.status().resize
    rows.append(compare_value(workload.name, "", "(resize)", "resize status once usage dropped",
                              Expected("Applied", SWAP_RESIZE), final.status))
    assert_matches(f"pod {workload.ref} limits.swap resize", rows)
