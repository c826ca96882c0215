"""The in-place resize matrix of upstream's pod resize e2e: its constants, table entries and restart rule.

Source: upstream test/e2e/common/node/pod_resize.go (originalCPU … increasedMemLimit, doGuaranteedPodResizeTests,
doBurstablePodResizeTests: "resizing" entries × resize-policy entries, expectRestart) and
test/e2e/common/node/pod_level_resources_resize.go (doGuaranteedPodLevelResizeTests, pod-level entries).
"""

from __future__ import annotations

from collections.abc import Mapping

from suites.upstream.resize_gate_table import (
    BOTH_RESTART,
    CPU_RESTART,
    MEM_RESTART,
    NO_RESTART,
    Ctr,
    ResizeCase,
    g,
)
from suites.upstream.shared import POLICIES, Res

# pod_resize.go constants.
CPU, CPU_LIM, CPU_DOWN, CPU_DOWN_LIM, CPU_UP, CPU_UP_LIM = "20m", "30m", "15m", "25m", "25m", "35m"
MEM, MEM_LIM, MEM_DOWN, MEM_DOWN_LIM, MEM_UP, MEM_UP_LIM = "35Mi", "45Mi", "30Mi", "40Mi", "40Mi", "50Mi"

GUARANTEED_ORIGINAL = Res(CPU, CPU, MEM, MEM)
# doGuaranteedPodResizeTests "resizing" entries: (desired cpu, desired memory), requests == limits.
GUARANTEED: Mapping[str, Res] = {
    "cpu": Res(CPU_UP, CPU_UP, MEM, MEM),
    "mem": Res(CPU, CPU, MEM_UP, MEM_UP),
    "cpu-mem-same-direction": Res(CPU_UP, CPU_UP, MEM_UP, MEM_UP),
    "cpu-mem-opposite-directions": Res(CPU_UP, CPU_UP, MEM_DOWN, MEM_DOWN),
}

BURSTABLE_ORIGINAL = Res(CPU, CPU_LIM, MEM, MEM_LIM)
# doBurstablePodResizeTests "resizing" entries (resourceRequestsLimits).
BURSTABLE: Mapping[str, Res] = {
    "cpu-requests": Res(CPU_UP, CPU_LIM, MEM, MEM_LIM),
    "cpu-limits": Res(CPU, CPU_UP_LIM, MEM, MEM_LIM),
    "mem-requests": Res(CPU, CPU_LIM, MEM_UP, MEM_LIM),
    "mem-limits": Res(CPU, CPU_LIM, MEM, MEM_UP_LIM),
    "all-resources-same-direction": Res(CPU_UP, CPU_UP_LIM, MEM_UP, MEM_UP_LIM),
    "cpu-mem-opposite-directions": Res(CPU_UP, CPU_UP_LIM, MEM_DOWN, MEM_DOWN_LIM),
    "requests-limits-opposite-directions": Res(CPU_DOWN, CPU_UP_LIM, MEM_UP, MEM_DOWN_LIM),
}

# pod_level_resources_resize.go "PLR guaranteed qos" pod-level entries on a pod of four containers (one per
# resizePolicy). Pod-level values sit above the four containers' sum (4 × 20m, 4 × 35Mi) so every container's own
# limit fits under them; (container resources or None, pod-level before, pod-level after).
PLR_WITH_CONTAINERS = Res(CPU, CPU, MEM, MEM)
PLR_ORIGINAL = Res("100m", "100m", "160Mi", "160Mi")
POD_LEVEL: Mapping[str, tuple[Res | None, Res]] = {
    "pod-level-cpu": (PLR_WITH_CONTAINERS, Res("120m", "120m", "160Mi", "160Mi")),
    "pod-level-mem": (PLR_WITH_CONTAINERS, Res("100m", "100m", "200Mi", "200Mi")),
    "pod-level-cpu-mem-same-direction": (PLR_WITH_CONTAINERS, Res("120m", "120m", "200Mi", "200Mi")),
    "pod-level-cpu-mem-opposite-directions": (PLR_WITH_CONTAINERS, Res("120m", "120m", "150Mi", "150Mi")),
    "only-pod-level-cpu": (None, Res("120m", "120m", "160Mi", "160Mi")),
    "only-pod-level-mem": (None, Res("100m", "100m", "200Mi", "200Mi")),
}


# The upstream texts of nodeconf's table ids: resizePolicy entries, "resizing" entries of each table.
UPSTREAM_POLICIES = {"no-restart": "no restart", "cpu-restart": "cpu restart", "mem-restart": "mem restart",
                     "cpu-mem-restart": "cpu & mem restart"}
