"""The kubelet's CPU manager: under cpuManagerPolicy `static`, the reserved CPUs, the shared pool, the exclusive CPUs
of Guaranteed containers with an integer cpu request, the cpuset every container runs on, and which CPUs a resize
keeps. Under `none` (the default) no container gets a cpuset and nothing here applies.

Source: kubernetes pkg/kubelet/cm/cpumanager (read at 0083b964bdb8dc7d25ca89d28ac5181d7ca5f586 and later):
policy_static.go (NewStaticPolicy, guaranteedCPUs, Allocate, allocateCPUs, updateCPUsToReuse, RemoveContainer),
cpu_manager.go (NewManager: numReservedCPUs; GetCPUAffinity: the assignment, else the default set),
cpu_assignment.go (takeByTopology), policy_options.go; cmd/kubelet/app/server.go (reservedSystemCPUs replaces the
reserved cpu); pkg/kubelet/allocation/allocation_manager.go canResizePod; test/e2e_node/pod_resize_test.go
(doPodResizeExtendTests: a decrease keeps the lowest CPUs of the old set).

Topology (nodeconf's choice): NodeFacts hold a CPU count, no topology, so nodeconf takes CPUs 0..n-1 on one socket,
one thread per core, as QEMU presents vCPUs without `-smp threads`. There takeByTopology (whole sockets, then whole
cores, then single CPUs, lowest ids first) takes the lowest free ids, and FullPCPUsOnly (a request must be a multiple
of CPUsPerCore, else SMTAlignmentError) holds for every request since CPUsPerCore is 1. A node with SMT or several
sockets would number differently; nodeconf does not model that.

No released kubelet reads a mustKeepCPUs container env var (the CPUs upstream's Extended Cases name in a decrease's
patch): only unmerged pull-request branches do (policy_static.go GetMustKeepCPUs; kubernetes#130232, closed, built on
#129719); SIG Node turned the env var down (#129719, 2025-03-11), KEP-5554 keeps checkpointed baseline CPUs instead.
A resize patch's env never reaches the kubelet either: the resize subresource keeps only each container's resources
and resizePolicy (pkg/registry/core/pod/strategy.go dropNonResizeUpdates), so such a patch is a plain decrease.

Not modelled, by choice: a resize between an integer and a fractional cpu request (the container leaves or joins the
shared pool), the admission failure of a container no free CPUs can hold (left on the shared pool; the fit check
refuses what exceeds allocatable), the reconcile loop's delay (the cpuset is expected at once), and the NUMA, socket
and uncore options (refused in the kubelet config when true).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import ceil

from nodeconf.kubelet_config import CPU_MANAGER_STATIC, KubeletConfig, parse_cpuset
from nodeconf.manifest import CPU, Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import cpu
from nodeconf.semantics.allocatable import reserved
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.profile import Profile
from nodeconf.semantics.qos import pod_qos

EXCLUSIVE_CPUS_GATE = "InPlacePodVerticalScalingExclusiveCPUs"
NO_QUOTA_GATE = "DisableCPUQuotaWithExclusiveCPUs"
ALLOCATE_RULE = ("cpumanager policy_static.go Allocate/guaranteedCPUs: a Guaranteed pod's container with an integer "
                 "cpu request gets that many CPUs of its own, lowest free ids first (takeByTopology); any other "
                 "container runs on the shared pool (GetCPUAffinity: the default set, all CPUs minus the exclusive)")
RESERVED_MESSAGE = ("[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater "
                    "than zero")
NO_QUOTA_RULE = ("DisableCPUQuotaWithExclusiveCPUs (kube_features.go, beta and on from 1.33): no CFS quota for a "
                 "container with exclusive CPUs, nor for the pod cgroup of a pod holding one")
STATIC_RESIZE_MESSAGE = 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'

# (pod uid, container name) → the CPUs the container holds exclusively (the state file's "entries").
Assignments = Mapping[tuple[str, str], frozenset[int]]


@dataclass(frozen=True)
class StaticPolicy:
    """The static policy on this node: every CPU id, the reserved ones (never exclusive), the FullPCPUsOnly option."""

    cpus: frozenset[int]
    reserved: frozenset[int]
    full_pcpus_only: bool = False


def static_policy(node: NodeFacts, config: KubeletConfig) -> StaticPolicy | None:
    """The static policy with its reserved CPUs, or None under `none` (or when the kubelet would not start).

    Reserved (cpu_manager.go NewManager, NewStaticPolicy): reservedSystemCPUs where set, else
    ceil(systemReserved.cpu + kubeReserved.cpu) CPUs taken by takeByTopology, here the lowest ids."""
    if config.cpu_manager_policy != CPU_MANAGER_STATIC or reservation_error(node, config) is not None:
        return None
    cpus = frozenset(range(node.cpu_capacity_milli // 1000))
    explicit = parse_cpuset(config.reserved_system_cpus)
    held = explicit or frozenset(sorted(cpus)[:_reserved_count(config)])
    return StaticPolicy(cpus, held, config.cpu_manager_policy_options.get("full-pcpus-only") == "true")


def _reserved_count(config: KubeletConfig) -> int:
    milli = reserved(config, CPU) * 1000
    return ceil(Fraction(milli) / 1000)


def reservation_error(node: NodeFacts, config: KubeletConfig) -> str | None:
    """Why the kubelet refuses to start the static policy, or None: nothing reserved (NewManager), or
    reservedSystemCPUs naming a CPU the node does not have (NewStaticPolicy: "unable to reserve")."""
    if config.cpu_manager_policy != CPU_MANAGER_STATIC:
        return None
    explicit = parse_cpuset(config.reserved_system_cpus)
    if not explicit and _reserved_count(config) == 0:
        return RESERVED_MESSAGE
    missing = sorted(explicit - frozenset(range(node.cpu_capacity_milli // 1000)))
    if missing:
        return f"[cpumanager] unable to reserve the required amount of CPUs: {format_cpuset(missing)} not on the node"
    return None


def exclusive_count(pod: Pod, container: Container, profile: Profile) -> int:
    """policy_static.go guaranteedCPUs: the integer cpu request of a Guaranteed pod's container, else 0."""
    if pod_qos(pod, profile) is not QosClass.GUARANTEED:
        return 0
    request = container.resources.request(CPU)
    if request is None or request.amount.denominator != 1:
        return 0
    return int(request.amount)


