"""Read a node's facts in one remote round trip: kernel, page size, cgroup controllers, memory, swap, cpus."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypedDict

from nodeconf.node_facts import NodeFacts, meminfo_bytes

FACTS_SCRIPT = """\
printf 'kernel_version=%s\\n' "$(uname -r)"
printf 'page_size=%s\\n' "$(getconf PAGESIZE)"
printf 'cgroup_controllers=%s\\n' "$(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null)"
printf 'cpu_count=%s\\n' "$(getconf _NPROCESSORS_ONLN)"
swap=unknown
for d in "/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)" /sys/fs/cgroup/*/; do
  [ -e "$d/memory.max" ] || continue
  if [ -e "$d/memory.swap.max" ]; then swap=yes; else swap=no; fi; break
done
printf 'swap_controller=%s\\n' "$swap"
grep -E '^(MemTotal|SwapTotal):' /proc/meminfo
"""


class CommandRunner(Protocol):
    """Anything that runs an argv on the node and returns its standard output (e.g. SshTransport)."""

    def check_output(self, argv: Sequence[str]) -> str: ...


def read_node_facts_script() -> list[str]:
    """The argv that prints every fact in one round trip."""
    return ["sh", "-c", FACTS_SCRIPT]


class ProbedFacts(TypedDict):
    """NodeFacts field values as read from a node (memory and swap in bytes)."""

    memory_capacity: int
    swap_capacity: int
    cpu_capacity_milli: int
    page_size: int
    kernel_version: str
    cgroup_controllers: tuple[str, ...]
    swap_controller: bool


def parse_node_facts(output: str) -> ProbedFacts:
    """The facts printed by read_node_facts_script(); ValueError naming the first missing or bad fact."""
    raw: dict[str, str] = {}
    for line in output.splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            raw[key.strip()] = value.strip()
    meminfo = meminfo_bytes("\n".join(line for line in output.splitlines() if "=" not in line))
    for name in ("kernel_version", "page_size", "cpu_count"):
        if not raw.get(name):
            raise ValueError(f"node facts: {name} missing from the probe output")
    for name in ("MemTotal", "SwapTotal"):
        if name not in meminfo:
            raise ValueError(f"node facts: {name} missing from /proc/meminfo")
    try:
        page_size, cpu_count = int(raw["page_size"]), int(raw["cpu_count"])
    except ValueError as err:
        raise ValueError(f"node facts: page_size or cpu_count is not a number ({err})") from err
    return ProbedFacts(
        memory_capacity=meminfo["MemTotal"],
        swap_capacity=meminfo["SwapTotal"],
        cpu_capacity_milli=cpu_count * 1000,
        page_size=page_size,
        kernel_version=raw["kernel_version"],
        cgroup_controllers=tuple(raw.get("cgroup_controllers", "").split()),
        # The first memory cgroup found (own, else a child of the root) without memory.swap.max means no swap
        # accounting; no memory cgroup at all leaves it unknown, taken as present.
        swap_controller=raw.get("swap_controller", "unknown") != "no",
    )


def probe_node_facts(node: CommandRunner) -> NodeFacts:
    """The node's facts, read with one remote command."""
    return NodeFacts(**parse_node_facts(node.check_output(read_node_facts_script())))