UPSTREAM_GUARANTEED = {"cpu": "cpu", "mem": "mem", "cpu-mem-same-direction": "cpu & mem in the same direction",
                       "cpu-mem-opposite-directions": "cpu & mem in opposite directions"}
UPSTREAM_BURSTABLE = {"cpu-requests": "cpu requests", "cpu-limits": "cpu limits", "mem-requests": "mem requests",
                      "mem-limits": "mem limits", "all-resources-same-direction": "all resources in the same direction",
                      "cpu-mem-opposite-directions": "cpu & mem in opposite directions",
                      "requests-limits-opposite-directions": "requests & limits in opposite directions"}
UPSTREAM_POD_LEVEL = {"pod-level-cpu": "pod-level cpu", "pod-level-mem": "pod-level mem",
                      "pod-level-cpu-mem-same-direction": "pod-level cpu & mem in the same direction",
                      "pod-level-cpu-mem-opposite-directions": "pod-level cpu & mem in opposite directions",
                      "only-pod-level-cpu": "only pod-level cpu", "only-pod-level-mem": "only pod-level mem"}
RESIZE_TEST = "test/e2e/common/node/pod_resize.go"
PLR_RESIZE_TEST = "test/e2e/common/node/pod_level_resources_resize.go"


def upstream_cases(table: str, entries: Mapping[str, str]) -> list[str]:
    """The upstream case texts of a DescribeTableSubtree: each resizePolicy entry × each "resizing" entry."""
    return [f"{table} / {UPSTREAM_POLICIES[p]} / resizing / {entries[e]}" for p in POLICIES for e in entries]


GUARANTEED_CASES = upstream_cases(
    "Pod InPlace Resize Container / guaranteed qos - 1 container with resize policy", UPSTREAM_GUARANTEED)
BURSTABLE_CASES = upstream_cases(
    "Pod InPlace Resize Container / burstable pods - 1 container with all requests & limits set and resize policy",
    UPSTREAM_BURSTABLE)
POD_LEVEL_CASES = upstream_cases(
    "PLR Pod InPlace Resize / PLR guaranteed qos - 1 container with resize policy", UPSTREAM_POD_LEVEL)
# pod_level_resources_resize.go's container-level entries leave the pod-level resources out (desiredPodCPU == "" →
# no spec.resources): the same pods, resizes and constants as pod_resize.go's tables.
PLR_GUARANTEED_CASES = upstream_cases(
    "PLR Pod InPlace Resize / PLR guaranteed qos - 1 container with resize policy", UPSTREAM_GUARANTEED)
PLR_BURSTABLE_CASES = upstream_cases(
    "PLR Pod InPlace Resize / PLR pod-level burstable pods - 1 container with all requests & limits set and resize "
    "policy", UPSTREAM_BURSTABLE)


def expect_restart(policy: str, before: Res, after: Res) -> int:
    """upstream expectRestart: 1 when the container's policy restarts on a resource whose values changed."""
    restart = POLICIES[policy]
    cpu = (before.cpu_req, before.cpu_lim) != (after.cpu_req, after.cpu_lim)
    mem = (before.mem_req, before.mem_lim) != (after.mem_req, after.mem_lim)
    return int((cpu and "cpu" in restart) or (mem and "memory" in restart))


def expect_pod_level_restart(policy: str, own: Res | None, before: Res, after: Res) -> int:
    """pod_level_resources_resize.go expectRestart: a pod-level change restarts a container only where it has no
    value of its own for that resource (desiredCtrCPU == "" and the pod-level cpu changed), per its policy."""
    if own is not None:
        return 0
    return expect_restart(policy, before, after)


def _plus(value: str, step: int) -> str:
    """upstream offsetCPU / offsetMemory: `value` ("NNm" or "NNMi") raised by 2 units per index step."""
    unit = "Mi" if value.endswith("Mi") else "m"
    return f"{int(value.removesuffix(unit)) + 2 * step}{unit}"


def _offset(i: int, cpu: str, mem: str) -> Res:
    """Container i's Guaranteed values (offsetCPU(i, cpu), offsetMemory(i, mem))."""
    return g(_plus(cpu, i), _plus(mem, i))


def _pod_level(res: Res) -> Res:
    """doBurstablePodLevelResizeTests' pod-level resources: each value offset by index 30 (+60m, +60Mi)."""
    return Res(_plus(res.cpu_req, 30), _plus(res.cpu_lim, 30), _plus(res.mem_req, 30), _plus(res.mem_lim, 30))


