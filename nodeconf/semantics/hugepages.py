"""Huge page resource names, cgroup file names and the node's huge page capacity.

Source: k8s pkg/apis/core/v1/helper HugePageResourceName / HugePageSizeFromResourceName, pkg/kubelet/cadvisor
util.go CapacityFromMachineInfo (capacity `hugepages-<size>` = reserved pages × size, per size the kernel offers),
Linux mm/hugetlb_cgroup.c (file names `hugetlb.<size>.max`, `hugetlb.<size>.rsvd.max`).
"""

from __future__ import annotations

from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity, QuantityError

PREFIX = "hugepages-"
_UNITS = ((2**30, "Gi", "GB"), (2**20, "Mi", "MB"), (2**10, "Ki", "KB"))


def _unit(size: int) -> tuple[int, str, str]:
    for scale, binary, kernel in _UNITS:
        if size % scale == 0:
            return size // scale, binary, kernel
    raise ValueError(f"huge page size {size} is not a whole number of KiB")


def hugepage_resource(size: int) -> str:
    """`hugepages-2Mi` for 2 MiB pages (core/v1 helper HugePageResourceName)."""
    count, binary, _ = _unit(size)
    return f"{PREFIX}{count}{binary}"


def hugetlb_file(size: int) -> str:
    """`hugetlb.2MB.max` for 2 MiB pages (the kernel's hugetlb_cgroup file names, mem_fmt)."""
    count, _, kernel = _unit(size)
    return f"hugetlb.{count}{kernel}.max"


def hugetlb_rsvd_file(size: int) -> str:
    """`hugetlb.2MB.rsvd.max` for 2 MiB pages: the limit on reservations, charged at mmap (hugetlb_cgroup rsvd)."""
    count, _, kernel = _unit(size)
    return f"hugetlb.{count}{kernel}.rsvd.max"


def is_hugepage_resource(name: str) -> bool:
    """core/v1 helper IsHugePageResourceName: the `hugepages-` prefix."""
    return name.startswith(PREFIX)


def page_size(name: str) -> int | None:
    """The page size in bytes a `hugepages-<size>` name stands for; None when the size is no positive whole
    quantity (helper HugePageSizeFromResourceName)."""
    try:
        size = Quantity.parse(name.removeprefix(PREFIX))
    except QuantityError:
        return None
    return size.value() if size.amount > 0 and size.amount.denominator == 1 else None


def capacity(node: NodeFacts) -> dict[str, int]:
    """`hugepages-<size>` → reserved bytes, every size the kernel offers, 0 included (CapacityFromMachineInfo)."""
    return {hugepage_resource(size): total for size, total in node.hugepages}
