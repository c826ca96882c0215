"""The kubelet's Summary API (/stats/summary) and resource metrics (/metrics/resource) for upstream's stats pod:
each value against the cgroup files it is read from, by the kubelet's own formulas where a value follows exactly,
within upstream's bounds where only a bound holds.

Source: upstream test/e2e_node/summary_test.go "should report resource usage through the stats api" and
resource_metrics_test.go "should report resource usage through the resouce metrics api" (busybox-container with
limits.memory 80M; bounds in e2evolume's decimal units, Kb = 1e3, Mb = 1e6). The values' cgroup files:
nodeconf.enforcer.stats_summary (pkg/kubelet/stats/helper.go, cadvisor handler.go setMemoryStats, runc fs2) and
nodeconf.enforcer.resource_metrics (pkg/kubelet/metrics/collectors/resource_metrics.go). Not checked (no such thing
on a node without an API server, or not served from a cgroup file): network, filesystems, volumes, rlimit,
usageNanoCores, and the restarts upstream's pods make before the first read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import CgroupFiles, Metrics, Node
from nodeconf.semantics.cgroup_paths import kubepods
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.psi import pressure_total, psi_metrics
from suites.toolkit.checks import Deployed, check_pod, settled_evidence, wait_until
from suites.toolkit.compare import ComparedValue, assert_matches, compare_measured, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.toolkit.tolerance import Band
from suites.upstream.shared import Res, container, make_pod, module_kubelet, shared_deployment

SUMMARY_FILE = "test/e2e_node/summary_test.go"
SUMMARY_CASE = "Summary API / when querying /stats/summary / should report resource usage through the stats api"
RESOURCE_FILE = "test/e2e_node/resource_metrics_test.go"
RESOURCE_CASE = ("ResourceMetricsAPI [NodeFeature:ResourceMetrics] / when querying /resource/metrics / should report "
                 "resource usage through the resouce metrics api")
SUMMARY = pytest.mark.upstream_e2e(file=SUMMARY_FILE, case=SUMMARY_CASE)
RESOURCE = pytest.mark.upstream_e2e(file=RESOURCE_FILE, case=RESOURCE_CASE)
pytestmark = [pytest.mark.kubelet_code, pytest.mark.independent]

POD, NAME = "stats-busybox-0", "busybox-container"
KB, MB = 1e3, 1e6
BOUNDS = "summary_test.go / resource_metrics_test.go bounds for busybox-container and its pod (limits.memory 80M)"
NODE_BOUNDS = "summary_test.go node bounds (memoryLimit: the node's memory capacity)"
FORMULA = ("pkg/kubelet/stats/helper.go: availableBytes = limit − workingSetBytes from one sample (the limit: the "
           "cgroup's memory.max, cadvisor common/helpers.go), so the sum is the oracle's memory.max exactly")
SWAP_FORMULA = ("helper.go cadvisorInfoToSwapStats: swapAvailableBytes = memory.swap.max − swapUsageBytes, left out "
                "when unlimited (isMemoryUnlimited), so available + usage is the oracle's memory.swap.max exactly")
WS_LE_USAGE = "stats/v1alpha1 types.go MemoryStats: WorkingSetBytes is <= UsageBytes (usage − inactive_file)"
COUNTER = ("cpu.stat usage_usec and memory.stat pgfault/pgmajfault never decrease (cgroup-v2.rst), so a value read "
           "between two reads of the file lies between them; cpu ns = usage_usec × 1000 (runc fs2 statCpu)")
PSI_TOTAL = ("kernel psi.rst: total never decreases; the Summary's PSI total is the kernel's µs verbatim (runc "
             "statPSI, cadvisorPSIToStatsPSI), so it lies between two reads of the pressure file")
PSI_AVG = "summary_test.go psiExpectation: Avg10, Avg60, Avg300 within [0, 100]; psi.rst: a share of wall time in %"
# How long a kubelet's cadvisor may serve a sample it took earlier (housekeeping 10 s, at most 15 s): a bracket is
# polled that long before it counts as failed; nodeconf's enforcer reads the files in the request itself.
HOUSEKEEPING_S = 20.0
EXTRA = ("memory.stat", "cpu.pressure", "memory.pressure", "io.pressure")


@pytest.fixture(scope="module")
def deployed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Deployed]:
    """Upstream's stats pod (one of its two: a second adds nothing per pod), sleeping instead of restarting."""
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    with shared_deployment(node, oracle, kubelet, [make_pod(POD, [container(NAME, Res(mem_lim="80M"))])]) as running:
        settled_evidence(running.handles[0])
        yield running


