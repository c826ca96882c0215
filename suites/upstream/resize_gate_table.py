"""The resize tests of upstream's node e2e test/e2e_node/pod_resize_test.go (doPodResizeTests), as data: each test's
containers with their resources and resizePolicy, its patch, and the restart counts it expects; and the four settings
of the two kubelet feature gates every test runs under.

Source: kubernetes test/e2e_node/pod_resize_test.go at 0c6efdb150939a1fd61aa24accfd93db06316dca (doPodResizeTests
`tests`, the policiesGeneralAvailability "none" entry: `doPodResizeTests(policy, AllocatedStatus, ExclusiveCPUs)` for
the four combinations). Upstream lists four tests twice with the same data; each is here once. "... with an extended
resource" is left out: it patches the Node object's capacity through an API server (tools/upstream_cases.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from nodeconf.manifest import Pod
from suites.upstream.shared import Res, container, make_pod

FILE = "test/e2e_node/pod_resize_test.go"
ALLOCATED_STATUS = "InPlacePodVerticalScalingAllocatedStatus"
EXCLUSIVE_CPUS = "InPlacePodVerticalScalingExclusiveCPUs"

# CPUPolicy / MemPolicy: NotRequired (noRestart) or RestartContainer (doRestart); none set on some tests.
NO_RESTART = MappingProxyType({"cpu": "NotRequired", "memory": "NotRequired"})
CPU_RESTART = MappingProxyType({"cpu": "RestartContainer", "memory": "NotRequired"})
MEM_RESTART = MappingProxyType({"cpu": "NotRequired", "memory": "RestartContainer"})
BOTH_RESTART = MappingProxyType({"cpu": "RestartContainer", "memory": "RestartContainer"})
NO_POLICY: Mapping[str, str] = MappingProxyType({})


def g(cpu: str, mem: str) -> Res:
    """Guaranteed resources: requests == limits."""
    return Res(cpu, cpu, mem, mem)


@dataclass(frozen=True)
class Ctr:
    """One container of a test: ResizableContainerInfo's name, resources and CPUPolicy / MemPolicy."""

    name: str
    res: Res
    policy: Mapping[str, str] = field(default_factory=dict)
    sidecar: bool = False  # a restartable init container (restartPolicy Always)


@dataclass(frozen=True)
class ResizeCase:
    """One upstream resize test of one pod: `id` names nodeconf's check, `name` is upstream's It text (before the
    gates, for pod_resize_test.go's)."""

    id: str
    name: str
    containers: tuple[Ctr, ...]
    patch: Mapping[str, Res]  # per container, the requests and limits the patch string sets ("" = left out)
    restarts: Mapping[str, int]  # upstream's expected RestartCount after the resize, per container (0 when absent)
    pod_res: Res | None = None  # pod-level spec.resources as created (pod_level_resources_resize.go)
    pod_patch: Res | None = None  # and as the patch sets them
    rollback: bool = True  # whether the test rolls the resize back (doRollback)
    # per container, the env the patch also names; the resize subresource drops it (strategy.go dropNonResizeUpdates).
    # Not in the repr, which names a check in docs/upstream-coverage.md
    patch_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict, repr=False)

    def resized(self) -> tuple[Ctr, ...]:
        """The containers after the patch: a strategic merge patch sets the keys it names, keeps the others; of a
        container only its resources (and resizePolicy) pass the resize subresource, so `patch_env` changes nothing."""
        out = []
        for c in self.containers:
            p = self.patch.get(c.name, Res())
            out.append(replace(c, res=Res(p.cpu_req or c.res.cpu_req, p.cpu_lim or c.res.cpu_lim,
                                          p.mem_req or c.res.mem_req, p.mem_lim or c.res.mem_lim)))
        return tuple(out)

    def pod(self, name: str, resized: bool = False) -> Pod:
        """The test's pod as created or as resized (MakePodWithResizableContainers: busybox, one container per
        entry; pod-level resources where the test sets them)."""
        containers = self.resized() if resized else self.containers
        pod_res = (self.pod_patch or self.pod_res) if resized else self.pod_res
        return make_pod(name, [container(c.name, c.res, c.policy) for c in containers if not c.sidecar], pod_res,
                        [{**container(c.name, c.res, c.policy), "restartPolicy": "Always"}
                         for c in containers if c.sidecar])


