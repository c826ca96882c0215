"""The agent's /stats/summary and /metrics/resource: each value worked by hand from the cgroup files of a stand-in
tree (the kubelet's formulas: working set = memory.current − inactive_file, available = memory.max − working set,
cpu ns = usage_usec × 1000, PSI totals in the kernel's µs), a field without its file left out.

Source: kubernetes stats/v1alpha1 types.go, pkg/kubelet/stats/helper.go, pkg/kubelet/metrics/collectors/
resource_metrics.go; google/cadvisor container/libcontainer/handler.go setMemoryStats.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from nodeconf.enforcer.oci_runtime import RuntimeProcess
from nodeconf.enforcer.resource_metrics import epoch, render
from nodeconf.enforcer.stats_summary import cgroup_stats, node_stats, psi
from nodeconf.nodes.base import parse_metrics
from tests.unit.enforcer.enforcer_support import res_demo, running_agent

MIB = 2**20
# A container that holds 10 MiB, 2 MiB of it inactive page cache, 4 MiB anonymous.
FILES = {
    "cpu.stat": "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000",
    "memory.current": str(10 * MIB),
    "memory.stat": f"anon {4 * MIB}\nfile {6 * MIB}\ninactive_file {2 * MIB}\npgfault 1234\npgmajfault 5",
    "memory.max": str(128 * MIB),
    "memory.swap.current": "4096",
    "memory.swap.max": str(MIB),
    "memory.pressure": "some avg10=1.50 avg60=0.75 avg300=0.25 total=2500000\n"
                       "full avg10=0.50 avg60=0.25 avg300=0.00 total=1250001",
    "cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=42",
}
EPOCH = "1970-01-01T00:00:00Z"


def test_a_cgroups_stats_follow_the_kubelets_formulas() -> None:
    stats = cgroup_stats(FILES, EPOCH, with_psi=True)
    assert stats["cpu"] == {"time": EPOCH, "usageCoreNanoSeconds": 1_500_000_000,
                            "psi": {"some": {"total": 42, "avg10": 0.0, "avg60": 0.0, "avg300": 0.0}}}
    assert stats["memory"] == {
        "time": EPOCH, "usageBytes": 10485760, "workingSetBytes": 8388608, "rssBytes": 4194304, "pageFaults": 1234,
        "majorPageFaults": 5, "availableBytes": 125829120,
        "psi": {"some": {"total": 2500000, "avg10": 1.5, "avg60": 0.75, "avg300": 0.25},
                "full": {"total": 1250001, "avg10": 0.5, "avg60": 0.25, "avg300": 0.0}}}
    assert stats["swap"] == {"time": EPOCH, "swapUsageBytes": 4096, "swapAvailableBytes": 1044480}
    assert "io" not in stats, "no io.pressure, no IOStats"


@pytest.mark.parametrize(("changed", "gone"), [
    ({"memory.max": "max"}, ("memory", "availableBytes")),
    ({"memory.max": str(2**63 - 4096)}, ("memory", "availableBytes")),  # the kernel's rounded `max`: above 2^62
    ({"memory.swap.max": "max"}, ("swap", "swapAvailableBytes")),
    ({"memory.stat": "pgfault 7"}, ("memory", "rssBytes")),
], ids=["memory-max", "memory-max-rounded", "swap-max", "no-anon"])
def test_a_value_without_its_file_or_limit_is_left_out(changed: dict[str, str], gone: tuple[str, str]) -> None:
    stats = cgroup_stats({**FILES, **changed}, EPOCH, with_psi=True)
    assert gone[1] not in stats[gone[0]]


def test_the_working_set_is_zero_when_inactive_file_exceeds_usage() -> None:
    files = {**FILES, "memory.current": "1000", "memory.stat": "inactive_file 4096"}
    assert cgroup_stats(files, EPOCH, with_psi=False)["memory"]["workingSetBytes"] == 0


def test_without_the_psi_gate_no_psi_and_no_io() -> None:
    stats = cgroup_stats({**FILES, "io.pressure": FILES["memory.pressure"]}, EPOCH, with_psi=False)
    assert "psi" not in stats["cpu"] and "psi" not in stats["memory"] and "io" not in stats


@pytest.mark.parametrize("text", ["garbage", "", "\n", "some avg10=0.00 avg60=0.00 avg300=0.00 total=x", None])
def test_a_file_without_a_readable_some_line_is_no_psi(text: str | None) -> None:
    assert psi(text) is None


def _summary_of(tmp_path: Path, scope: bool) -> tuple[dict[str, Any], float, float]:
    """The summary of res-demo with FILES in its `hello` container (or in a CRI runtime's scope beside it) and a
    pod cgroup holding 12 MiB, 3 MiB of it inactive."""
    for agent in running_agent(tmp_path):
        before = time.time()
        agent.run_pod(res_demo())
        record = next(iter(agent.pods.live()))
        hello = next(c for c in record.containers if c.name == "hello")
        where = hello.cgroup.rsplit("/", 1)[0] + "/cri-containerd-0123.scope" if scope else hello.cgroup
        agent.tree.dir(where).mkdir(parents=True, exist_ok=True)
        for name, text in FILES.items():
            (agent.tree.dir(where) / name).write_text(text + "\n")
        (agent.tree.dir(record.cgroup) / "memory.current").write_text(f"{12 * MIB}\n")
        (agent.tree.dir(record.cgroup) / "memory.stat").write_text(f"inactive_file {3 * MIB}\n")
        started = hello.proc
        if scope:
            hello.proc = cast(RuntimeProcess, SimpleNamespace(cgroup=where))
        try:
            return agent.readouts.stats_summary(), before, time.time()
        finally:
            hello.proc = started
    raise AssertionError("no agent")


@pytest.mark.parametrize("scope", [False, True], ids=["container-cgroup", "cri-scope"])
def test_the_agent_reads_each_container_where_its_process_is(tmp_path: Path, scope: bool) -> None:
    summary, before, after = _summary_of(tmp_path, scope)
    [pod] = summary["pods"]
    assert pod["podRef"]["name"] == "res-demo" and pod["podRef"]["namespace"] == "default"
    [hello] = pod["containers"]
    assert hello["name"] == "hello"
    assert hello["memory"]["workingSetBytes"] == 8388608 and hello["cpu"]["usageCoreNanoSeconds"] == 1_500_000_000
    assert pod["memory"]["workingSetBytes"] == 9 * MIB, "the pod cgroup's own files: 12 MiB − 3 MiB"
    assert int(before) <= epoch(hello["startTime"]) <= after, "the time the agent started it, whole seconds"
    assert [c["name"] for c in summary["node"]["systemContainers"]] == ["pods"]


def test_resource_metrics_are_the_summarys_values(tmp_path: Path) -> None:
    summary, _, _ = _summary_of(tmp_path, scope=False)
    samples = parse_metrics(render(summary)).samples
    container = (("container", "hello"), ("namespace", "default"), ("pod", "res-demo"))
    pod = (("namespace", "default"), ("pod", "res-demo"))
    assert samples[("container_cpu_usage_seconds_total", container)] == 1.5
    assert samples[("container_memory_working_set_bytes", container)] == 8388608
    assert samples[("container_swap_usage_bytes", container)] == 4096
    assert samples[("container_swap_limit_bytes", container)] == MIB, "available + usage: memory.swap.max"
    assert samples[("pod_memory_working_set_bytes", pod)] == 9 * MIB
    assert samples[("resource_scrape_error", ())] == 0
    assert ("node_memory_working_set_bytes", ()) not in samples, "no node memory in the summary, no series"


def test_a_sample_carries_its_stats_time_in_ms() -> None:
    summary = {"node": {"nodeName": "n"}, "pods": [{"podRef": {"name": "p", "namespace": "ns", "uid": "u"},
                                                     "containers": [], "memory": {"time": "1970-01-01T00:01:40Z",
                                                                                  "workingSetBytes": 7}}]}
    assert 'pod_memory_working_set_bytes{namespace="ns",pod="p"} 7.0 100000' in render(summary).splitlines()


def test_the_nodes_own_stats_are_the_root_cgroups_as_runc_reads_it() -> None:
    """The root has no memory.current: usage = anon + file = 300 MiB, working set 300 − 100 MiB inactive; swap
    from /proc/meminfo: (2048000 − 2047000) KiB."""
    root = {"cpu.stat": "usage_usec 7000000\nuser_usec 5000000",
            "memory.stat": f"anon {100 * MIB}\nfile {200 * MIB}\ninactive_file {100 * MIB}\npgfault 9"}
    meminfo = "MemTotal:        2000000 kB\nSwapTotal:       2048000 kB\nSwapFree:        2047000 kB\nnonsense\n"
    stats = node_stats(root, meminfo, EPOCH)
    assert stats["cpu"] == {"time": EPOCH, "usageCoreNanoSeconds": 7_000_000_000}
    assert stats["memory"] == {"time": EPOCH, "usageBytes": 300 * MIB, "workingSetBytes": 200 * MIB,
                               "rssBytes": 100 * MIB, "pageFaults": 9}
    assert stats["swap"] == {"time": EPOCH, "swapUsageBytes": 1024000}
    assert node_stats({}, None, EPOCH) == {}, "nothing read, nothing reported"
