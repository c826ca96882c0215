"""Swap under real memory pressure on WorkloadControlledSwap and LimitedSwap nodes: used up to and never beyond
its limit.

Source: kep-5359-swap-awareness "e2e tests" (explicit swap uses swap, omitted and "0" do not, a Guaranteed pod with
explicit swap does), "Relationship between limits.swap and limits.memory" (memory + swap before OOM), "Pod-Level
Swap Configuration" (a shared pod budget); KEP-2400 LimitedSwap (a Burstable container's swap is its memory request's
share of the node's swap, none when request == limit) and upstream test/e2e_node/swap_test.go "with swap stress".
Sizes are tens of MiB: the reference VM has 2 GiB and 1 GiB of swap (LimitedSwap gives about half the request).

Guarantees relied on (mm/memcontrol.c, Documentation/admin-guide/cgroup-v2.rst): memory.current never exceeds
memory.max and memory.swap.current never exceeds memory.swap.max (page_counter charges fail instead); a write to
memory.reclaim swaps anonymous pages out while the cgroup's swap has room (mem_cgroup_get_nr_swap_pages > 0);
charges that stay below memory.max never invoke the OOM killer; a task whose memory cannot fit in memory + swap is
OOM-killed. NOT guaranteed, so never asserted: that the kernel's own reclaim at memory.max fills swap before the
OOM killer runs (swap writeback can stall: seen under load), and a memory.swap.events `max` count (raised only when
a swap-out attempt fails; reclaim stops trying once no swap room is left). Hogs that should swap therefore push
their pages out with memory.reclaim themselves (workloads/programs/memhog.py --reclaim, kernel >= 5.19).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY, SWAP, SYSTEM_NODE_CRITICAL, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import ContainerState, NodeError, PodEvidence, PodHandle, Terminated
from nodeconf.quantity import Quantity
from nodeconf.semantics.expectation import Expected
from suites.toolkit.checks import POLL_S, check_admission, check_qos, deploy_pods
from suites.toolkit.compare import (
    ComparedValue,
    assert_matches,
    compare_measured,
    compare_node_cgroups,
    compare_pod,
    compare_reason,
    compare_value,
)
from suites.toolkit.kubelet import WORKLOAD_SWAP_ON, Kubelet, Oracle
from suites.toolkit.pods import memhog, pod, scaled, with_container
from suites.toolkit.pressure import MIB, Watched, watch_hogs
from suites.toolkit.tolerance import Band, never_above

pytestmark = [pytest.mark.kep5359, pytest.mark.needs_swap, pytest.mark.min_profile("1.38"),
              pytest.mark.needs_kernel("5.19")]  # memory.reclaim (memhog --reclaim)

pytestmark.append(pytest.mark.runs_alone("memory pressure on the node (hogs) and the node's swap"))

WORKLOAD_CONTROLLED, LIMITED = "WorkloadControlledSwap", "LimitedSwap"
LIMITED_RULE = "KEP-2400 LimitedSwap: a Burstable container swaps up to request/memoryCapacity*swapCapacity"
# LimitedSwap behaviour holds from the oldest profile; the module's KEP-5359 cases need 1.38.
LIMITED_MARKS = (pytest.mark.kep2400, pytest.mark.min_profile("1.34"))
E2E = "KEP-5359 e2e tests"
# What swap shows afterwards: the excess held in swap, no swap at all, or the swap limit reached.
HELD, NONE, REACHED = "held", "none", "reached"
# Reclaim stops swapping when the swap counter has no room left; 1 MiB (256 pages) allows for pages it skipped.
FULL_SLACK = MIB


@dataclass(frozen=True)
class Case:
    """A pod with memory hogs: how much each allocates and whether the KEP says it survives."""

    make: Callable[[], Pod]
    hogs: tuple[str, ...]
    mib: int
    survives: bool
    swap: str
    rule: str
    mode: str = WORKLOAD_CONTROLLED
    marks: tuple[pytest.MarkDecorator, ...] = ()


def _hogging(p: Pod, hogs: tuple[str, ...], mib: int, *, reclaim: bool, wait_for: str | None = None) -> Pod:
    """The pod with its hogs; OnFailure keeps the pod cgroup (and its counters) after an OOM kill, where Never
    lets the node remove it (the article: the kubelet removes it right after the container stops)."""
    for name in hogs:
        p = with_container(p, name, command=memhog(mib, reclaim=reclaim, wait_for=wait_for))
    return replace(p, restart_policy="OnFailure")


def _burstable(limits: dict[str, str], request: str = "16Mi") -> Pod:
    return with_container(pod("requests-limits/qos-classes.yaml", "qos-burstable"), "app",
                          requests={MEMORY: request}, limits=limits)


CASES = {
    # limits.memory < limits.swap: 32Mi + 128Mi hold a 64 MiB hog (KEP: "5Gi combined before OOM", scaled by 32).
    "explicit-swap-used": Case(lambda: scaled(pod("kep-5359/limits-memory-lt-swap.yaml"), 32), ("app",), 64, True, HELD,
                               f"{E2E}: explicit swap uses swap; memory + swap combined before OOM"),
    # Use Case 3 "Swap in Guaranteed pods": 1Gi + 512Mi scaled by 16 → 64Mi + 32Mi hold 76 MiB.
    "guaranteed-explicit-swap-used": Case(lambda: scaled(pod("kep-5359/guaranteed-with-swap.yaml"), 16), ("app",),
                                          76, True, HELD, f"{E2E}: a Guaranteed pod with explicit swap uses swap"),
    # Use Case 1: swap "0" (the seed's 2Gi limit scaled to 32Mi).
    "swap-zero": Case(lambda: with_container(pod("kep-5359/use-case-1-swap-disabled.yaml"), "app",
                                             limits={MEMORY: "32Mi", SWAP: "0"}), ("app",), 64, False, NONE,
                      f'{E2E}: swap "0" does not use swap'),
    "swap-omitted": Case(lambda: _burstable({MEMORY: "32Mi"}), ("app",), 64, False, NONE,
                         f"{E2E}: no limit on a WorkloadControlledSwap node does not use swap"),
    # Use Case 4 scaled by 64: pod memory 128Mi + swap 32Mi shared by the two helpers without their own limit.
    "pod-budget-shared": Case(lambda: scaled(pod("kep-5359/use-case-4-pod-level-swap-mixed.yaml"), 64),
                              ("c3-helper-a", "c4-helper-b"), 68, True, HELD,
                              "KEP-5359 Use Case 4: containers without limits.swap share the pod's swap budget"),
    # LimitedSwap, Burstable request 64Mi < limit 80Mi: about 32 MiB of swap (half the request on the reference VM)
    # hold an 88 MiB hog. Relies on memory.swap.max being a hard limit (page_counter charges fail beyond it) and on
    # memory.reclaim pushing the hog's pages out deterministically while swap has room.
    "limitedswap-burstable-used": Case(
        lambda: _burstable({MEMORY: "80Mi"}, "64Mi"), ("app",), 88, True, HELD,
        f"{LIMITED_RULE}; above its memory limit it holds the excess in swap", LIMITED,
        (*LIMITED_MARKS, pytest.mark.upstream_e2e(
            file="test/e2e_node/swap_test.go",
            case="Swap / with swap stress / LimitedSwap / should be able to use more memory than memory limits"))),
}


def _limit(text: str) -> int:
    return 2**63 if text == "max" else int(text)


def _ended(state: ContainerState) -> Terminated | None:
    """The first termination: the last one before a restart, else the current state's."""
    return state.last_terminated or (Terminated(state.exit_code or 0, state.reason)
                                     if state.state == "terminated" else None)