@dataclass(frozen=True)
class Gates:
    """One doPodResizeTests call's gate values."""

    allocated_status: bool
    exclusive_cpus: bool

    @property
    def feature_gates(self) -> dict[str, bool]:
        return {ALLOCATED_STATUS: self.allocated_status, EXCLUSIVE_CPUS: self.exclusive_cpus}

    @property
    def id(self) -> str:
        return f"allocated={str(self.allocated_status).lower()},exclusive={str(self.exclusive_cpus).lower()}"

    def case_text(self, case: ResizeCase, policy: CpuPolicy | None = None,
                  describe: str = "Pod InPlace Resize Container") -> str:
        """The Ginkgo text of `case` under these gates and CPU manager policy (the policy "none" title is empty)."""
        title = policy.title if policy is not None else ""
        return (f"{describe} / {case.name}{title} ({ALLOCATED_STATUS}="
                f"{str(self.allocated_status).lower()}, {EXCLUSIVE_CPUS}={str(self.exclusive_cpus).lower()})")


@dataclass(frozen=True)
class CpuPolicy:
    """One cpuManagerPolicyConfig of the static policy (pod_resize_test.go policiesGeneralAvailability and
    policiesBeta): its title and options; cpuManagerPolicyKubeletConfig reserves CPU 0 (reservedSystemCPUs) for both,
    since both pass options."""

    id: str
    title: str
    full_pcpus_only: bool

    @property
    def options(self) -> dict[str, str]:
        """The four options upstream sets, only full-pcpus-only ever "true"."""
        return {"full-pcpus-only": str(self.full_pcpus_only).lower(), "distribute-cpus-across-numa": "false",
                "align-by-socket": "false", "distribute-cpus-across-cores": "false"}


STATIC_POLICIES = (CpuPolicy("static", ", alongside CPU Manager Static Policy with no options", False),
                   CpuPolicy("static-full-pcpus", ", alongside CPU Manager Static Policy with FullPCPUsOnlyOption",
                             True))
RESERVED_SYSTEM_CPUS = "0"

# In upstream's order of the doPodResizeTests calls.
GATE_SETTINGS = (Gates(False, False), Gates(True, False), Gates(False, True), Gates(True, True))

_B = Res("200m", "400m", "250Mi", "500Mi")  # the common Burstable container of the one-container tests
_BURSTABLE = "Burstable QoS pod, one container with cpu & memory requests + limits - "
_G1 = "Guaranteed QoS pod, one container - "
_B3 = "Burstable QoS pod, three containers - "
_G3 = "Guaranteed QoS pod, three containers (c1, c2, c3) - "


def _one(id_: str, name: str, res: Res, patch: Res, policy: Mapping[str, str] = NO_POLICY,
         restarts: int = 0) -> ResizeCase:
    return ResizeCase(id_, name, (Ctr("c1", res, policy),), {"c1": patch}, {"c1": restarts} if restarts else {})


_THREE_BURSTABLE = (Res("100m", "200m", "100Mi", "200Mi"), Res("200m", "300m", "200Mi", "300Mi"),
                    Res("300m", "400m", "300Mi", "400Mi"))

