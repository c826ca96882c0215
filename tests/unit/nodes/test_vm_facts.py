"""Node facts read from the guest in one round trip (issue 4: kernel, page size, controllers, memory, swap, cpus)."""

from __future__ import annotations

import pytest

from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.facts_probe import FACTS_SCRIPT, parse_node_facts, probe_node_facts, read_node_facts_script
from nodeconf.nodes.transport.memory import MemoryTransport

# What the reference VM printed (2 GiB RAM, 1 GiB swap disk less mkswap's header page, 2 vCPUs).
VM_OUTPUT = """\
kernel_version=6.1.0-57-amd64
page_size=4096
cgroup_controllers=cpuset cpu io memory hugetlb pids rdma misc
cpu_count=2
MemTotal:        2013456 kB
SwapTotal:       1048572 kB
"""


def test_parse_vm_output() -> None:
    assert parse_node_facts(VM_OUTPUT) == {
        "memory_capacity": 2013456 * 1024,
        "swap_capacity": 1048572 * 1024,
        "cpu_capacity_milli": 2000,
        "page_size": 4096,
        "kernel_version": "6.1.0-57-amd64",
        "cgroup_controllers": ("cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"),
        "swap_controller": True,
    }


@pytest.mark.parametrize(("line", "present"), [("swap_controller=no\n", False), ("swap_controller=yes\n", True),
                                              ("swap_controller=unknown\n", True), ("", True)])
def test_swap_controller_probe(line: str, present: bool) -> None:
    """memory.swap.max in the first memory cgroup found, own else a child of the root (containerd/kubelet
    swapControllerAvailable); unknown counts as present."""
    assert parse_node_facts(VM_OUTPUT + line)["swap_controller"] is present


def test_no_swap_and_no_cgroup2_controllers() -> None:
    output = VM_OUTPUT.replace("SwapTotal:       1048572 kB", "SwapTotal:             0 kB")
    output = output.replace("cgroup_controllers=cpuset cpu io memory hugetlb pids rdma misc", "cgroup_controllers=")
    facts = parse_node_facts(output)
    assert facts["swap_capacity"] == 0 and facts["cgroup_controllers"] == ()


@pytest.mark.parametrize(
    ("drop", "named"),
    [("kernel_version=", "kernel_version"), ("page_size=", "page_size"), ("cpu_count=", "cpu_count"),
     ("MemTotal:", "MemTotal"), ("SwapTotal:", "SwapTotal")],
)
def test_a_missing_fact_is_named(drop: str, named: str) -> None:
    output = "\n".join(line for line in VM_OUTPUT.splitlines() if not line.startswith(drop))
    with pytest.raises(ValueError, match=named):
        parse_node_facts(output)


def test_a_non_numeric_page_size_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a number"):
        parse_node_facts(VM_OUTPUT.replace("page_size=4096", "page_size=undefined"))


def test_probe_runs_one_command_and_builds_node_facts() -> None:
    node = MemoryTransport({"sh": lambda argv, _: VM_OUTPUT})
    facts = probe_node_facts(node)
    assert node.calls == [tuple(read_node_facts_script())] == [("sh", "-c", FACTS_SCRIPT)]
    assert facts == NodeFacts(memory_capacity=2061778944, swap_capacity=1073737728, cpu_capacity_milli=2000,
                              page_size=4096, kernel_version="6.1.0-57-amd64",
                              cgroup_controllers=("cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma",
                                                  "misc"))
