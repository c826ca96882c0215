"""What a node is: capacities, page size, kernel and runtime facts the oracle needs."""

from __future__ import annotations

from dataclasses import dataclass

CPU_WEIGHT_FORMULAS = ("linear", "nonlinear")


@dataclass(frozen=True)
class NodeFacts:
    """Facts read from a node (or given on the command line); memory and swap in bytes."""

    memory_capacity: int
    swap_capacity: int = 0
    cpu_capacity_milli: int = 2000
    page_size: int = 4096
    kernel_version: str = ""
    cgroup_controllers: tuple[str, ...] = ("cpuset", "cpu", "io", "memory", "hugetlb", "pids")
    cpu_weight_formula: str = "nonlinear"
    # memory.swap.max exists in the runtime's own cgroup (containerd SwapControllerAvailable, kubelet
    # swapControllerAvailable); absent when the kernel does no swap accounting (RUNTIME-FACTS.md §1, §2a).
    swap_controller: bool = True
    # min(kernel.pid_max, kernel.threads-max), the kubelet's `pid` capacity (stats/pidlimit Stats); None: unknown.
    pid_capacity: int | None = None
    # (huge page size, total bytes of that size) per size the kernel offers (/sys/kernel/mm/hugepages).
    hugepages: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.cpu_weight_formula not in CPU_WEIGHT_FORMULAS:
            raise ValueError(f"unknown cpu weight formula {self.cpu_weight_formula!r}")
        if self.page_size <= 0 or self.page_size & (self.page_size - 1):
            raise ValueError(f"page size must be a power of two, got {self.page_size}")

    @property
    def has_swap_controller(self) -> bool:
        """cgroup v2 puts memory.swap.* in the memory controller (mm/memcontrol.c swap_files), and only with swap
        accounting: without it the kubelet writes no swap setting (configureContainerSwapResources)."""
        return self.swap_controller and "memory" in self.cgroup_controllers

    def kernel_at_least(self, major: int, minor: int) -> bool:
        """True when the kernel release is at least major.minor (unknown counts as new enough)."""
        parts = self.kernel_version.split(".")
        try:
            return (int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)) >= (major, minor)
        except (IndexError, ValueError):
            return True