CASES: tuple[ResizeCase, ...] = (
    _one("g-increase-cpu-mem", _G1 + "increase CPU & memory", g("100m", "200Mi"), g("200m", "400Mi"), NO_RESTART),
    _one("g-decrease-cpu-mem", _G1 + "decrease CPU & memory", g("300m", "500Mi"), g("100m", "250Mi"), NO_RESTART),
    _one("g-increase-cpu-decrease-mem", _G1 + "increase CPU & decrease memory", g("100m", "200Mi"),
         g("200m", "100Mi")),
    _one("g-decrease-cpu-increase-mem", _G1 + "decrease CPU & increase memory", g("100m", "200Mi"),
         g("50m", "300Mi")),
    ResizeCase("g3-cpu-mem", _G3 + "increase: CPU (c1,c3), memory (c2) ; decrease: CPU (c2), memory (c1,c3)",
             (Ctr("c1", g("100m", "100Mi"), NO_RESTART), Ctr("c2", g("200m", "200Mi"), NO_RESTART),
              Ctr("c3", g("300m", "300Mi"), NO_RESTART)),
             {"c1": g("140m", "50Mi"), "c2": g("150m", "240Mi"), "c3": g("340m", "250Mi")}, {}),
    _one("b-decrease-mem-req", _BURSTABLE + "decrease memory requests only", _B, Res(mem_req="200Mi")),
    _one("b-decrease-mem-lim", _BURSTABLE + "decrease memory limits only", _B, Res(mem_lim="400Mi")),
    _one("b-increase-mem-req", _BURSTABLE + "increase memory requests only", _B, Res(mem_req="300Mi")),
    _one("b-increase-mem-lim", _BURSTABLE + "increase memory limits only", _B, Res(mem_lim="600Mi")),
    _one("b-decrease-cpu-req", _BURSTABLE + "decrease CPU requests only", _B, Res(cpu_req="100m")),
    _one("b-decrease-cpu-lim", _BURSTABLE + "decrease CPU limits only", _B, Res(cpu_lim="300m")),
    _one("b-increase-cpu-req", _BURSTABLE + "increase CPU requests only", Res("100m", "200m", "250Mi", "500Mi"),
         Res(cpu_req="150m")),
    _one("b-increase-cpu-lim", _BURSTABLE + "increase CPU limits only", _B, Res(cpu_lim="500m")),
    _one("b-decrease-cpu", _BURSTABLE + "decrease CPU requests and limits", _B, Res("100m", "200m")),
    _one("b-increase-cpu", _BURSTABLE + "increase CPU requests and limits", Res("100m", "200m", "250Mi", "500Mi"),
         Res("200m", "400m")),
    _one("b-decrease-cpu-req-increase-cpu-lim", _BURSTABLE + "decrease CPU requests and increase CPU limits", _B,
         Res("100m", "500m")),
    _one("b-increase-cpu-req-decrease-cpu-lim", _BURSTABLE + "increase CPU requests and decrease CPU limits",
         Res("100m", "400m", "250Mi", "500Mi"), Res("200m", "300m")),
    _one("b-decrease-mem", _BURSTABLE + "decrease memory requests and limits", Res("100m", "200m", "200Mi", "400Mi"),
         Res(mem_req="100Mi", mem_lim="300Mi")),
    _one("b-increase-mem", _BURSTABLE + "increase memory requests and limits", Res("100m", "200m", "200Mi", "400Mi"),
         Res(mem_req="300Mi", mem_lim="500Mi")),
    _one("b-decrease-mem-req-increase-mem-lim", _BURSTABLE + "decrease memory requests and increase memory limits",
         Res("100m", "200m", "200Mi", "400Mi"), Res(mem_req="100Mi", mem_lim="500Mi")),
    _one("b-increase-mem-req-decrease-mem-lim", _BURSTABLE + "increase memory requests and decrease memory limits",
         Res("100m", "200m", "200Mi", "400Mi"), Res(mem_req="300Mi", mem_lim="300Mi")),
    _one("b-decrease-cpu-req-increase-mem-lim", _BURSTABLE + "decrease CPU requests and increase memory limits",
         Res("200m", "400m", "200Mi", "400Mi"), Res(cpu_req="100m", mem_lim="500Mi")),
    _one("b-increase-cpu-req-decrease-mem-lim", _BURSTABLE + "increase CPU requests and decrease memory limits",
         Res("100m", "400m", "200Mi", "500Mi"), Res(cpu_req="200m", mem_lim="400Mi")),
    _one("b-decrease-mem-req-increase-cpu-lim", _BURSTABLE + "decrease memory requests and increase CPU limits",
         Res("100m", "200m", "200Mi", "400Mi"), Res(mem_req="100Mi", cpu_lim="300m")),
    _one("b-increase-mem-req-decrease-cpu-lim", _BURSTABLE + "increase memory requests and decrease CPU limits",
         Res("200m", "400m", "200Mi", "400Mi"), Res(mem_req="300Mi", cpu_lim="300m")),
    _one("b-requests-only-decrease-mem", "Burstable QoS pod, one container with cpu & memory requests - decrease "
         "memory request", Res(cpu_req="200m", mem_req="500Mi"), Res(mem_req="400Mi")),
    _one("g-increase-cpu-no-restart-mem-restart", _G1 + "increase CPU (NotRequired) & memory (RestartContainer)",
         g("100m", "200Mi"), g("200m", "400Mi"), MEM_RESTART, restarts=1),
    _one("b-decrease-cpu-restart-mem-no-restart", "Burstable QoS pod, one container - decrease CPU "
         "(RestartContainer) & memory (NotRequired)", Res("100m", "200m", "200Mi", "400Mi"),
         Res("50m", "100m", "100Mi", "200Mi"), CPU_RESTART, restarts=1),
    ResizeCase("b3-no-net-change", _B3 + "increase c1 resources, no change for c2, decrease c3 resources (no net "
             "change for pod)",
             (Ctr("c1", _THREE_BURSTABLE[0], NO_RESTART), Ctr("c2", _THREE_BURSTABLE[1], MEM_RESTART),
              Ctr("c3", _THREE_BURSTABLE[2], NO_RESTART)),
             {"c1": Res("150m", "250m", "150Mi", "250Mi"), "c3": Res("250m", "350m", "250Mi", "350Mi")}, {}),
    ResizeCase("b3-net-increase", _B3 + "decrease c1 resources, increase c2 resources, no change for c3 (net "
             "increase for pod)",
             (Ctr("c1", _THREE_BURSTABLE[0], NO_RESTART), Ctr("c2", _THREE_BURSTABLE[1], MEM_RESTART),
              Ctr("c3", _THREE_BURSTABLE[2], NO_RESTART)),
             {"c1": Res("50m", "150m", "50Mi", "150Mi"), "c2": Res("350m", "450m", "350Mi", "450Mi")}, {"c2": 1}),
    ResizeCase("b3-net-decrease", _B3 + "no change for c1, increase c2 resources, decrease c3 (net decrease for pod)",
             (Ctr("c1", _THREE_BURSTABLE[0], BOTH_RESTART), Ctr("c2", _THREE_BURSTABLE[1], CPU_RESTART),
              Ctr("c3", _THREE_BURSTABLE[2], MEM_RESTART)),
             {"c2": Res("250m", "350m", "250Mi", "350Mi"), "c3": Res("100m", "200m", "100Mi", "200Mi")},
             {"c2": 1, "c3": 1}),
    _one("g-increase-cpu-mem-integer", _G1 + "increase CPU & memory, with integer CPU requests", g("2", "200Mi"),
         g("4", "400Mi"), NO_RESTART),
    ResizeCase("b3-integer-net-decrease", _B3 + "no change for c1, decrease c2 resources, decrease c3 (net decrease "
             "for pod)",
             (Ctr("c1", _THREE_BURSTABLE[0], BOTH_RESTART), Ctr("c2", Res("4", "4", "200Mi", "300Mi"), CPU_RESTART),
              Ctr("c3", _THREE_BURSTABLE[2], MEM_RESTART)),
             {"c2": Res("1", "1", "150Mi", "250Mi"), "c3": Res("100m", "200m", "100Mi", "200Mi")},
             {"c2": 1, "c3": 1}),
    ResizeCase("b3-integer-net-increase", _B3 + "no change for c1, increase c2 resources, decrease c3 (net increase "
             "for pod)",
             (Ctr("c1", _THREE_BURSTABLE[0], BOTH_RESTART), Ctr("c2", Res("2", "2", "200Mi", "300Mi"), CPU_RESTART),
              Ctr("c3", _THREE_BURSTABLE[2], MEM_RESTART)),
             {"c2": Res("4", "4", "250Mi", "350Mi"), "c3": Res("100m", "200m", "100Mi", "200Mi")},
             {"c2": 1, "c3": 1}),
    _one("g-decrease-cpu-mem-integer", _G1 + "decrease CPU & memory, with integer CPU requests", g("4", "500Mi"),
         g("2", "250Mi"), NO_RESTART),
    _one("g-increase-cpu-decrease-mem-integer", _G1 + "increase CPU & decrease memory, with integer CPU requests",
         g("2", "200Mi"), g("4", "100Mi")),
    _one("g-increase-cpu-no-restart-mem-restart-integer", _G1 + "increase CPU (NotRequired) & memory "
         "(RestartContainer), with integer CPU requests", g("2", "200Mi"), g("4", "400Mi"), MEM_RESTART, restarts=1),
    ResizeCase("g3-cpu-mem-and", _G3 + "increase CPU (c1,c3) and memory (c2) ; decrease CPU (c2) and memory (c1,c3)",
             (Ctr("c1", g("100m", "100Mi"), NO_RESTART), Ctr("c2", g("200m", "200Mi"), NO_RESTART),
              Ctr("c3", g("300m", "300Mi"), NO_RESTART)),
             {"c1": g("140m", "50Mi"), "c2": g("150m", "240Mi"), "c3": g("340m", "250Mi")}, {}),
    ResizeCase("g3-cpu-mem-integer", _G3 + "increase CPU (c1,c3) and memory (c2) ; decrease CPU (c2) and memory "
             "(c1,c3), with integer CPU requests",
             (Ctr("c1", g("2", "100Mi"), NO_RESTART), Ctr("c2", g("4", "200Mi"), NO_RESTART),
              Ctr("c3", g("2", "300Mi"), NO_RESTART)),
             {"c1": g("4", "50Mi"), "c2": g("2", "240Mi"), "c3": g("4", "250Mi")}, {}),
)

