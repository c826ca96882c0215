"""`expect()`: the whole expected node for pods running together (DESIGN.md "nodeconf explain")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, MEMORY, Container, LimitRange, Pod, ResourceQuota
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import admission, allocatable, cgroup_paths, cpu, memory, memory_qos, oom, swap
from nodeconf.semantics.expectation import (
    CgroupExpectation,
    ContainerExpectation,
    Expected,
    NodeExpectation,
    NodeSummary,
    PodExpectation,
    QosClass,
)
from nodeconf.semantics.node_fit import fit_errors
from nodeconf.semantics.pod_resources import milli, pod_requests, whole, with_api_defaults
from nodeconf.semantics.profile import Profile
from nodeconf.semantics.qos import pod_qos
from nodeconf.semantics.validation import pod_errors, pod_warnings


def _container(
    pod: Pod, container: Container, qos: QosClass, pod_path: str, node: NodeFacts, config: KubeletConfig,
    profile: Profile, init: bool,
) -> ContainerExpectation:
    files = {
        **cpu.container_files(pod, container, node, config, profile),
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


def _admitted(
    pod: Pod, qos: QosClass, warnings: tuple[str, ...], node: NodeFacts, config: KubeletConfig, profile: Profile
) -> PodExpectation:
    pod_path = cgroup_paths.pod_cgroup(pod.uid, qos, config.cgroup_driver)
    files = {
        **cpu.pod_files(pod, qos, config, profile),
        **memory.pod_files(pod, qos, node, profile),
        "memory.swap.max": swap.pod_swap_max(pod, qos, node, config, profile),
        **memory_qos.pod_files(pod, qos, node, config, profile),
    }
    containers = tuple(
        _container(pod, c, qos, pod_path, node, config, profile, init=True) for c in pod.init_containers
    ) + tuple(_container(pod, c, qos, pod_path, node, config, profile, init=False) for c in pod.containers)
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


def expect(
    pods: Sequence[Pod],
    node: NodeFacts,
    config: KubeletConfig,
    profile: Profile,
    namespace_objects: Sequence[LimitRange | ResourceQuota] = (),
) -> NodeExpectation:
    """What the node should show with all `pods` admitted in order (rejected ones reported with errors)."""
    alloc_memory = allocatable.allocatable_memory(node, config)
    alloc_cpu = allocatable.allocatable_cpu_milli(node, config)
    used = {CPU: 0, MEMORY: 0}
    results: list[PodExpectation] = []
    for raw in pods:
        admitted_so_far = [p.pod for p in results if p.admitted]
        namespace = admission.admit(with_api_defaults(raw), namespace_objects, admitted_so_far, profile)
        pod = namespace.pod
        qos = pod_qos(pod, profile)
        requested = pod_requests(pod, profile)
        # API validation first, then the namespace's admission plugins, then the kubelet's fit check.
        errors = pod_errors(pod, profile) + swap.swap_errors(pod, profile) or namespace.errors
        if not errors:
            errors = fit_errors(requested, used, {CPU: alloc_cpu, MEMORY: alloc_memory})
        warnings = pod_warnings(pod)
        if errors:
            results.append(PodExpectation(pod=pod, qos_class=qos, admitted=False, errors=errors, warnings=warnings))
            continue
        used[CPU] += milli(requested.get(CPU, 0))
        used[MEMORY] += whole(requested.get(MEMORY, 0))
        results.append(_admitted(pod, qos, warnings, node, config, profile))
    admitted = [p for p in results if p.admitted]
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
    )
    metrics = {
        "kubelet_node_swap_allocated_bytes": swap.swap_allocated_bytes([p.pod for p in admitted], config, profile),
        **memory_qos.metrics(_by_qos(admitted), config, profile),
    }
    return NodeExpectation(
        node=summary,
        cgroups=_node_cgroups(admitted, node, config, profile),
        pods=tuple(results),
        metrics=metrics,
        warnings=memory_qos.node_warnings(node, config, profile),
    )
