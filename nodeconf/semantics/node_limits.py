"""pids.max, hugetlb.<size>.max and .rsvd.max, memory.oom.group and the enforced reserve cgroups: the rules of
upstream's node e2e areas (issue 15), kept apart from `expect()`'s cgroups. The reference enforcer writes the pod's
pids.max and the pod and container hugetlb limits (checked by suites/upstream/test_pids.py, test_hugepages.py),
kubepods pids.max and hugetlb limits, and creates and writes the enforced reserve cgroups (enforceNodeAllocatable;
both checked by suites/upstream/test_node_allocatable.py).

Sources: k8s pkg/kubelet/cm/pod_container_manager_linux.go EnsureExists, helpers_linux.go ResourceConfigForPod,
node_container_manager_linux.go getCgroupConfigInternal / enforceExistingCgroup, cgroup_manager_linux.go
maybeSetHugetlb, kuberuntime_container_linux.go generateLinuxContainerResources (RUNTIME-FACTS.md §2a, §2b).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, MEMORY, Container, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics import cgroup_paths, cpu, memory
from nodeconf.semantics.allocatable import reserved
from nodeconf.semantics.expectation import Expected, PodExpectation, QosClass
from nodeconf.semantics.hugepages import hugepage_resource, hugetlb_file, hugetlb_rsvd_file
from nodeconf.semantics.pod_resources import pod_requests, whole
from nodeconf.semantics.profile import Profile

PIDS = "pid"  # the node resource name of process ids (pkg/kubelet/stats/pidlimit PIDs)
UNLIMITED = "max"
# The kubelet's cgroup manager writes each hugetlb limit twice: opencontainers/cgroups fs2 setHugeTlb writes the
# value to hugetlb.<size>.max and to hugetlb.<size>.rsvd.max, skipping the latter only where the kernel lacks it
# (since "libct/cg: support hugetlb rsvd", 2023: runc ≥ 1.2 and every kubelet nodeconf models, 1.34–1.38, which
# use opencontainers/cgroups; the systemd manager's Set writes the same files). With the reservation limited, a
# mapping beyond it fails at mmap (ENOMEM) instead of at the fault (SIGBUS).
RSVD = "and hugetlb.<size>.rsvd.max (opencontainers/cgroups fs2 setHugeTlb)"
# Each QoS tier's huge pages are unbounded: 1 << 62 bytes for every size the kernel offers
# (qos_container_manager_linux.go Start → setHugePagesUnbounded, again each minute through UpdateCgroups →
# setHugePagesConfig). A whole number of pages of each size and below the kernel's page_counter maximum, so it reads
# back as written (measured on 6.1).
QOS_UNBOUNDED = 1 << 62
# containerd's default CRI config drops CRI hugepage_limits (disable_hugetlb_controller = true).
CONTAINERD_DROPS_HUGEPAGES = ("containerd default disable_hugetlb_controller=true drops the CRI hugepage limits "
                              "(internal/cri/config/config_unix.go DefaultConfig)")


def _hugetlb(limits: Mapping[int, int], node: NodeFacts, rule: str) -> dict[str, Expected]:
    """Every size the node offers: the given bytes floored to whole huge pages (hugetlb_cgroup_write rounds
    down), an omitted size 0 (maybeSetHugetlb "for each page size omitted, limit to 0"); nothing without the
    hugetlb controller (maybeSetHugetlb returns early). The same limit goes to `hugetlb.<size>.rsvd.max` where
    the kernel has it (RSVD)."""
    if "hugetlb" not in node.cgroup_controllers:
        return {}
    rsvd = node.has_kernel_feature("hugetlb.rsvd")
    files: dict[str, Expected] = {}
    for size, _ in node.hugepages:
        value = str(limits.get(size, 0) // size * size)
        why = rule if size in limits else "size not requested: limit 0 (cgroup_manager_linux.go maybeSetHugetlb)"
        files[hugetlb_file(size)] = Expected(value, why)
        if rsvd:
            files[hugetlb_rsvd_file(size)] = Expected(value, f"{why}; {RSVD}")
    return files


def pod_pids_max(config: KubeletConfig) -> Expected:
    """Pod cgroup pids.max = podPidsLimit when > 0, else never written (pod_container_manager_linux.go EnsureExists)."""
    if config.pod_pids_limit > 0:
        return Expected(str(config.pod_pids_limit), "podPidsLimit on the pod cgroup (EnsureExists)")
    return Expected(UNLIMITED, "podPidsLimit unset (-1): pod cgroups get no pids limit (EnsureExists)")


def pod_hugetlb(pod: Pod, node: NodeFacts, profile: Profile) -> dict[str, Expected]:
    """Pod hugetlb.<size>.max from the pod's hugepages requests (ResourceConfigForPod HugePageLimits, every QoS)."""
    requests = pod_requests(pod, profile)
    limits = {size: whole(requests[hugepage_resource(size)]) for size, _ in node.hugepages
              if hugepage_resource(size) in requests}
    return _hugetlb(limits, node, "pod hugepages requests (ResourceConfigForPod HugePageLimits), whole pages")