_THREE = tuple(Ctr(f"c{i + 1}", _offset(i, CPU, MEM)) for i in range(3))  # makeGuaranteedContainers(3), no policy
_MULTI = "guaranteed pods with multiple containers"
# "guaranteed pods with multiple containers": the same three Its in both files (pod-level resources left out).
MULTI_CONTAINER = (
    ResizeCase("net-increase", "3 containers - increase cpu & mem on c1, c2, decrease cpu & mem on c3 - net increase "
               "[MinimumKubeletVersion:1.34]", _THREE,
               {"c1": _offset(0, CPU_UP, MEM_UP), "c2": _offset(1, CPU_UP, MEM_UP),
                "c3": _offset(2, CPU_DOWN, MEM_DOWN)}, {}),
    ResizeCase("net-decrease", "3 containers - increase cpu & mem on c1, decrease cpu & mem on c2, c3 - net decrease "
               "[MinimumKubeletVersion:1.34]", _THREE,
               {"c1": _offset(0, CPU_UP, MEM_UP), "c2": _offset(1, CPU_DOWN, MEM_DOWN),
                "c3": _offset(2, CPU_DOWN, MEM_DOWN)}, {}),
    ResizeCase("various", "3 containers - increase: CPU (c1,c3), memory (c2, c3) ; decrease: CPU (c2) "
               "[MinimumKubeletVersion:1.34]", _THREE,
               {"c1": _offset(0, CPU_UP, MEM), "c2": _offset(1, CPU_DOWN, MEM_UP), "c3": _offset(2, CPU_UP, MEM_UP)},
               {}),
)
MULTI_CONTAINER_CASES = {
    RESIZE_TEST: f"Pod InPlace Resize Container / {_MULTI}",
    PLR_RESIZE_TEST: f"PLR Pod InPlace Resize / pod-level {_MULTI}",
}
# "burstable pods - extended": the same two Its in both files. Five containers (the It says six) gaining limits or
# requests, not rolled back; cpu 2m/10m to 1m/5m, rolled back.
BURSTABLE_EXTENDED = (
    ResizeCase("gaining-limits-and-requests", "6 containers - various operations performed (including adding limits "
               "and requests) [MinimumKubeletVersion:1.34]",
               (Ctr("c1", Res(cpu_req=CPU)), Ctr("c2", Res(mem_req=MEM)), Ctr("c3", Res(cpu_req=CPU, mem_req=MEM)),
                Ctr("c4", Res(cpu_req=CPU)), Ctr("c5", Res(mem_req=MEM))),
               {"c1": Res(cpu_req=CPU_UP, cpu_lim=CPU_UP_LIM), "c2": Res(mem_req=MEM_DOWN, mem_lim=MEM_UP_LIM),
                "c3": Res(cpu_req=CPU, mem_req=MEM_DOWN), "c4": Res(cpu_req=CPU_DOWN, mem_req=MEM),
                "c5": Res(cpu_req=CPU, mem_req=MEM_UP)}, {}, rollback=False),
    ResizeCase("equivalents", "resize with equivalents [MinimumKubeletVersion:1.34]",
               (Ctr("c1", Res(cpu_req="2m", cpu_lim="10m")),), {"c1": Res("1m", "5m")}, {}),
)
BURSTABLE_EXTENDED_CASES = {
    RESIZE_TEST: "Pod InPlace Resize Container / burstable pods - extended",
    PLR_RESIZE_TEST: "PLR Pod InPlace Resize / burstable pods - extended",
}

# pod_level_resources_resize.go "PLR pod-level burstable pods" pod-level entries: the container keeps its values,
# the pod-level resources (offset 30 from the entry's values) move; one pod of one container per policy.
PLR_BURSTABLE_POD_LEVEL: Mapping[str, Res] = {
    "pod-level cpu requests": Res(CPU_UP, CPU_LIM, MEM, MEM_LIM),
    "pod-level cpu limits": Res(CPU, CPU_UP_LIM, MEM, MEM_LIM),
    "pod-level mem requests": Res(CPU, CPU_LIM, MEM_UP, MEM_LIM),
    "pod-level mem limits": Res(CPU, CPU_LIM, MEM, MEM_UP_LIM),
    "pod-level all resources in the same direction": Res(CPU_UP, CPU_UP_LIM, MEM_UP, MEM_UP_LIM),
    "pod-level cpu & mem in opposite directions": Res(CPU_UP, CPU_UP_LIM, MEM_DOWN, MEM_DOWN_LIM),
    "pod-level requests & limits in opposite directions": Res(CPU_DOWN, CPU_UP_LIM, MEM_UP, MEM_DOWN_LIM),
}
# makeBurstableContainers sets both resizePolicy entries; the subtree's entries, by nodeconf's policy ids.
_EXPLICIT_POLICIES = {"no-restart": NO_RESTART, "cpu-restart": CPU_RESTART, "mem-restart": MEM_RESTART,
                      "cpu-mem-restart": BOTH_RESTART}
_PLR_BURSTABLE = ("PLR Pod InPlace Resize / PLR pod-level burstable pods - 1 container with all requests & limits "
                  "set and resize policy")