def _take(free: Iterable[int], count: int) -> frozenset[int]:
    """takeByTopology on one socket without SMT: the `count` lowest ids (fewer when not enough are free)."""
    return frozenset(sorted(free)[:count])


def _resized(old: frozenset[int], count: int, free: frozenset[int]) -> frozenset[int]:
    """A container's CPUs after a resize (InPlacePodVerticalScalingExclusiveCPUs): an increase keeps the old ones and
    adds the lowest free; a decrease keeps the lowest of the old (pod_resize_test.go doPodResizeExtendTests expects
    cpuset.New(old.List()[0]) after 2 → 1)."""
    if count <= len(old):
        return _take(old, count)
    return old | _take(free, count - len(old))


def assign(policy: StaticPolicy, pods: Sequence[Pod], profile: Profile,
           previous: Assignments | None = None) -> dict[tuple[str, str], frozenset[int]]:
    """The exclusive CPUs of every container of `pods` (admitted in this order), keeping what `previous` gave.

    A container of a pod no longer present gives its CPUs back (RemoveContainer). Containers are allocated init
    containers first, then app containers (the topology manager's admit order); a plain init container's CPUs may be
    taken again by the later containers of its pod (updateCPUsToReuse), a sidecar's may not (it keeps running).
    A container whose request no free CPUs can hold is left without (the kubelet refuses such a pod at admission
    with "not enough cpus available"; nodeconf's fit check refuses what exceeds allocatable and no more)."""
    previous = previous or {}
    live = {(p.uid, c.name) for p in pods for c in (*p.init_containers, *p.containers)}
    state = {key: cpus for key, cpus in previous.items() if key in live}
    for pod in pods:
        reusable: frozenset[int] = frozenset()
        for c in (*pod.init_containers, *pod.containers):
            count = exclusive_count(pod, c, profile)
            key = (pod.uid, c.name)
            if count == 0:
                state.pop(key, None)
                continue
            old = state.get(key)
            taken = frozenset().union(*state.values())  # its own CPUs too: `free` is what it may add
            free = (policy.cpus - policy.reserved - taken) | (reusable - (old or frozenset()))
            cpus = _resized(old, count, free) if old is not None else _take(free, count)
            if len(cpus) < count:
                state.pop(key, None)
                continue
            state[key] = cpus
            if c in pod.init_containers and not c.is_sidecar:
                reusable |= cpus
            else:
                reusable -= cpus
    return state


def shared_pool(policy: StaticPolicy, assignments: Assignments) -> frozenset[int]:
    """The default set: every CPU no container holds exclusively (the reserved ones included)."""
    return policy.cpus - frozenset().union(*assignments.values())