def qos_hugetlb(node: NodeFacts) -> dict[str, Expected]:
    """Burstable and BestEffort QoS cgroups: hugetlb.<size>.max (and .rsvd.max) 1 << 62 for every size
    (QOS_UNBOUNDED)."""
    return _hugetlb({size: QOS_UNBOUNDED for size, _ in node.hugepages}, node,
                    "QoS tier unbounded: 1 << 62 (qos_container_manager_linux.go setHugePagesUnbounded)")


# A container that limits no huge pages of a size its pod limits at pod level: the kubelet read sends 0 (the
# container's own resources only); kubernetes#132543 (after #130577) gives such a container the pod's limit instead.
POD_LEVEL_PROPAGATED = ("kubernetes#132543: a container without a hugepages limit of a size its pod limits at pod "
                        "level is given the pod-level limit (propagation after kubernetes#130577)")


def container_hugetlb(container: Container, node: NodeFacts, pod_level: Mapping[str, Quantity] | None = None
                      ) -> dict[str, Expected]:
    """Container hugetlb.<size>.max: the kubelet sends every host size, 0 unless limited
    (kuberuntime GetHugepageLimitsFromResources); containerd's default config drops them (accepted `max`). For a
    size the container leaves unlimited and its pod limits (`pod_level`: the pod's spec.resources.limits), the
    pod's limit is accepted too (POD_LEVEL_PROPAGATED)."""
    limits = {size: q.value() for size, _ in node.hugepages
              if (q := container.resources.limit(hugepage_resource(size))) is not None}
    files = _hugetlb(limits, node, "limits.hugepages-<size> via CRI hugepage_limits (GetHugepageLimitsFromResources)")
    inherited = {size: q.value() for size, _ in node.hugepages if size not in limits
                 and (q := (pod_level or {}).get(hugepage_resource(size))) is not None}
    own_files = {name for size in inherited for name in (hugetlb_file(size), hugetlb_rsvd_file(size))}
    propagated = {name: e.value for name, e in _hugetlb(inherited, node, POD_LEVEL_PROPAGATED).items()
                  if name in own_files}
    return {name: Expected(e.value, e.rule, {
        UNLIMITED: CONTAINERD_DROPS_HUGEPAGES,
        **({propagated[name]: POD_LEVEL_PROPAGATED} if name in propagated else {}),
    }) for name, e in files.items()}


def _enforced(config: KubeletConfig, key: str) -> bool:
    return key in config.enforce_node_allocatable


def kubepods_files(node: NodeFacts, config: KubeletConfig) -> dict[str, Expected]:
    """kubepods pids.max and hugetlb.<size>.max: the kubelet's internal capacity (capacity plus `pid`), minus
    systemReserved + kubeReserved when `pods` is enforced, floored at 0 (node_container_manager_linux.go
    createNodeAllocatableCgroups / enforceNodeAllocatableCgroups → getNodeAllocatableInternalAbsolute →
    getCgroupConfig(…, false) → getCgroupConfigInternal: PidsLimit from `pid`, HugePageLimits from every
    `hugepages-<size>` of capacity; in every release nodeconf models, 1.34–1.38, and long before: the pre-1.20
    getCgroupConfig sets both already). `pid` capacity is min(pid_max, threads-max) (container_manager_linux.go
    NewContainerManager internalCapacity, stats/pidlimit Stats). Nothing without the controller; no pids.max when
    the reserve takes every pid: not modelled (runc's libcontainer has taken a PidsLimit of 0 as "not set")."""
    pods = _enforced(config, "pods")
    scope = "capacity − system/kube reserved" if pods else "capacity (`pods` not enforced)"
    files: dict[str, Expected] = {}
    if node.pid_capacity is not None and "pids" in node.cgroup_controllers:
        pids = node.pid_capacity - (Quantity(reserved(config, PIDS)).value() if pods else 0)
        if pids > 0:
            files["pids.max"] = Expected(str(pids), f"kubepods pids.max = pid {scope} (getCgroupConfig PidsLimit)")
    totals = {size: max(0, total - (Quantity(reserved(config, hugepage_resource(size))).value() if pods else 0))
              for size, total in node.hugepages}
    files.update(_hugetlb(totals, node, f"kubepods hugepages {scope} (getCgroupConfig HugePageLimits)"))
    return files


