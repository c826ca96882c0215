"""What a node is: capacities, page size, kernel and runtime facts the oracle needs, and its layers (issue 13)."""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

CPU_WEIGHT_FORMULAS = ("linear", "nonlinear")
# What a probe found when a runtime wrote neither formula's weight (measured, never declarable).
NEITHER_FORMULA = "neither"
NOT_MEASURED = "not measured"  # reported for a node whose formula no probe measured (facts given by hand)
# Kernel options the suites rely on, reported from the node's kernel config (cgroup v2 memory, swap accounting,
# cpu weight/max, cpuset, pids, io, hugetlb, PSI) (source: Linux init/Kconfig, mm/Kconfig).
KERNEL_CONFIG_OPTIONS = (
    "CONFIG_CGROUPS", "CONFIG_MEMCG", "CONFIG_MEMCG_SWAP", "CONFIG_SWAP", "CONFIG_CGROUP_SCHED",
    "CONFIG_FAIR_GROUP_SCHED", "CONFIG_CFS_BANDWIDTH", "CONFIG_CPUSETS", "CONFIG_CGROUP_PIDS", "CONFIG_BLK_CGROUP",
    "CONFIG_CGROUP_HUGETLB", "CONFIG_PSI", "CONFIG_PSI_DEFAULT_DISABLED", "CONFIG_ZSWAP",
)
# The first kernel release with each cgroup v2 interface the suites read (source: Linux
# Documentation/admin-guide/cgroup-v2.rst in the named release: memory_recursiveprot mount option 5.7,
# hugetlb.<size>.rsvd.max 5.7 (the hugetlb reservation accounting; measured present on 5.10 and 6.1),
# memory.peak 5.19, memory.reclaim 5.19, memory.swap.peak 6.5). Checks needing one are not applicable on an
# older kernel, with this reason; their expectations do not change.
KERNEL_FEATURE_SINCE: dict[str, tuple[int, int]] = {
    "memory_recursiveprot": (5, 7), "hugetlb.rsvd": (5, 7), "memory.peak": (5, 19), "memory.reclaim": (5, 19),
    "memory.swap.peak": (6, 5),
}