def container_cpus(policy: StaticPolicy, assignments: Assignments, pod: Pod, container: Container) -> frozenset[int]:
    """cpu_manager.go GetCPUAffinity under static: the container's own CPUs, else the shared pool."""
    return assignments.get((pod.uid, container.name)) or shared_pool(policy, assignments)


def has_exclusive(assignments: Assignments, pod: Pod, container: Container | None = None) -> bool:
    """Whether the container (or, without one, any container of the pod) holds CPUs of its own."""
    names = [container.name] if container is not None else [c.name for c in pod.all_containers]
    return any((pod.uid, n) in assignments for n in names)


def no_quota(profile: Profile) -> bool:
    """DisableCPUQuotaWithExclusiveCPUs (beta, on from 1.33; kube_features.go): no CFS quota on a container with
    exclusive CPUs, nor on the pod cgroup of a pod with one (calculateLinuxResources, ResourceConfigForPod)."""
    return profile.gate(NO_QUOTA_GATE)


@dataclass(frozen=True)
class CpuPlacement:
    """The CPU manager's choices for the admitted pods: the static policy (None under `none`) and its assignments."""

    policy: StaticPolicy | None
    assignments: Assignments

    @classmethod
    def of(cls, pods: Sequence[Pod], node: NodeFacts, config: KubeletConfig, profile: Profile,
           previous: Assignments | None = None) -> CpuPlacement:
        policy = static_policy(node, config)
        return cls(policy, assign(policy, pods, profile, previous) if policy is not None else {})

    def container_files(self, pod: Pod, container: Container, config: KubeletConfig,
                        profile: Profile) -> dict[str, Expected]:
        """Under static: the container's cpuset.cpus (the runtime writes LinuxContainerResources.CpusetCpus from
        GetCPUAffinity), and cpu.max without quota where it holds CPUs of its own and DisableCPUQuotaWithExclusiveCPUs
        is on (kuberuntime calculateLinuxResources: CpuQuota -1)."""
        if self.policy is None:
            return {}
        files = {"cpuset.cpus": Expected(format_cpuset(container_cpus(self.policy, self.assignments, pod, container)),
                                         ALLOCATE_RULE)}
        if config.cpu_cfs_quota and no_quota(profile) and has_exclusive(self.assignments, pod, container):
            files["cpu.max"] = Expected(cpu.cpu_max(0, cpu.quota_period(config, profile)), NO_QUOTA_RULE)
        return files

    def pod_files(self, pod: Pod, config: KubeletConfig, profile: Profile) -> dict[str, Expected]:
        """The pod cgroup's cpu.max without quota when any of its containers holds CPUs of its own (helpers_linux.go
        ResourceConfigForPod with DisableCPUQuotaWithExclusiveCPUs); the kubelet writes no cpuset on the pod."""
        if self.policy is None or not config.cpu_cfs_quota or not no_quota(profile):
            return {}
        if not has_exclusive(self.assignments, pod):
            return {}
        return {"cpu.max": Expected(cpu.cpu_max(0, cpu.quota_period(config, profile)), NO_QUOTA_RULE)}


def resize_infeasible(current: Pod, desired: Pod, config: KubeletConfig, profile: Profile) -> str | None:
    """allocation_manager.go canResizePod: a Guaranteed pod whose cpu request moves on any resizable container
    (app containers and sidecars; guaranteedPodResourceResizeRequired) is Infeasible under the static policy unless
    InPlacePodVerticalScalingExclusiveCPUs is on."""
    if config.cpu_manager_policy != CPU_MANAGER_STATIC or profile.gate(EXCLUSIVE_CPUS_GATE):
        return None
    if pod_qos(desired, profile) is not QosClass.GUARANTEED:
        return None
    old = {c.name: c.resources.request(CPU) for c in current.all_containers}
    for c in (*desired.init_containers, *desired.containers):
        if (c in desired.containers or c.is_sidecar) and c.name in old and old[c.name] != c.resources.request(CPU):
            return STATIC_RESIZE_MESSAGE
    return None


def format_cpuset(cpus: Iterable[int]) -> str:
    """A CPU list as the kernel and k8s.io/utils/cpuset print it: ascending, runs as "a-b", joined by commas."""
    ids = sorted(set(cpus))
    runs: list[str] = []
    start = prev = -2
    for cpu_id in [*ids, -1]:
        if cpu_id == prev + 1:
            prev = cpu_id
            continue
        if start >= 0:
            runs.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = cpu_id
    return ",".join(runs)