def _outcome(state: ContainerState) -> str:
    """Running without a restart, else the first termination's reason and exit code."""
    ended = _ended(state)
    if ended is None:
        return "Running" if state.running else state.state
    return f"{ended.reason} ({ended.exit_code})"


def _ceiling(watched: Watched, hogs: tuple[str, ...], file: str) -> int:
    """The limit that binds the hogs: one hog's own cgroup or the pod's; several hogs share the pod's."""
    ev = watched.evidence
    values = [_limit(ev.pod_cgroup[file])]
    if len(hogs) == 1:
        values.append(_limit(ev.container(hogs[0]).cgroup[file]))
    return min(values)


def _termination(state: ContainerState) -> tuple[str | None, int | None]:
    ended = _ended(state)
    return (ended.reason, ended.exit_code) if ended is not None else (None, None)


def _rows(name: str, case: Case, watched: Watched, node: NodeFacts) -> list[ComparedValue]:
    ev = watched.evidence
    oom_kills = ev.pod_cgroup.keyed("memory.events").get("oom_kill", 0)
    rows = [compare_reason(name, hog, ev.container(hog).cgroup.path, "outcome under pressure",
                           Expected("Running" if case.survives else "OOMKilled (137)", case.rule),
                           _outcome(watched.states[hog]), _termination(watched.states[hog]), node, oom_kills)
            for hog in case.hogs]
    rows += [compare_measured(name, "", cgroup.path, "peak sampled memory.swap.current",
                              never_above(_limit(cgroup["memory.swap.max"])), watched.peak_swap.get(cgroup.path, 0),
                              f"{case.rule}; memory.swap.max {cgroup['memory.swap.max']} is never exceeded")
             for cgroup in (ev.pod_cgroup, *(ev.container(h).cgroup for h in case.hogs))
             if "memory.swap.max" in cgroup]
    pod_path = ev.pod_cgroup.path
    if case.swap == HELD:
        held = len(case.hogs) * case.mib * MIB
        swapped = sum(ev.container(h).cgroup.number("memory.swap.current") for h in case.hogs)
        band = Band(held - _ceiling(watched, case.hogs, "memory.max"), _ceiling(watched, case.hogs, "memory.swap.max"),
                    "what the hogs hold beyond memory.max is in swap, within the swap limit")
        rows.append(compare_measured(name, "", pod_path, "memory.swap.current of the hogs", band, swapped, case.rule))
    elif case.swap == NONE:
        rows += [compare_measured(name, hog, ev.container(hog).cgroup.path, "peak sampled memory.swap.current",
                                  Band(0, 0, "no swap at all"),
                                  watched.peak_swap.get(ev.container(hog).cgroup.path, 0), case.rule)
                 for hog in case.hogs]
    return rows