def _pod(summary: Mapping[str, Any], deployed: Deployed) -> Mapping[str, Any]:
    pod = deployed.handles[0].pod
    found: list[Mapping[str, Any]] = [p for p in summary.get("pods") or () if p["podRef"]["name"] == pod.name
                                      and p["podRef"]["namespace"] == pod.namespace]
    assert len(found) == 1, f"/stats/summary lists pod {pod.ref} {len(found)} times"
    return found[0]


def _level(summary: Mapping[str, Any], deployed: Deployed, level: str) -> Mapping[str, Any]:
    """The pod's stats (level "pod") or its container's."""
    pod = _pod(summary, deployed)
    if level == "pod":
        return pod
    found: list[Mapping[str, Any]] = [c for c in pod["containers"] if c["name"] == NAME]
    assert found, f"/stats/summary lists no container {NAME} in pod {POD}"
    return found[0]


def _files(deployed: Deployed, level: str) -> CgroupFiles:
    """The cgroup the kubelet reads at this level: the pod cgroup, or the container's (its runtime's scope when it
    runs the process in a sub-cgroup: test_psi._counted)."""
    evidence = deployed.handles[0].evidence(EXTRA)
    if level == "pod":
        return evidence.pod_cgroup
    found = evidence.container(NAME)
    return found.scope or found.cgroup


def _row(level: str, path: str, what: str, band: Band, value: float | None, rule: str) -> ComparedValue:
    owner = NAME if level == "container" else ""
    if value is None:
        return compare_value(POD, owner, path, what, Expected(str(band), rule), None)
    return compare_measured(POD, owner, path, what, band, value, rule)


def test_pod_matches_the_oracle(deployed: Deployed) -> None:
    """Upstream's stats pod runs as Burstable (limits.memory only), every cgroup value the oracle's."""
    check_pod(deployed.handles[0], deployed.expectation.pods[0], QosClass.BURSTABLE)


@SUMMARY
def test_summary_lists_the_pod_its_container_and_the_pods_system_container(deployed: Deployed, node: Node) -> None:
    """The node's name, its `pods` system container, and the pod with exactly its one container (MatchAllElements)."""
    summary = node.stats_summary()
    pod = _pod(summary, deployed)
    system = sorted(c["name"] for c in summary["node"].get("systemContainers") or ())
    rule = "summary_test.go: Node.NodeName, SystemContainers (kubelet, runtime, pods), Pods[ns::name].Containers"
    assert_matches("summary objects", [
        compare_value(POD, "", "/stats/summary", "node.nodeName is set", Expected("yes", rule),
                      "yes" if summary["node"].get("nodeName") else "no"),
        compare_value(POD, "", "/stats/summary", "node.systemContainers has pods", Expected("yes", rule),
                      "yes" if "pods" in system else "no"),
        compare_value(POD, "", "/stats/summary", "containers", Expected(NAME, rule),
                      ",".join(c["name"] for c in pod["containers"]))])


@SUMMARY
@pytest.mark.parametrize("level", ["container", "pod"])
def test_summary_memory_is_within_upstreams_bounds(deployed: Deployed, node: Node, level: str) -> None:
    """usage and working set within [10 kB, 80 MB], rss within [1 kB, 80 MB], working set ≤ usage."""
    memory = _level(node.stats_summary(), deployed, level).get("memory") or {}
    path = f"/stats/summary {level}.memory"
    rows = [_row(level, path, key, Band(low, 80 * MB, BOUNDS), memory.get(key), BOUNDS)
            for key, low in (("usageBytes", 10 * KB), ("workingSetBytes", 10 * KB), ("rssBytes", KB))]
    if "usageBytes" in memory and "workingSetBytes" in memory:
        rows.append(_row(level, path, "workingSetBytes ≤ usageBytes", Band(0, memory["usageBytes"], WS_LE_USAGE),
                         memory["workingSetBytes"], WS_LE_USAGE))
    assert_matches(f"summary {level} memory bounds", rows)


@SUMMARY
@pytest.mark.parametrize("level", ["container", "pod", "pods-system-container"])
def test_summary_available_is_the_limit_minus_the_working_set(deployed: Deployed, node: Node,
                                                              base_config: KubeletConfig, level: str) -> None:
    """availableBytes + workingSetBytes is the cgroup's memory.max, the oracle's (the node's `pods` system
    container: the kubepods cgroup)."""
    summary = node.stats_summary()
    if level == "pods-system-container":
        path = kubepods(base_config.cgroup_driver)
        want = deployed.expectation.cgroups[path].files["memory.max"]
        memory = next(c for c in summary["node"]["systemContainers"] if c["name"] == "pods").get("memory") or {}
    else:
        expected = deployed.expectation.pods[0]
        cgroup = expected.cgroup if level == "pod" else expected.container(NAME).cgroup
        assert cgroup is not None, "the oracle gives the pod no cgroup"
        path, want = cgroup.path, cgroup.files["memory.max"]
        memory = _level(summary, deployed, level).get("memory") or {}
    total = memory["availableBytes"] + memory["workingSetBytes"] if "availableBytes" in memory else None
    assert_matches(f"summary {level} availableBytes", [
        compare_value(POD, NAME if level == "container" else "", path, "availableBytes + workingSetBytes",
                      Expected(want.value, f"{FORMULA}; {want.rule}"), None if total is None else str(total))])