EXTENDED_DESCRIBE = "Pod InPlace Resize Container Extended Cases"
_MUST_KEEP = "mustKeepCPUs"


def _must_keep(id_: str, name: str, res: Res, patch: Res, cpus: str) -> ResizeCase:
    """A decrease whose patch also names the container env var mustKeepCPUs: the resize subresource drops the env,
    so the kubelet sees a plain decrease (semantics/cpu_manager.py), whatever CPUs it names."""
    return replace(_one(id_, name, res, patch, NO_RESTART), patch_env={"c1": {_MUST_KEEP: cpus}})


# doPodResizeExtendTests, run with both gates on, its tests per static policy (testsWithFalseFullCPUs,
# testsWithTrueFullCPUs). Left out: doMultiPodResizeTests' two-pod test (tools/upstream_cases.yaml).
EXTENDED_CASES: Mapping[str, tuple[ResizeCase, ...]] = MappingProxyType({
    "static": (
        _one("x-increase-cpu-mem", "1 Guaranteed QoS pod, one container - increase CPU & memory, FullPCPUsOnlyOption "
             "= false", g("1", "200Mi"), g("2", "400Mi"), NO_RESTART),
        ResizeCase("x-two-increase-cpu-mem", "1 Guaranteed QoS pod, two containers - increase CPU & memory, "
                   "FullPCPUsOnlyOption = false",
                   (Ctr("c1", g("1", "200Mi"), NO_RESTART), Ctr("c2", g("1", "200Mi"), NO_RESTART)),
                   {"c1": g("2", "400Mi"), "c2": g("2", "400Mi")}, {}),
        _one("x-decrease-cpu-mem", "1 Guaranteed QoS pod, one container - decrease CPU & memory, FullPCPUsOnlyOption "
             "= false", g("2", "400Mi"), g("1", "200Mi"), NO_RESTART),
        _must_keep("x-decrease-cpu-mem-must-keep", "1 Guaranteed QoS pod, one container - decrease CPU & memory with "
                   "mustKeepCPUs, FullPCPUsOnlyOption = false", g("2", "200Mi"), g("1", "400Mi"), "11"),
    ),
    "static-full-pcpus": (
        _one("x-decrease-cpu-mem", "1 Guaranteed QoS pod, one container - decrease CPU & memory, FullPCPUsOnlyOption "
             "= true", g("4", "400Mi"), g("2", "200Mi"), NO_RESTART),
        _must_keep("x-decrease-cpu-must-keep", "1 Guaranteed QoS pod, one container - decrease CPU & memory with "
                   "correct mustKeepCPU, FullPCPUsOnlyOption = true", g("4", "200Mi"), Res("2", "2"), "2,12"),
        _must_keep("x-decrease-cpu-wrong-must-keep", "1 Guaranteed QoS pod, one container - decrease CPU with wrong "
                   "mustKeepCPU, FullPCPUsOnlyOption = ture", g("4", "200Mi"), Res("2", "2"), "1,2"),
    ),
})
