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
    # The formula the oracle expects for container cpu.weight: the run's requirement (the profile's non-linear
    # one unless the run declares `--cpu-weight-formula linear` acceptable), never taken from the node.
    cpu_weight_formula: str = "nonlinear"
    # The container runtime and what it was measured doing: reported, never an expectation ("" = not known).
    runtime: str = ""
    runtime_version: str = ""
    measured_cpu_weight_formula: str = ""

    def __post_init__(self) -> None:
        if self.cpu_weight_formula not in CPU_WEIGHT_FORMULAS:
            raise ValueError(f"unknown cpu weight formula {self.cpu_weight_formula!r}")
        if self.measured_cpu_weight_formula not in ("", *CPU_WEIGHT_FORMULAS):
            raise ValueError(f"unknown measured cpu weight formula {self.measured_cpu_weight_formula!r}")
        if self.page_size <= 0 or self.page_size & (self.page_size - 1):
            raise ValueError(f"page size must be a power of two, got {self.page_size}")

    @property
    def has_swap_controller(self) -> bool:
        """cgroup v2 puts memory.swap.* in the memory controller (mm/memcontrol.c swap_files)."""
        return "memory" in self.cgroup_controllers

    def kernel_at_least(self, major: int, minor: int) -> bool:
        """True when the kernel release is at least major.minor (unknown counts as new enough)."""
        parts = self.kernel_version.split(".")
        try:
            return (int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)) >= (major, minor)
        except (IndexError, ValueError):
            return True
