"""Swap under real memory pressure on a WorkloadControlledSwap node: used up to and never beyond its limit.

Source: kep-5359-swap-awareness "e2e tests" (explicit swap uses swap, omitted and "0" do not, a Guaranteed pod with
explicit swap does), "Relationship between limits.swap and limits.memory" (memory + swap before OOM), "Pod-Level
Swap Configuration" (a shared pod budget). Sizes are tens of MiB: the reference VM has 2 GiB.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from fixtures.node import Deploy
from nodeconf.manifest import MEMORY, SWAP, Pod
from nodeconf.nodes.base import ContainerState, Terminated
from nodeconf.semantics.expectation import Expected
from suites.toolkit.checks import check_admission, check_qos, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_measured, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog, pod, scaled, with_container
from suites.toolkit.pressure import MIB, Watched, watch_hogs
from suites.toolkit.tolerance import Band, never_above

pytestmark = [pytest.mark.kep5359, pytest.mark.needs_swap, pytest.mark.min_profile("1.38")]

WORKLOAD_CONTROLLED = "WorkloadControlledSwap"
E2E = "KEP-5359 e2e tests"
# What swap shows afterwards: the excess held in swap, no swap at all, or the swap limit reached.
HELD, NONE, REACHED = "held", "none", "reached"


@dataclass(frozen=True)
class Case:
    """A pod with memory hogs: how much each allocates and whether the KEP says it survives."""

    make: Callable[[], Pod]
    hogs: tuple[str, ...]
    mib: int
    survives: bool
    swap: str
    rule: str


def _hogging(p: Pod, hogs: tuple[str, ...], mib: int) -> Pod:
    """The pod with its hogs; OnFailure keeps the pod cgroup (and its counters) after an OOM kill, where Never
    lets the node remove it (the article: the kubelet removes it right after the container stops)."""
    for name in hogs:
        p = with_container(p, name, command=memhog(mib))
    return replace(p, restart_policy="OnFailure")


def _burstable(limits: dict[str, str]) -> Pod:
    return with_container(pod("requests-limits/qos-classes.yaml", "qos-burstable"), "app",
                          requests={MEMORY: "16Mi"}, limits=limits)


CASES = {
    # limits.memory < limits.swap: 32Mi + 128Mi hold a 64 MiB hog (KEP: "5Gi combined before OOM", scaled by 32).
    "explicit-swap-used": Case(lambda: scaled(pod("kep-5359/limits-memory-lt-swap.yaml"), 32), ("app",), 64, True, HELD,
                               f"{E2E}: explicit swap uses swap; memory + swap combined before OOM"),
    # Use Case 3 "Swap in Guaranteed pods": 1Gi + 512Mi scaled by 16 → 64Mi + 32Mi hold 76 MiB.
    "guaranteed-explicit-swap-used": Case(lambda: scaled(pod("kep-5359/guaranteed-with-swap.yaml"), 16), ("app",),
                                          76, True, HELD, f"{E2E}: a Guaranteed pod with explicit swap uses swap"),
    "swap-limit-reached": Case(lambda: _burstable({MEMORY: "32Mi", SWAP: "16Mi"}), ("app",), 96, False, REACHED,
                               "KEP-5359: memory.swap.max is the swap ceiling; beyond memory + swap the OOM killer"),
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
}


def _limit(text: str) -> int:
    return 2**63 if text == "max" else int(text)


def _outcome(state: ContainerState) -> str:
    """Running without a restart, else the first termination's reason and exit code."""
    ended = state.last_terminated or (Terminated(state.exit_code or 0, state.reason)
                                      if state.state == "terminated" else None)
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


def _rows(name: str, case: Case, watched: Watched) -> list[ComparedValue]:
    ev = watched.evidence
    rows = [compare_value(name, hog, ev.container(hog).cgroup.path, "outcome under pressure",
                          Expected("Running" if case.survives else "OOMKilled (137)", case.rule),
                          _outcome(watched.states[hog])) for hog in case.hogs]
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
    else:
        rows.append(compare_measured(name, "", pod_path, "memory.swap.events max", Band(
            1, 2**63, "swap reached its limit at least once"),
            ev.pod_cgroup.keyed("memory.swap.events").get("max", 0), case.rule))
    return rows


@pytest.mark.parametrize("case", list(CASES))
def test_swap_under_pressure(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, case: str) -> None:
    """The hog holds its memory with swap up to the limit, or is OOM-killed without exceeding it."""
    kubelet.swap(WORKLOAD_CONTROLLED)
    spec = CASES[case]
    workload = _hogging(spec.make(), spec.hogs, spec.mib)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_admission(handle, expected)
    check_qos(handle, expected, None)
    watched = watch_hogs(handle, spec.hogs, spec.mib)
    assert_matches(f"pod {workload.ref} under memory pressure", _rows(workload.name, spec, watched))