@SUMMARY
def test_summary_swap_is_the_limit_minus_the_usage(deployed: Deployed, node: Node) -> None:
    """The container's swap: absent (no swap accounting) or usage ≤ the node's memory and, with a limit,
    available + usage = memory.swap.max (the oracle's); no available bytes without a limit."""
    swap = _level(node.stats_summary(), deployed, "container").get("swap")
    if swap is None:
        pytest.skip("the node reports no swap stats for the container (summary_test.go swapExpectation: BeNil)")
    want = deployed.expectation.pods[0].container(NAME).cgroup.files.get("memory.swap.max")
    if want is None:
        pytest.skip("the oracle expects no memory.swap.max for the container (no swap controller on the node)")
    limit = swap["swapAvailableBytes"] + swap["swapUsageBytes"] if "swapAvailableBytes" in swap else "max"
    capacity = deployed.expectation.node.memory_capacity + deployed.expectation.node.swap_capacity
    assert_matches("summary container swap", [
        _row("container", "/stats/summary", "swapUsageBytes", Band(0, capacity, BOUNDS), swap.get("swapUsageBytes"),
             "summary_test.go swapExpectation: bounded(0, memoryLimit)"),
        compare_value(POD, NAME, "/stats/summary", "swapAvailableBytes + swapUsageBytes",
                      Expected(want.value, f"{SWAP_FORMULA}; {want.rule}"), str(limit))])


def _bracketed(what: str, rows: Callable[[], list[ComparedValue]]) -> list[ComparedValue]:
    """The rows once all hold, polled for a kubelet's housekeeping interval (its sample may predate the reads)."""
    found: list[ComparedValue] = []

    def held() -> bool:
        found[:] = rows()
        return all(row.ok for row in found)

    with contextlib.suppress(AssertionError):
        wait_until(what, held, timeout=HOUSEKEEPING_S)
    return found


def _counters(deployed: Deployed, node: Node, level: str) -> list[ComparedValue]:
    before = _files(deployed, level)
    stats = _level(node.stats_summary(), deployed, level)
    after = _files(deployed, level)
    rows = []
    for section, key, file, field, scale in (("cpu", "usageCoreNanoSeconds", "cpu.stat", "usage_usec", 1000),
                                             ("memory", "pageFaults", "memory.stat", "pgfault", 1),
                                             ("memory", "majorPageFaults", "memory.stat", "pgmajfault", 1)):
        band = Band(before.keyed(file)[field] * scale, after.keyed(file)[field] * scale, f"{file} {field} read "
                    "before and after")
        rows.append(_row(level, after.path, f"{section}.{key}", band, (stats.get(section) or {}).get(key), COUNTER))
    return rows


@SUMMARY
@pytest.mark.parametrize("level", ["container", "pod"])
def test_summary_counters_lie_between_the_cgroup_reads(deployed: Deployed, node: Node, level: str) -> None:
    """cpu.usageCoreNanoSeconds, memory.pageFaults and majorPageFaults between two reads of cpu.stat/memory.stat."""
    assert_matches(f"summary {level} counters", _bracketed("the summary's counters lie between the cgroup reads",
                                                           lambda: _counters(deployed, node, level)))


def _psi_rows(deployed: Deployed, node: Node, resource: str) -> list[ComparedValue]:
    file, section = f"{resource}.pressure", resource
    rows = []
    for level in ("container", "pod"):
        before = _files(deployed, level)
        psi = (_level(node.stats_summary(), deployed, level).get(section) or {}).get("psi") or {}
        after = _files(deployed, level)
        for line in ("some", "full"):
            data = psi.get(line) or {}
            band = Band(pressure_total(before.get(file) or "", line), pressure_total(after.get(file) or "", line),
                        f"{file} {line} total read before and after (µs)")
            rows.append(_row(level, after.path, f"{section}.psi.{line}.total", band, data.get("total"), PSI_TOTAL))
            rows += [_row(level, after.path, f"{section}.psi.{line}.{avg}", Band(0, 100, PSI_AVG), data.get(avg),
                          PSI_AVG) for avg in ("avg10", "avg60", "avg300")]
    return rows


