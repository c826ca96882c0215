"""Facts the agent reads from its node: memory, swap, cpus, page size, kernel, cgroup controllers."""

from __future__ import annotations

import os
from pathlib import Path

from nodeconf.node_facts import NodeFacts


def meminfo(path: Path = Path("/proc/meminfo")) -> dict[str, int]:
    """/proc/meminfo in bytes (its kB are KiB: fs/proc/meminfo.c show_val_kb)."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[key] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return out


def node_memory_used() -> int:
    """Memory in use on the node now: MemTotal − MemAvailable (what memory.available is measured against)."""
    info = meminfo()
    return info["MemTotal"] - info.get("MemAvailable", info.get("MemFree", 0))


def detect(cgroup_root: Path, cpu_weight_formula: str) -> NodeFacts:
    """The node as seen from here; the cpu-weight formula is the runtime's, which the agent emulates."""
    info = meminfo()
    controllers_file = cgroup_root / "cgroup.controllers"
    controllers = tuple(controllers_file.read_text().split()) if controllers_file.exists() else ()
    return NodeFacts(
        memory_capacity=info["MemTotal"],
        swap_capacity=info.get("SwapTotal", 0),
        cpu_capacity_milli=1000 * len(os.sched_getaffinity(0)),
        page_size=os.sysconf("SC_PAGE_SIZE"),
        kernel_version=os.uname().release,
        cgroup_controllers=controllers,
        cpu_weight_formula=cpu_weight_formula,
    )


def facts_to_dict(facts: NodeFacts) -> dict[str, object]:
    return {
        "memoryCapacity": facts.memory_capacity, "swapCapacity": facts.swap_capacity,
        "cpuCapacityMilli": facts.cpu_capacity_milli, "pageSize": facts.page_size,
        "kernelVersion": facts.kernel_version, "cgroupControllers": list(facts.cgroup_controllers),
        "cpuWeightFormula": facts.cpu_weight_formula, "runtime": facts.runtime,
        "runtimeVersion": facts.runtime_version, "measuredCpuWeightFormula": facts.measured_cpu_weight_formula,
    }


def facts_from_dict(doc: dict[str, object]) -> NodeFacts:
    controllers = doc["cgroupControllers"]
    assert isinstance(controllers, list)
    return NodeFacts(
        memory_capacity=int(str(doc["memoryCapacity"])), swap_capacity=int(str(doc["swapCapacity"])),
        cpu_capacity_milli=int(str(doc["cpuCapacityMilli"])), page_size=int(str(doc["pageSize"])),
        kernel_version=str(doc["kernelVersion"]), cgroup_controllers=tuple(str(c) for c in controllers),
        cpu_weight_formula=str(doc["cpuWeightFormula"]), runtime=str(doc.get("runtime", "")),
        runtime_version=str(doc.get("runtimeVersion", "")),
        measured_cpu_weight_formula=str(doc.get("measuredCpuWeightFormula", "")),
    )