@pytest.mark.parametrize("case", [pytest.param(name, marks=spec.marks, id=name) for name, spec in CASES.items()])
def test_swap_under_pressure(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, case: str) -> None:
    """The hog holds its memory with swap up to the limit, or is OOM-killed without exceeding it.

    A hog that swaps pushes its pages out with memory.reclaim before each MiB (never at memory.max, so never
    racing the OOM killer); a hog without swap is OOM-killed because its memory cannot fit below memory.max.
    """
    spec = CASES[case]
    kubelet.swap(spec.mode, WORKLOAD_SWAP_ON if spec.mode == WORKLOAD_CONTROLLED else None)
    workload = _hogging(spec.make(), spec.hogs, spec.mib, reclaim=spec.swap == HELD)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_admission(handle, expected)
    check_qos(handle, expected, None)
    watched = watch_hogs(handle, spec.hogs, spec.mib)
    assert_matches(f"pod {workload.ref} under memory pressure", _rows(workload.name, spec, watched, oracle.facts))


REACHED_RULE = "KEP-5359: memory.swap.max is the swap ceiling; beyond memory + swap the OOM killer"


def _readable(evidence: PodEvidence, hog: str) -> bool:
    """True while the hog's cgroup was read (a container that ended may have taken its cgroup with it)."""
    return {"memory.swap.max", "memory.swap.current"} <= evidence.container(hog).cgroup.raw.keys()


def _wait_swap_full(handle: PodHandle, hog: str, timeout: float = 120.0) -> Watched:
    """Poll until the hog's memory.swap.current is within FULL_SLACK of its binding memory.swap.max (the hog then
    waits for its trigger file, so the value is at rest), or the hog ended (the check then fails on its outcome)."""
    deadline = time.monotonic() + timeout
    peaks: dict[str, int] = {}
    while True:
        evidence = handle.evidence()
        cgroups = (evidence.pod_cgroup, evidence.container(hog).cgroup)
        for files in cgroups:
            if "memory.swap.current" in files:
                peaks[files.path] = max(peaks.get(files.path, 0), files.number("memory.swap.current"))
        watched = Watched(evidence, {hog: evidence.status.container(hog)}, peaks)
        state = watched.states[hog]
        if state.state == "terminated" or state.last_terminated is not None or not _readable(evidence, hog):
            return watched
        ceiling = _ceiling(watched, (hog,), "memory.swap.max")
        swapped = evidence.container(hog).cgroup.number("memory.swap.current")
        if swapped >= ceiling - FULL_SLACK:
            return watched
        if time.monotonic() > deadline:
            raise NodeError(f"pod {handle.pod.ref}: swap of {hog} at {swapped} bytes, not within {FULL_SLACK} of "
                            f"{ceiling} after {timeout:g} s of memory.reclaim")
        time.sleep(POLL_S)