PLR_BURSTABLE_POD_LEVEL_CASES = tuple(
    ResizeCase(f"plr-{entry.removeprefix('pod-level ').replace(' & ', '-').replace(' ', '-')}-{policy}",
               f"{_PLR_BURSTABLE} / {UPSTREAM_POLICIES[policy]} / resizing / {entry}",
               (Ctr("c1", BURSTABLE_ORIGINAL, _EXPLICIT_POLICIES[policy]),), {}, {},
               _pod_level(BURSTABLE_ORIGINAL), _pod_level(desired))
    for policy in POLICIES for entry, desired in PLR_BURSTABLE_POD_LEVEL.items())

# pod_level_resources_resize.go "burstable pods - pod-level resources": pod-level cpu moved with equivalents, or
# set where the pod had less (limits added, requests and limits added, beside a container without resources).
_PLR_POD_LEVEL = "PLR Pod InPlace Resize / burstable pods - pod-level resources"
_SMALL = (Ctr("c1", Res(cpu_req="2m", cpu_lim="10m")),)
PLR_POD_LEVEL_ADDED_CASES = (
    ResizeCase("plr-equivalents", f"{_PLR_POD_LEVEL} / pod-level resize with equivalents", _SMALL, {}, {},
               Res(cpu_req="4m", cpu_lim="20m"), Res(cpu_req="5m", cpu_lim="25m")),
    ResizeCase("plr-limits-add", f"{_PLR_POD_LEVEL} / pod-level resize with limits add", _SMALL, {}, {},
               Res(cpu_req="4m", cpu_lim="10m"), Res(cpu_req="5m", cpu_lim="25m"), rollback=False),
    ResizeCase("plr-requests-limits-add", f"{_PLR_POD_LEVEL} / pod-level resize with requests and limits add",
               _SMALL, {}, {}, None, Res(cpu_req="5m", cpu_lim="25m"), rollback=False),
    ResizeCase("plr-no-container-resources", f"{_PLR_POD_LEVEL} / pod-level resize with no container requests and "
               "limits", (Ctr("c1", Res()),), {}, {}, Res(cpu_req="4m", mem_req="10m"),
               Res(cpu_req="5m", mem_req="25m"), rollback=False),
)

# pod_level_resources_resize.go "PLR guaranteed qos" pod-level entries under the "+ resize initContainers" policies:
# c1 and its sidecar c1-init (makeGuaranteedContainers with an init container) hold originalCPU / originalMem, or
# nothing for the "only pod-level" entries; the pod-level values (offset 30) move; a container without values of its
# own restarts per its policy when the pod-level value of that resource changes (expectRestart).
# entry → (container cpu and memory kept, desired pod-level cpu and memory before the offset)
PLR_SIDECAR_POD_LEVEL: Mapping[str, tuple[bool, str, str]] = {
    "pod-level cpu": (True, CPU_UP, MEM),
    "pod-level mem": (True, CPU, _plus(MEM_UP, 10)),
    "only pod-level cpu": (False, CPU_UP, MEM),
    "only pod-level mem": (False, CPU, MEM_UP),
    "pod-level cpu & mem in the same direction": (True, CPU_UP, MEM_UP),
    "pod-level cpu & mem in opposite directions": (True, CPU_UP, MEM_DOWN),
}
_WITH_SIDECAR = {"no-restart": ("no restart + resize initContainers", NO_RESTART),
                 "cpu-mem-restart": ("cpu & mem restart + resize initContainers", BOTH_RESTART)}


def _sidecar_case(policy: str, entry: str) -> ResizeCase:
    own, pod_cpu, pod_mem = PLR_SIDECAR_POD_LEVEL[entry]
    text, resize_policy = _WITH_SIDECAR[policy]
    res = g(CPU, MEM) if own else Res()
    restart = int(not own and resize_policy is BOTH_RESTART and (pod_cpu != CPU or pod_mem != MEM))
    return ResizeCase(
        f"plr-sidecar-{entry.replace(' & ', '-').replace(' ', '-')}-{policy}",
        f"PLR Pod InPlace Resize / PLR guaranteed qos - 1 container with resize policy / {text} / resizing / {entry}",
        (Ctr("c1", res, resize_policy), Ctr("c1-init", res, resize_policy, sidecar=True)), {},
        {"c1": restart, "c1-init": restart} if restart else {},
        g(_plus(CPU, 30), _plus(MEM, 30)), g(_plus(pod_cpu, 30), _plus(pod_mem, 30)))


PLR_SIDECAR_POD_LEVEL_CASES = tuple(_sidecar_case(p, e) for p in _WITH_SIDECAR for e in PLR_SIDECAR_POD_LEVEL)