# The enforced reserves: the enforceNodeAllocatable key, its cgroup's field and the config attributes.
RESERVES = (("system-reserved", "systemReservedCgroup", "system_reserved_cgroup", "system_reserved"),
            ("kube-reserved", "kubeReservedCgroup", "kube_reserved_cgroup", "kube_reserved"))


def reserved_cgroup_paths(config: KubeletConfig) -> dict[str, str]:
    """The path of each enforced reserve cgroup (cgroup_paths.reserved_cgroup for the config's driver), keyed by its
    enforceNodeAllocatable key; InputError when the kubelet could not name it."""
    out: dict[str, str] = {}
    for key, field, attr, _ in RESERVES:
        name = getattr(config, attr)
        if not _enforced(config, key) or not name:
            continue
        try:
            out[key] = cgroup_paths.reserved_cgroup(name, config.cgroup_driver)
        except ValueError as err:
            raise InputError(str(err), source=config.source, obj="KubeletConfiguration", field=field) from None
    return out


def reserved_cgroup_files(node: NodeFacts, config: KubeletConfig) -> dict[str, dict[str, Expected]]:
    """systemReservedCgroup / kubeReservedCgroup when enforced (enforceNodeAllocatableCgroups → enforceExistingCgroup
    → getCgroupConfigInternal, Update): cpu.weight from the reserved cpu (MilliCPUToShares, linear weight),
    memory.max and pids.max from the reserved amounts, hugetlb.<size>.max from reserved hugepages (0 for a size not
    reserved: maybeSetHugetlb); a resource not reserved is not written. Not modelled: memory.min = reserved memory
    under MemoryQoS (written by enforceExistingCgroup up to 1.35; the 1.36+ memoryReservationPolicy rule for the
    reserves is not confirmed) and cpuset.cpus (getCgroupConfig, cpuset is not a controller nodeconf enables)."""
    out: dict[str, dict[str, Expected]] = {}
    paths = reserved_cgroup_paths(config)
    for key, _, _, attr in RESERVES:
        if key not in paths:
            continue
        reserve: Mapping[str, Quantity] = getattr(config, attr)
        files: dict[str, Expected] = {}
        if CPU in reserve:
            shares = cpu.milli_cpu_to_shares(reserve[CPU].milli_value())
            files["cpu.weight"] = Expected(str(cpu.linear_weight(shares)),
                                           f"{key} cpu → shares {shares} → linear weight (enforceExistingCgroup)")
        if MEMORY in reserve:
            files["memory.max"] = Expected(memory.read_back(reserve[MEMORY].value(), node.page_size),
                                           f"{key} memory, page-floored (enforceExistingCgroup)")
        if PIDS in reserve:
            files["pids.max"] = Expected(str(reserve[PIDS].value()), f"{key} pid (enforceExistingCgroup)")
        pages = {size: reserve[hugepage_resource(size)].value() for size, _ in node.hugepages
                 if hugepage_resource(size) in reserve}
        files.update(_hugetlb(pages, node, f"{key} hugepages (getCgroupConfigInternal HugePageLimits), whole pages"))
        out[paths[key]] = files
    return out


def node_limit_files(pods: Sequence[PodExpectation], kubepods: str, node: NodeFacts, config: KubeletConfig,
                     profile: Profile) -> dict[str, dict[str, Expected]]:
    """Every cgroup's pids/hugetlb/oom.group/reserve expectations for the admitted pods, keyed by cgroup path."""
    out: dict[str, dict[str, Expected]] = {kubepods: kubepods_files(node, config)}
    if qos := qos_hugetlb(node):
        out.update({cgroup_paths.qos_cgroup(q, config.cgroup_driver): qos
                    for q in (QosClass.BURSTABLE, QosClass.BEST_EFFORT)})
    for p in pods:
        if not p.admitted or p.cgroup is None:
            continue
        out[p.cgroup.path] = {"pids.max": pod_pids_max(config), **pod_hugetlb(p.pod, node, profile)}
        by_name = {c.name: c for c in p.pod.all_containers}
        pod_level = p.pod.resources.limits if p.pod.resources and profile.gate("PodLevelResources") else None
        for c in p.containers:
            out[c.cgroup.path] = {"memory.oom.group": memory.oom_group(config),
                                  **container_hugetlb(by_name[c.name], node, pod_level)}
    out.update(reserved_cgroup_files(node, config))
    return out
