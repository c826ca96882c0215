"""`expect()`: the whole expected node for pods running together (DESIGN.md "nodeconf explain")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, MEMORY, Container, LimitRange, Pod, ResourceQuota
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import (
    admission,
    allocatable,
    cgroup_paths,
    cpu,
    cpu_manager,
    hugepages,
    memory,
    memory_qos,
    node_limits,
    oom,
    swap,
)
from nodeconf.semantics.cpu_manager import CpuPlacement
from nodeconf.semantics.expectation import (
    CgroupExpectation,
    ContainerExpectation,
    Expected,
    NodeExpectation,
    NodeSummary,
    PodExpectation,
    QosClass,
)
from nodeconf.semantics.node_fit import PODS, fit_amounts, fit_errors
from nodeconf.semantics.pod_resources import pod_requests
from nodeconf.semantics.profile import Profile, gate_warnings
from nodeconf.semantics.qos import pod_qos
from nodeconf.semantics.validation import pod_errors, pod_warnings


def _container(
    pod: Pod, container: Container, qos: QosClass, pod_path: str, node: NodeFacts, config: KubeletConfig,
    profile: Profile, init: bool, cpus: CpuPlacement,
) -> ContainerExpectation:
    files = {
        **cpu.container_files(pod, container, node, config, profile),
        **cpus.container_files(pod, container, config, profile),
        **memory.container_files(pod, container, node, config, profile),
        "memory.swap.max": swap.container_swap_max(pod, container, qos, node, config, profile),
        **memory_qos.container_files(pod, container, qos, node, config, profile),
    }
    path = cgroup_paths.container_cgroup(
        pod_path, cgroup_paths.container_id(pod.uid, container.name), config.cgroup_driver
    )
    return ContainerExpectation(
        name=container.name,
        cgroup=CgroupExpectation(path, files),
        oom_score_adj=oom.oom_score_adj(pod, container, qos, node.memory_capacity, profile),
        init=init,
        sidecar=init and container.is_sidecar,
    )


def _pause(pod: Pod, pod_path: str, config: KubeletConfig) -> ContainerExpectation:
    """The sandbox container (seed requests-limits-qos hands-on: weight 1, cpu.max/memory.max max, −998)."""
    path = cgroup_paths.container_cgroup(pod_path, cgroup_paths.sandbox_id(pod.uid), config.cgroup_driver)
    return ContainerExpectation(
        name="POD",
        cgroup=CgroupExpectation(path, {**cpu.pause_files(), **memory.pause_files()}),
        oom_score_adj=oom.pause_oom_score_adj(),
    )


@dataclass
class AdmittedMemo:
    """Each admitted pod's expectation from a caller's last call of `expect`, by the pod it passed: the enforcer asks
    after every change, mostly about the same pods (under TCG ~8 ms a pod, issue 31). An answer is taken again only
    for a pod that admission made equal to the last call's, with the same QoS class and warnings, under equal node
    facts, config and profile, and never under the static CPU manager (its placement depends on the other pods):
    `_admitted` depends on nothing else, so it is the answer computed anew."""

    context: tuple[NodeFacts, KubeletConfig, Profile] | None = None
    answers: dict[int, tuple[Pod, PodExpectation]] = field(default_factory=dict)
    used: dict[int, tuple[Pod, PodExpectation]] = field(default_factory=dict)

    def start(self, node: NodeFacts, config: KubeletConfig, profile: Profile) -> None:
        """A call begins: the answers of the last one stay only under an equal context."""
        if self.context != (node, config, profile):
            self.context, self.answers = (node, config, profile), {}
        self.used = {}

    def admitted(self, raw: Pod, pod: Pod, qos: QosClass, warnings: tuple[str, ...], node: NodeFacts,
                 config: KubeletConfig, profile: Profile, cpus: CpuPlacement) -> PodExpectation:
        known = self.answers.get(id(raw))
        if known is not None and known[0] is raw and _same(known[1], pod, qos, warnings):
            answer = known[1]
        else:
            answer = _admitted(pod, qos, warnings, node, config, profile, cpus)
        self.used[id(raw)] = (raw, answer)  # the entry holds raw: its id stays its own
        return answer

    def finish(self) -> None:
        """A call ended: keep its answers (only those) for the next."""
        self.answers, self.used = self.used, {}


def _same(known: PodExpectation, pod: Pod, qos: QosClass, warnings: tuple[str, ...]) -> bool:
    return known.qos_class == qos and known.warnings == warnings and known.pod == pod


def _admitted(
    pod: Pod, qos: QosClass, warnings: tuple[str, ...], node: NodeFacts, config: KubeletConfig, profile: Profile,
    cpus: CpuPlacement,
) -> PodExpectation:
    pod_path = cgroup_paths.pod_cgroup(pod.uid, qos, config.cgroup_driver)
    files = {
        **cpu.pod_files(pod, qos, config, profile),
        **cpus.pod_files(pod, config, profile),
        **memory.pod_files(pod, qos, node, profile),
        "memory.swap.max": swap.pod_swap_max(pod, qos, node, config, profile),
        **memory_qos.pod_files(pod, qos, node, config, profile),
    }
    containers = tuple(
        _container(pod, c, qos, pod_path, node, config, profile, True, cpus) for c in pod.init_containers
    ) + tuple(_container(pod, c, qos, pod_path, node, config, profile, False, cpus) for c in pod.containers)
    return PodExpectation(
        pod=pod,
        qos_class=qos,
        admitted=True,
        warnings=warnings,
        events=swap.swap_events(pod, config, profile),
        cgroup=CgroupExpectation(pod_path, files),
        containers=containers,
        pause=_pause(pod, pod_path, config),
    )


def _node_cgroups(
    admitted: Sequence[PodExpectation], node: NodeFacts, config: KubeletConfig, profile: Profile
) -> dict[str, CgroupExpectation]:
    """kubepods and the two QoS cgroups (node_container_manager_linux.go, qos_container_manager_linux.go)."""
    driver = config.cgroup_driver
    by_qos = _by_qos(admitted)
    qos_files = memory_qos.node_level_files(by_qos, node, config, profile)
    levels: Mapping[str, tuple[str, dict[str, Expected]]] = {
        memory_qos.KUBEPODS: (
            cgroup_paths.kubepods(driver),
            {
                **cpu.kubepods_files(allocatable.kubepods_cpu_milli(node, config)),
                **memory.kubepods_files(allocatable.kubepods_memory_bytes(node, config), node),
            },
        ),
        memory_qos.BURSTABLE: (
            cgroup_paths.qos_cgroup(QosClass.BURSTABLE, driver),
            {**cpu.burstable_files(list(by_qos[QosClass.BURSTABLE]), profile), **memory.qos_level_files()},
        ),
        memory_qos.BESTEFFORT: (
            cgroup_paths.qos_cgroup(QosClass.BEST_EFFORT, driver),
            {**cpu.besteffort_files(), **memory.qos_level_files()},
        ),
    }
    return {
        path: CgroupExpectation(path, {**files, **qos_files.get(level, {})})
        for level, (path, files) in levels.items()
    }


def _by_qos(admitted: Sequence[PodExpectation]) -> dict[QosClass, list[Pod]]:
    by_qos: dict[QosClass, list[Pod]] = {qos: [] for qos in QosClass}
    for p in admitted:
        by_qos[p.qos_class].append(p.pod)
    return by_qos


def _incremental_quota_used(profile: Profile) -> admission.QuotaUsed:
    """admission.quota_used that sums only the pods admitted since its last call for the same quota (the
    admitted list only grows), so quota checks stay linear in the pod count."""
    running: dict[int, tuple[ResourceQuota, int, Pod | None, admission.Amounts]] = {}
    empty: admission.Amounts = {}

    def used(quota: ResourceQuota, pods: Sequence[Pod]) -> admission.Amounts:
        entry = running.get(id(quota))
        start, total = 0, empty
        # Continue only from the same quota and a list that still starts with the pods already summed.
        if entry is not None and entry[0] is quota and entry[1] <= len(pods) and (
            entry[1] == 0 or pods[entry[1] - 1] is entry[2]
        ):
            start, total = entry[1], entry[3]
        tail = admission.quota_used(quota, pods[start:], profile)
        summed = {k: v + total.get(k, 0) for k, v in tail.items()}
        running[id(quota)] = (quota, len(pods), pods[-1] if pods else None, summed)
        return dict(summed)

    return used


def expect(
    pods: Sequence[Pod],
    node: NodeFacts,
    config: KubeletConfig,
    profile: Profile,
    namespace_objects: Sequence[LimitRange | ResourceQuota] = (),
    cpu_assignments: cpu_manager.Assignments | None = None,
    memo: AdmittedMemo | None = None,
) -> NodeExpectation:
    """What the node should show with all `pods` admitted in order (rejected ones reported with errors); under the
    static CPU manager the containers keep the CPUs `cpu_assignments` (an earlier expectation's) gave them. A caller
    asking again and again may pass a memo of its own (AdmittedMemo): the answer is the same.

    InputError when the kubelet would refuse to start with this config on this node (allocatable.check_reservation,
    cpu_manager.reservation_error).
    """
    allocatable.check_reservation(node, config)
    cpu_error = cpu_manager.reservation_error(node, config)
    if cpu_error is not None:
        raise InputError(cpu_error, source=config.source, obj="KubeletConfiguration", field="cpuManagerPolicy")
    alloc_memory = allocatable.allocatable_memory(node, config)
    alloc_cpu = allocatable.allocatable_cpu_milli(node, config)
    fit_allocatable = {PODS: config.max_pods, CPU: alloc_cpu, MEMORY: alloc_memory,
                       **allocatable.allocatable_hugepages(node, config)}
    used: dict[str, int] = {}
    results: list[PodExpectation | tuple[Pod, Pod, QosClass, tuple[str, ...]]] = []
    admitted_by_namespace: dict[str, list[Pod]] = {}
    quota_used = _incremental_quota_used(profile)
    for raw in pods:
        neighbours = admitted_by_namespace.setdefault(raw.namespace, [])
        namespace = admission.admit(raw, namespace_objects, neighbours, profile, quota_used)
        pod = namespace.pod
        qos = pod_qos(pod, profile)
        requested = pod_requests(pod, profile)
        # API validation first, then the namespace's admission plugins, then the kubelet's fit check.
        errors = pod_errors(pod, profile) + swap.swap_errors(pod, profile) or namespace.errors
        if not errors:
            errors = fit_errors(requested, used, fit_allocatable)
        warnings = pod_warnings(pod)
        if errors:
            results.append(PodExpectation(pod=pod, qos_class=qos, admitted=False, errors=errors, warnings=warnings))
            continue
        for name, amount in fit_amounts(requested).items():
            used[name] = used.get(name, 0) + amount
        neighbours.append(pod)
        results.append((raw, pod, qos, warnings))
    cpus = CpuPlacement.of([r[1] for r in results if isinstance(r, tuple)], node, config, profile, cpu_assignments)
    if memo is not None and cpus.policy is None:
        memo.start(node, config, profile)
        done = tuple(r if isinstance(r, PodExpectation) else memo.admitted(*r, node, config, profile, cpus)
                     for r in results)
        memo.finish()
    else:
        done = tuple(r if isinstance(r, PodExpectation) else _admitted(*r[1:], node, config, profile, cpus)
                     for r in results)
    admitted = [p for p in done if p.admitted]
    summary = NodeSummary(
        memory_capacity=node.memory_capacity,
        swap_capacity=node.swap_capacity,
        cpu_capacity_milli=node.cpu_capacity_milli,
        allocatable_memory=alloc_memory,
        allocatable_cpu_milli=alloc_cpu,
        swap_behavior=config.swap_behavior,
        kubernetes_version=profile.version,
        cpu_weight_formula=node.cpu_weight_formula,
        page_size=node.page_size,
        feature_gates=dict(profile.gates),
        swap_controller=node.has_swap_controller,
        hugepages={name: (total, fit_allocatable[name]) for name, total in hugepages.capacity(node).items()},
    )
    metrics = {
        "kubelet_node_swap_allocated_bytes": swap.swap_allocated_bytes([p.pod for p in admitted], config, profile),
        **memory_qos.metrics(_by_qos(admitted), config, profile),
    }
    return NodeExpectation(
        node=summary,
        cgroups=_node_cgroups(admitted, node, config, profile),
        pods=done,
        metrics=metrics,
        warnings=gate_warnings(config, profile) + memory_qos.node_warnings(node, config, profile),
        node_limits=node_limits.node_limit_files(
            admitted, cgroup_paths.kubepods(config.cgroup_driver), node, config, profile
        ),
        cpu_assignments=cpus.assignments,
    )