# (node mode, the hog's memory request, its limits): WorkloadControlledSwap with limits.swap 16Mi; LimitedSwap with
# no swap limit, so a memory request of 16Mi (< limit 32Mi) gives about 8 MiB, the proportional share, and a request
# equal to the limit gives none (GetContainerSwapBehavior): its hog is OOM-killed without a byte in swap. All rely on
# memory.swap.max being a hard limit (page_counter charges fail beyond it; 0 refuses every swap-out) and on
# memory.reclaim forcing reclaim deterministically while swap has room.
# The critical case is upstream swap_test.go's "with a critical pod" under real pressure: the proportional pod of
# priority class system-node-critical gets no swap (GetContainerSwapBehavior: types.IsCriticalPod), so its hog is
# OOM-killed without a byte in swap, like the request == limit one.
FILL_CASES = [
    pytest.param(WORKLOAD_CONTROLLED, "16Mi", {MEMORY: "32Mi", SWAP: "16Mi"}, "", id="explicit-swap"),
    pytest.param(LIMITED, "16Mi", {MEMORY: "32Mi"}, "", id="limitedswap-proportional", marks=LIMITED_MARKS),
    pytest.param(LIMITED, "32Mi", {MEMORY: "32Mi"}, "", id="limitedswap-request-eq-limit", marks=LIMITED_MARKS),
    pytest.param(LIMITED, "16Mi", {MEMORY: "32Mi"}, SYSTEM_NODE_CRITICAL, id="limitedswap-critical", marks=(
        *LIMITED_MARKS, pytest.mark.upstream_e2e(file="test/e2e_node/swap_test.go",
                                                 case="Swap / with a critical pod - should avoid swap"))),
]


@pytest.mark.parametrize(("mode", "memory_request", "limits", "priority_class"), FILL_CASES)
def test_swap_fills_to_its_limit_then_oom_kills(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, mode: str,
                                                memory_request: str, limits: dict[str, str],
                                                priority_class: str) -> None:
    """swap-limit-reached, made deterministic: the hog (limits memory 32Mi and swap 16Mi, or on LimitedSwap its
    request's share, none when request == limit or the pod is critical) stays below memory.max while memory.reclaim
    pushes its pages out until memory.swap.current sits at memory.swap.max (the oracle's), then, released by a
    trigger file, grows to 96 MiB, beyond memory + swap, and is OOM-killed; swap never exceeds its limit."""
    kubelet.swap(mode, WORKLOAD_SWAP_ON if mode == WORKLOAD_CONTROLLED else None)
    trigger = f"/tmp/nodeconf-swap-full-{uuid.uuid4().hex}"
    hog = replace(_burstable(limits, memory_request), priority_class_name=priority_class)
    workload = _hogging(hog, ("app",), 96, reclaim=True, wait_for=trigger)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_admission(handle, expected)
    check_qos(handle, expected, None)
    handle.wait_running()  # with no swap room the hog is at once at rest: its cgroup and trigger need it started
    full = _wait_swap_full(handle, "app")
    rest, at_rest = full.evidence.container("app").cgroup, "memory.swap.current with swap full, at rest"
    # The limit it fills is the oracle's (limits.swap, or LimitedSwap's share of the request): a node writing another
    # memory.swap.max would make "filled to its limit and no further" prove nothing.
    rows = [row for row in compare_pod(expected, full.evidence)
            if row.container == "app" and row.file == "memory.swap.max"]
    if _readable(full.evidence, "app"):
        ceiling = _ceiling(full, ("app",), "memory.swap.max")
        rows += [compare_measured(workload.name, "app", rest.path, at_rest,
                                  Band(ceiling - FULL_SLACK, ceiling,
                                       f"at memory.swap.max {ceiling}, less at most {FULL_SLACK} reclaim skipped"),
                                  rest.number("memory.swap.current"), REACHED_RULE)]
    else:  # the hog ended before its swap was full: the outcome row below says how
        rows += [compare_value(workload.name, "app", rest.path, at_rest,
                               Expected("at memory.swap.max, the hog waiting for its trigger", REACHED_RULE), None)]
    if full.states["app"].running:
        handle.exec("app", ["python3", "-c", f"open({trigger!r}, 'x').close()"])
    watched = watch_hogs(handle, ("app",), 96)
    peaks = {path: max(full.peak_swap.get(path, 0), watched.peak_swap.get(path, 0))
             for path in {*full.peak_swap, *watched.peak_swap}}
    rows += _rows(workload.name, Case(lambda: workload, ("app",), 96, False, REACHED, REACHED_RULE),
                  Watched(watched.evidence, watched.states, peaks), oracle.facts)
    assert_matches(f"pod {workload.ref} filling swap to its limit", rows)


