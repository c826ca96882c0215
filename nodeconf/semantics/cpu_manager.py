"""The kubelet's CPU manager: under cpuManagerPolicy `static`, the reserved CPUs, the shared pool, the exclusive CPUs
of Guaranteed containers with an integer cpu request, the cpuset every container runs on, and what a resize does to
them. Under `none` (the default) no container gets a cpuset and nothing here applies.

Source: kubernetes pkg/kubelet/cm/cpumanager (read at 0083b964bdb8dc7d25ca89d28ac5181d7ca5f586 and later):
policy_static.go (NewStaticPolicy, guaranteedCPUs, Allocate, allocateCPUs, updateCPUsToReuse, RemoveContainer),
cpu_manager.go (NewManager: numReservedCPUs; GetCPUAffinity: the assignment, else the default set),
cpu_assignment.go (takeByTopology), policy_options.go; cmd/kubelet/app/server.go (reservedSystemCPUs replaces the
reserved cpu); pkg/kubelet/allocation handlers.go podResizesAdmitHandler.Admit (earlier allocation_manager.go
canResizePod); pkg/kubelet/kubelet.go NewMainKubelet (the allocation manager's admit handlers: the resize handler,
then the container manager's); pkg/kubelet/cm/topologymanager scope_none.go, scope.go admitPolicyNone.

Topology (nodeconf's choice): NodeFacts hold a CPU count, no topology, so nodeconf takes CPUs 0..n-1 on one socket,
one thread per core, as QEMU presents vCPUs without `-smp threads`. There takeByTopology (whole sockets, then whole
cores, then single CPUs, lowest ids first) takes the lowest free ids, and FullPCPUsOnly (a request must be a multiple
of CPUsPerCore, else SMTAlignmentError) holds for every request since CPUsPerCore is 1. A node with SMT or several
sockets would number differently; nodeconf does not model that.

In-place resize of a Guaranteed pod's cpu under static (every profile, 1.34 to 1.38). Decided from the kubelet
source (SEMANTICS.md precedence 2), against upstream's node e2e at the commit tools/upstream_cases.yaml pins:
- InPlacePodVerticalScalingExclusiveCPUs (kube_features.go: alpha, off, since 1.32; still so in the newest
  kube_features.go read) off: Infeasible, "Resize is infeasible for Guaranteed Pods alongside CPU Manager policy
  "static"", when any resizable container's cpu request moves (handlers.go podResizesAdmitHandler.Admit,
  guaranteedPodResourceResizeRequired; the same text and test in allocation_manager.go canResizePod before).
- On: the resize is admitted and every container keeps the CPUs it holds, whatever its new request. The resize's
  admission runs the admit handlers, the topology manager's among them (policy none: admitPolicyNone calls the CPU
  manager's Allocate per container); policy_static.go Allocate returns at once for a request that is not an integer
  (the state keeps the CPUs) and skips a container already in the state ("Static policy: container already present
  in state, skipping"). Only a container that held none and now asks for an integer count gets CPUs, the lowest free.
  Every merged policy_static.go read (from 0083b964 through the master copy with PodLevelResourceManagers, and the
  copy openshift/origin vendors) has no other path; a resize branch (GetPromisedCPUSet, "attempting
  InPlacePodVerticalScaling") exists only in unmerged pull requests (kubernetes#129719, #130232; #140629 open,
  KEP-5554 aiming at alpha in 1.38, enhancements#6330 open). kubernetes#140031 reports it of v1.34.5. The release
  branches themselves could not be read (the repository snapshot exceeds the fetch limit); **open**: re-pin the 1.38
  profile once #140629 merges. Upstream's test (pod_resize_test.go at the pinned commit, from that pull-request
  line) expects the count to follow the resize, an increase adding CPUs and a decrease keeping the lowest.

No released kubelet reads a mustKeepCPUs container env var either (the CPUs upstream's Extended Cases name in a
decrease's patch): only the same unmerged branches do (policy_static.go GetMustKeepCPUs); SIG Node turned the env var
down (#129719, 2025-03-11), KEP-5554 keeps checkpointed baseline CPUs instead. A resize patch's env never reaches the
kubelet: the resize subresource keeps only each container's resources and resizePolicy (pkg/registry/core/pod/
strategy.go dropNonResizeUpdates).

Not modelled, by choice: the admission failure of a container no free CPUs can hold (left on the shared pool; the fit
check refuses what exceeds allocatable), FullPCPUsOnly's check of the free physical CPUs, which Allocate makes before
it looks at the state (a resize of a container holding CPUs fails it when fewer CPUs than it asks for are free; the
1.34 canResizePod read makes any admit failure Deferred with the handler's message), the reconcile loop's delay (the
cpuset is expected at once), and the NUMA, socket and uncore options (refused in the kubelet config when true).
**Open**: a container holding CPUs runs without quota, so the runtime reports no cpu limit and kubelet_pods.go
convertToAPIContainerStatuses keeps the one it reported before: after a cpu resize its status.resources shows the old
limit (kubernetes#129719, 2026-06-22) until kubernetes#140249 (the limit follows the request; merged after 2026-07-21,
milestone v1.37, the first release carrying it not pinned); nodeconf's status checks expect the new limit.
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
                 "cpu request gets that many CPUs of its own, lowest free ids first (takeByTopology), and keeps them "
                 "through an in-place resize (a container already in the state is skipped; no released kubelet "
                 "resizes them); any other container runs on the shared pool (GetCPUAffinity: the default set, all "
                 "CPUs minus the exclusive)")
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


def assign(policy: StaticPolicy, pods: Sequence[Pod], profile: Profile,
           previous: Assignments | None = None) -> dict[tuple[str, str], frozenset[int]]:
    """The exclusive CPUs of every container of `pods` (admitted in this order), keeping what `previous` gave.

    A container of a pod no longer present gives its CPUs back (RemoveContainer). A container `previous` holds keeps
    exactly its CPUs whatever its request now (policy_static.go Allocate; the module docstring: what a resize does).
    Containers are allocated init containers first, then app containers (the topology manager's admit order); a plain
    init container's CPUs may be taken again by the later containers of its pod (updateCPUsToReuse), a sidecar's may
    not (it keeps running). A container whose request no free CPUs can hold is left without (the kubelet refuses such
    a pod at admission with "not enough cpus available"; nodeconf's fit check refuses what exceeds allocatable and no
    more)."""
    previous = previous or {}
    live = {(p.uid, c.name) for p in pods for c in (*p.init_containers, *p.containers)}
    state = {key: cpus for key, cpus in previous.items() if key in live}
    for pod in pods:
        reusable: frozenset[int] = frozenset()
        for c in (*pod.init_containers, *pod.containers):
            count = exclusive_count(pod, c, profile)
            if count == 0:  # Allocate returns before the state: CPUs held stay held
                continue
            key = (pod.uid, c.name)
            cpus = state.get(key)  # held: "container already present in state, skipping"
            if cpus is None:
                taken = frozenset().union(*state.values())
                cpus = _take((policy.cpus - policy.reserved - taken) | reusable, count)
                if len(cpus) < count:
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
    """handlers.go podResizesAdmitHandler.Admit (allocation_manager.go canResizePod before): a Guaranteed pod whose
    cpu request moves on any resizable container (app containers and sidecars; guaranteedPodResourceResizeRequired)
    is Infeasible under the static policy unless InPlacePodVerticalScalingExclusiveCPUs is on; with it on the resize
    is admitted and the CPUs held stay (assign)."""
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