@SUMMARY
@pytest.mark.needs_psi
@pytest.mark.parametrize("resource", [pytest.param("cpu", marks=pytest.mark.needs_kernel("5.13")), "memory", "io"])
def test_summary_psi_follows_the_pressure_files(deployed: Deployed, node: Node, oracle: Oracle,
                                                base_config: KubeletConfig, resource: str) -> None:
    """With KubeletPSI, the container's and the pod's PSI: some and full, each total between two reads of the
    pressure file, each average a percentage; without it, no PSI (summary_test.go psiExpectation: BeNil)."""
    if not psi_metrics(oracle.profile(base_config)):
        found = (_level(node.stats_summary(), deployed, "container").get(resource) or {}).get("psi")
        assert found is None, f"KubeletPSI is off in this profile, yet the summary reports {resource}.psi {found}"
        return
    assert_matches(f"summary {resource} psi", _bracketed("the summary's PSI totals lie between the pressure files",
                                                         lambda: _psi_rows(deployed, node, resource)))


@SUMMARY
def test_summary_node_usage_is_within_upstreams_bounds(deployed: Deployed, node: Node) -> None:
    """The node's own usage: cpu within [1e9, 1e15] ns, working set and usage within [10 MB, memory capacity]."""
    stats = node.stats_summary()["node"]
    capacity = deployed.expectation.node.memory_capacity
    cpu, memory = stats.get("cpu") or {}, stats.get("memory") or {}
    assert_matches("summary node usage", [
        _row("node", "/stats/summary node", "cpu.usageCoreNanoSeconds", Band(1e9, 1e15, NODE_BOUNDS),
             cpu.get("usageCoreNanoSeconds"), NODE_BOUNDS),
        *(_row("node", "/stats/summary node", f"memory.{key}", Band(10 * MB, capacity, NODE_BOUNDS), memory.get(key),
               NODE_BOUNDS) for key in ("usageBytes", "workingSetBytes"))])


def _value(page: Metrics, name: str, labels: Mapping[str, str]) -> float | None:
    found = [v for (sample, pairs), v in page.samples.items() if sample == name and dict(pairs) == dict(labels)]
    return found[0] if len(found) == 1 else None


@RESOURCE
def test_resource_metrics_are_within_upstreams_bounds(deployed: Deployed, node: Node) -> None:
    """resource_metrics_test.go: node cpu within [1, 1e6] s and working set within [10 MB, capacity]; the
    container's and the pod's cpu within [0, 100] s and working set within [10 kB, 80 MB]."""
    page = node.resource_metrics()
    pod = deployed.handles[0].pod
    pod_labels = {"namespace": pod.namespace, "pod": pod.name}
    capacity = deployed.expectation.node.memory_capacity
    series = [("node_cpu_usage_seconds_total", {}, Band(1, 1e6, NODE_BOUNDS)),
              ("node_memory_working_set_bytes", {}, Band(10 * MB, capacity, NODE_BOUNDS)),
              ("container_cpu_usage_seconds_total", {**pod_labels, "container": NAME}, Band(0, 100, BOUNDS)),
              ("container_memory_working_set_bytes", {**pod_labels, "container": NAME}, Band(10 * KB, 80 * MB, BOUNDS)),
              ("pod_cpu_usage_seconds_total", pod_labels, Band(0, 100, BOUNDS)),
              ("pod_memory_working_set_bytes", pod_labels, Band(10 * KB, 80 * MB, BOUNDS))]
    assert_matches("resource metrics bounds", [
        _row("container" if "container" in labels else "pod", "/metrics/resource", name, band,
             _value(page, name, labels), BOUNDS if band.reason == BOUNDS else NODE_BOUNDS)
        for name, labels, band in series])


def _cpu_seconds(deployed: Deployed, node: Node, level: str) -> list[ComparedValue]:
    pod = deployed.handles[0].pod
    labels = {"namespace": pod.namespace, "pod": pod.name, **({"container": NAME} if level == "container" else {})}
    before = _files(deployed, level)
    value = _value(node.resource_metrics(), f"{level}_cpu_usage_seconds_total", labels)
    after = _files(deployed, level)
    band = Band(before.keyed("cpu.stat")["usage_usec"] / 1e6, after.keyed("cpu.stat")["usage_usec"] / 1e6,
                "cpu.stat usage_usec read before and after, µs / 1e6")
    rule = f"{COUNTER}; resource_metrics.go: seconds = usageCoreNanoSeconds / 1e9"
    return [_row(level, after.path, f"{level}_cpu_usage_seconds_total", band, value, rule)]


@RESOURCE
@pytest.mark.parametrize("level", ["container", "pod"])
def test_resource_metrics_cpu_lies_between_the_cgroup_reads(deployed: Deployed, node: Node, level: str) -> None:
    """{level}_cpu_usage_seconds_total between two reads of the cgroup's cpu.stat usage_usec."""
    assert_matches(f"resource metrics {level} cpu", _bracketed("the cpu counter lies between the cgroup reads",
                                                               lambda: _cpu_seconds(deployed, node, level)))