# upstream "with swap stress / LimitedSwap / should be able to use more than the node memory capacity", scaled: the
# pods' share of the node stands for the node (kubeReserved takes all but ALLOCATABLE_MIB, so kubepods memory.max is
# ALLOCATABLE_MIB, all of it allocatable: evictionHard memory.available 0% sets no threshold, so none is copied to
# allocatableMemory.available, which a hog held 4 MiB below kubepods' memory.max would meet), and a Burstable hog
# without a memory limit, request 96Mi (its LimitedSwap share about 48 MiB on the reference VM), holds BEYOND_MIB, more
# than all of it: with the interpreter, about 32 MiB go to swap. Crossing the VM's 2 GiB itself would take a GiB of
# swap writes under emulation.
ALLOCATABLE_MIB = 128
BEYOND_MIB = 144
BEYOND_RULE = (f"{LIMITED_RULE}; without a memory limit it holds more than the pods' memory (kubepods memory.max, "
               "capacity − kubeReserved), the excess in swap within its share")


@pytest.mark.kep2400
@pytest.mark.min_profile("1.34")
@pytest.mark.upstream_e2e(
    file="test/e2e_node/swap_test.go",
    case="Swap / with swap stress / LimitedSwap / should be able to use more than the node memory capacity")
def test_limitedswap_holds_more_than_the_pods_memory(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """The hog (no memory limit, request 96Mi) holds BEYOND_MIB under a kubepods memory.max of ALLOCATABLE_MIB:
    it runs on, what lies beyond kubepods' memory.max is in its swap, and swap stays within its memory.swap.max
    (the oracle's share).

    Relies on what the other LimitedSwap checks do (memory.swap.max a hard limit; memory.reclaim swapping while swap
    has room; charges below every ancestor's memory.max never invoking the OOM killer), here with kubepods as the
    tightest ancestor: memhog --reclaim keeps its charges 4 MiB below it by writing its own memory.reclaim."""
    reserved = Quantity.of(oracle.facts.memory_capacity - (ALLOCATABLE_MIB << 20))
    kubelet.use(replace(kubelet.base, swap_behavior=LIMITED, kube_reserved={MEMORY: reserved},
                        enforce_node_allocatable=("pods",), eviction_hard={"memory.available": "0%"}))
    workload = _hogging(_burstable({}, "96Mi"), ("app",), BEYOND_MIB, reclaim=True)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_admission(handle, expected)
    check_qos(handle, expected, None)
    watched = watch_hogs(handle, ("app",), BEYOND_MIB)
    app = watched.evidence.container("app").cgroup
    cgroups = kubelet.node.node_cgroups()
    rows = [row for row in compare_pod(expected, watched.evidence) if row.container == "app" and row.file in (
        "memory.max", "memory.swap.max")]
    rows += compare_node_cgroups(deployed.expectation.cgroups, cgroups)
    rows += [compare_value(workload.name, "app", app.path, "outcome under pressure", Expected("Running", BEYOND_RULE),
                           _outcome(watched.states["app"])),
             compare_measured(workload.name, "app", app.path, "memory.swap.current of the hog", Band(
                 (BEYOND_MIB - ALLOCATABLE_MIB) * MIB, _limit(app["memory.swap.max"]),
                 f"what the hog holds beyond kubepods' {ALLOCATABLE_MIB}Mi is in swap, within its swap limit"),
                 app.number("memory.swap.current"), BEYOND_RULE),
             compare_measured(workload.name, "app", app.path, "peak sampled memory.swap.current",
                              never_above(_limit(app["memory.swap.max"])), watched.peak_swap.get(app.path, 0),
                              f"{BEYOND_RULE}; memory.swap.max is never exceeded")]
    assert_matches(f"pod {workload.ref} beyond the pods' memory", rows)