@dataclass(frozen=True)
class NodeFacts:
    """Facts read from a node (or given on the command line); memory and swap in bytes."""

    memory_capacity: int
    swap_capacity: int = 0
    cpu_capacity_milli: int = 2000
    page_size: int = 4096
    kernel_version: str = ""
    cgroup_controllers: tuple[str, ...] = ("cpuset", "cpu", "io", "memory", "hugetlb", "pids")
    # The formula the oracle expects for container cpu.weight: the run's requirement (the profile's non-linear
    # one unless the run declares `--cpu-weight-formula linear` acceptable), never taken from the node.
    cpu_weight_formula: str = "nonlinear"
    # memory.swap.max exists in the runtime's own cgroup (containerd SwapControllerAvailable, kubelet
    # swapControllerAvailable); absent when the kernel does no swap accounting (RUNTIME-FACTS.md §1, §2a).
    swap_controller: bool = True
    # min(kernel.pid_max, kernel.threads-max), the kubelet's `pid` capacity (stats/pidlimit Stats); None: unknown.
    pid_capacity: int | None = None
    # (huge page size, total bytes of that size) per size the kernel offers (/sys/kernel/mm/hugepages).
    hugepages: tuple[tuple[int, int], ...] = ()
    # The node's layers, measured on the node; "" (or empty, None) when not read, e.g. facts given by hand.
    debian_release: str = ""
    init: str = ""
    init_version: str = ""
    runtime: str = ""
    runtime_version: str = ""
    # Why the node's own container runtime was not used on a node that may have one (local, ssh://, vm?image=):
    # runtime=direct asked, no CRI socket, a kubelet runs there; "" when it was used, or on a reference VM.
    runtime_not_used: str = ""
    # The node's own kubelet (a Kubernetes node's status.nodeInfo.kubeletVersion); "" where nodeconf's enforcer
    # plays the kubelet.
    kubelet_version: str = ""
    cgroup2_mount_options: tuple[str, ...] = ()
    cgroup_subtree_control: tuple[str, ...] = ()
    swap_devices: tuple[str, ...] = ()
    psi: bool | None = None
    kernel_config: tuple[tuple[str, str], ...] = ()
    # A CRI runtime's config values that change what containers get, and the OCI runtime under it (issue 28):
    # (name, value) pairs such as ("SystemdCgroup", "True"), ("disable_hugetlb_controller", "True").
    runtime_config: tuple[tuple[str, str], ...] = ()
    # What the runtime was measured doing with shares (a probe container): reported, never an expectation.
    measured_cpu_weight_formula: str = ""
    # The node's own daemons' oom_score_adj, measured: (socket, value) for the process serving each default CRI
    # socket, (pid, value) for each kubelet process; None: not read (kube: nodes, facts given by hand).
    runtime_daemon_oom_score_adj: tuple[tuple[str, int], ...] | None = None
    kubelet_oom_score_adj: tuple[tuple[int, int], ...] | None = None

    def __post_init__(self) -> None:
        if self.cpu_weight_formula not in CPU_WEIGHT_FORMULAS:
            raise ValueError(f"unknown cpu weight formula {self.cpu_weight_formula!r}")
        if self.measured_cpu_weight_formula not in ("", *CPU_WEIGHT_FORMULAS, NEITHER_FORMULA):
            raise ValueError(f"unknown measured cpu weight formula {self.measured_cpu_weight_formula!r}")
        if self.page_size <= 0 or self.page_size & (self.page_size - 1):
            raise ValueError(f"page size must be a power of two, got {self.page_size}")

    @property
    def has_swap_controller(self) -> bool:
        """cgroup v2 puts memory.swap.* in the memory controller (mm/memcontrol.c swap_files), and only with swap
        accounting: without it the kubelet writes no swap setting (configureContainerSwapResources)."""
        return self.swap_controller and "memory" in self.cgroup_controllers

    def has_kernel_feature(self, name: str) -> bool:
        """True when the kernel is at least the release that added this cgroup v2 interface (KERNEL_FEATURE_SINCE)."""
        return self.kernel_at_least(*KERNEL_FEATURE_SINCE[name])

    def kernel_at_least(self, major: int, minor: int) -> bool:
        """True when the kernel release is at least major.minor (unknown counts as new enough)."""
        release = kernel_major_minor(self.kernel_version)
        return release is None or release >= (major, minor)


@functools.lru_cache(maxsize=64)
def kernel_major_minor(version: str) -> tuple[int, int] | None:
    """(major, minor) of a kernel release ("6.1.0-57-amd64" → (6, 1)); None when unknown. Kept per text: the oracle
    asks for every container of every pod (under TCG ~0.3 ms an expectation, issue 31)."""
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        return None


def meminfo_bytes(text: str) -> dict[str, int]:
    """/proc/meminfo's numbers in bytes, by name (its kB are KiB: fs/proc/meminfo.c show_val_kb; counts such as
    HugePages_Total have no unit and stay as they are); a line of another shape is passed over."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            found[key.strip()] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return found


def reported_facts(facts: NodeFacts) -> dict[str, object]:
    """The facts as reports name them (DESIGN.md "Node facts", issue 13 item 4): `cpu_weight_formula` is the
    formula the node's runtime was measured using. The formula the run accepts is a run entry of its own ("accepted
    cpu weight formula"), not a fact of the node, so a linear node never reads `cpu_weight_formula=nonlinear`."""
    measured = facts.measured_cpu_weight_formula or NOT_MEASURED
    return {key: measured if key == "cpu_weight_formula" else value
            for key, value in asdict(facts).items() if key != "measured_cpu_weight_formula"}
