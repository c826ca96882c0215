"""Typed reads of the node protocol: "max" → unlimited, keyed files, cpu.max, Prometheus text."""

from __future__ import annotations

import re

import pytest

from nodeconf.nodes.base import CgroupFiles, ContainerState, PodStatus, last_seen, parse_metrics
from nodeconf.semantics.expectation import Event

FILES = CgroupFiles("kubepods.slice/pod", {
    "memory.max": "134217728", "memory.swap.max": "max", "cpu.max": "50000 100000", "cpu.weight": "35",
    "memory.events": "low 0\nhigh 0\nmax 145\noom 4\noom_kill 8\noom_group_kill 4", "cgroup.procs": "12\n13",
})


@pytest.mark.parametrize("file, value", [("memory.max", 134217728), ("memory.swap.max", None)],
                         ids=["bytes", "max-is-unlimited"])
def test_limit(file: str, value: int | None) -> None:
    assert FILES.limit(file) == value


def test_keyed_cpu_max_procs() -> None:
    """The article's eater pod: memory.events with oom 4, oom_kill 8 (seed requests-limits-qos, OOM)."""
    assert FILES.keyed("memory.events")["oom_kill"] == 8
    assert FILES.cpu_max() == (50000, 100000)
    assert CgroupFiles("x", {"cpu.max": "max 100000"}).cpu_max() == (None, 100000)
    assert FILES.procs() == [12, 13]
    assert FILES.number("cpu.weight") == 35


def test_missing_file_names_the_cgroup() -> None:
    with pytest.raises(KeyError, match=re.escape("cgroup kubepods.slice/pod has no file 'memory.high'")):
        FILES.limit("memory.high")


def test_parse_metrics() -> None:
    text = (
        "# HELP kubelet_node_swap_allocated_bytes x\n# TYPE kubelet_node_swap_allocated_bytes gauge\n"
        "kubelet_node_swap_allocated_bytes 2147483648\n"
        'container_swap_usage_bytes{container="c2",namespace="default",pod="p \\"q\\""} 4096\n'
    )
    metrics = parse_metrics(text)
    assert metrics.value("kubelet_node_swap_allocated_bytes") == 2147483648
    assert metrics.value("container_swap_usage_bytes", container="c2", namespace="default", pod='p "q"') == 4096
    with pytest.raises(KeyError, match="not exposed"):
        metrics.value("kubelet_memory_qos_node_memory_min_bytes")


@pytest.mark.parametrize("line", [
    'c{pod="p",container="a"} 2.5 1764550000000',
    'c{pod="p",container="a",} 2.5',
    'c{container="a", pod="p"} 2.5',
], ids=["timestamp", "trailing-comma", "space-after-comma"])
def test_parse_metrics_sample_forms(line: str) -> None:
    """Text format 0.0.4: an optional timestamp after the value (cadvisor writes one), a trailing comma."""
    assert parse_metrics(line).value("c", container="a", pod="p") == 2.5


def test_a_timed_out_wait_names_each_container_and_the_newest_warning() -> None:
    failed = "Error: failed to start container app: `runc run` did not return within 60 s and was killed"
    status = PodStatus("Running", "Guaranteed",
                       {"app": ContainerState("app", "terminated", "StartError", 128),
                        "forker": ContainerState("forker", "running")},
                       (Event("Warning", "Failed", "an older start"), Event("Normal", "Started", "forker"),
                        Event("Warning", "Failed", failed), Event("Normal", "Pulled", "app")))
    assert last_seen(status) == (
        f"last status Running, containers app=terminated/StartError, forker=running/; last warning Failed: {failed}")


def test_a_timed_out_wait_without_warnings_names_the_containers() -> None:
    status = PodStatus("Pending", "BestEffort", {"c": ContainerState("c", "waiting", "ContainerCreating")})
    assert last_seen(status) == "last status Pending, containers c=waiting/ContainerCreating"
