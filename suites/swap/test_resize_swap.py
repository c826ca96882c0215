"""In-place resize on swap nodes: limits.swap up at once and down deferred; LimitedSwap's memory-request refusal.

Source: kep-5359-swap-awareness "In-Place Pod Resize" (an increase at once, a decrease deferred until
memory.swap.current is below it); SEMANTICS.md Swap (today's kubelet refuses memory-request resizes of swapping
containers on LimitedSwap unless the memory resize policy is RestartContainer).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY, SWAP
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import last_seen
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.resize import ContainerUsage
from nodeconf.workloads import PROGRAMS_DIR
from suites.toolkit.checks import check_pod, deploy_pods, wait_until
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import WORKLOAD_SWAP_ON, Kubelet, Oracle
from suites.toolkit.pods import pod, stop_program, with_container
from suites.toolkit.pressure import MIB
from suites.toolkit.resize import decision, patch, status_rows
from suites.toolkit.tolerance import page_floor

pytestmark = [pytest.mark.kep5359, pytest.mark.min_profile("1.38")]

pytestmark.append(pytest.mark.runs_alone("reconfigures the kubelet's swap behavior; the node's swap is shared"))

SWAP_RESIZE = "KEP-5359 In-Place Pod Resize: increase applied at once, decrease deferred until swap usage is below"
LIMITED_RESIZE = ("LimitedSwap: memory-request resize of a swapping container is Infeasible unless its memory "
                  "resizePolicy is RestartContainer (kubelet canResizePod, disallowResizeForSwappableContainers)")


@pytest.mark.needs_swap
def test_swap_limit_resize_up_at_once_and_down_deferred(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                       node_facts: NodeFacts) -> None:
    """limits.swap 32Mi → 64Mi applies at once; → 8Mi waits while memory.swap.current ≥ 8Mi, and completes
    once the hog releases its memory."""
    kubelet.swap("WorkloadControlledSwap", WORKLOAD_SWAP_ON)
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
        status, message = decision(
            oracle, kubelet, with_container(workload, "app", limits={MEMORY: "32Mi", SWAP: before}),
            with_container(workload, "app", limits={MEMORY: "32Mi", SWAP: after}),
            {"app": ContainerUsage(None, swap_used())})
        got = handle.resize(patch("app", {"limits": {SWAP: after}}))
        files = handle.evidence().container("app").cgroup
        rows += status_rows(workload.name, got, status, message, f"{SWAP_RESIZE} ({before} → {after})")
        rows.append(compare_value(workload.name, "app", files.path, f"memory.swap.max right after {after}",
                                  Expected(str(page_floor(right_after * MIB, page)), SWAP_RESIZE),
                                  files.get("memory.swap.max")))
    result = handle.exec("app", stop_program("memhog.py"))
    assert result.rc == 0, (f"could not stop the hog: exit {result.rc} (1: no memhog.py process was left) "
                            f"{result.stderr.strip()}; {last_seen(handle.status())}")
    wait_until("the deferred swap decrease applied", lambda: handle.evidence().container("app").cgroup.get(
        "memory.swap.max") == str(8 * MIB), timeout=60)
    final = handle.status().resize
    rows.append(compare_value(workload.name, "", "(resize)", "resize status once usage dropped",
                              Expected("Applied", SWAP_RESIZE), final.status))
    assert_matches(f"pod {workload.ref} limits.swap resize", rows)


@pytest.mark.parametrize("policy", ["NotRequired", "RestartContainer"])
def test_limited_swap_memory_request_resize(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, policy: str) -> None:
    """A Burstable container swapping on LimitedSwap: its memory request cannot change in place, only with
    RestartContainer; the node answers as the oracle decides."""
    kubelet.swap("LimitedSwap")
    burstable = pod("requests-limits/qos-classes.yaml", "qos-burstable")
    workload = replace(burstable, containers=tuple(replace(c, resize_policy={MEMORY: policy})
                                                   for c in burstable.containers))
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle = deployed.handle(workload.name)
    check_pod(handle, deployed.expected(workload.name), QosClass.BURSTABLE)
    status, message = decision(oracle, kubelet, workload, with_container(workload, "app", requests={MEMORY: "96Mi"}))
    got = handle.resize(patch("app", {"requests": {MEMORY: "96Mi"}}))
    rows = status_rows(workload.name, got, status, message, LIMITED_RESIZE)
    if policy == "NotRequired":
        rows.append(compare_value(workload.name, "", "(resize)", "refusal (KEP-5359)", Expected(
            "Infeasible: In-place resize of containers with swap is not supported.", LIMITED_RESIZE),
            f"{got.status}: {got.message}"))
    assert_matches(f"pod {workload.ref} memory resize on LimitedSwap ({policy})", rows)
