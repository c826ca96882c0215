"""PSI (KEP-4205): per-pod and per-container cpu/memory/io.pressure readable, a memory stall forced by memory.high
showing up in the stalled container's and its pod's memory.pressure totals, and the kubelet's PSI counters on
/metrics/cadvisor following the kernel's totals.

Source: upstream test/e2e_node/container_metrics_test.go and summary_test.go (KEP-4205 "PSI metrics": the kubelet
reads each pod's and container's cgroup `*.pressure`); kernel Documentation/accounting/psi.rst ("Pressure
interface": `some`/`full` lines of avg10, avg60, avg300 and `total`, the absolute stall time in µs) and
Documentation/admin-guide/cgroup-v2.rst (`cpu.pressure`, `memory.pressure`, `io.pressure` in every non-root
cgroup). The kubelet's counters mirror container_metrics_test.go ("should report container metrics": the
container_pressure_* families) and follow nodeconf.semantics.psi (cadvisor metrics/prometheus.go). The Summary API's
PSI fields (/stats/summary) are checked against the same pressure files by test_summary_api.py.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config
from nodeconf.nodes.base import CgroupFiles, Metrics, Node
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.psi import CONTAINER_LABELS, SOURCE, PsiMetric, metric_seconds, pressure_total, psi_metrics
from suites.toolkit.checks import Deployed, check_pod, settled_evidence, wait_until
from suites.toolkit.compare import ComparedValue, assert_matches, compare_measured, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.toolkit.pods import memhog, workload
from suites.toolkit.tolerance import Band
from suites.upstream.shared import Res, container, make_pod, module_kubelet, shared_deployment

pytestmark = [pytest.mark.kubelet_code, pytest.mark.needs_psi, pytest.mark.min_profile("1.36")]

pytestmark.append(pytest.mark.runs_alone(
    "a memory stall and pressure readings that other pods' load would add to, and the kubelet's PSI metrics"))

PSI = "kernel psi.rst Pressure interface: some/full avg10 avg60 avg300 total (cgroup-v2.rst *.pressure)"
STALL = ("kernel mm/memcontrol.c reclaim_high and mem_cgroup_handle_over_high run inside psi_memstall_enter/leave, "
         "so a task above memory.high stalls; psi.rst: total is the cumulative stall time in µs (never decreases), "
         "counted in the task's cgroup and every ancestor")
RESOURCES = ("cpu", "memory", "io")
PRESSURE_FILES = tuple(f"{r}.pressure" for r in RESOURCES)
HOG_MIB = 96
# memory.high = request + factor × (limit − request) = 16Mi + 0.05 × 240Mi = 28Mi, far below the hog's 96 MiB, so
# every further page it touches is reclaimed for or throttled (Memory QoS, SEMANTICS.md).
FACTOR = 0.05
HOG = Res(mem_req="16Mi", mem_lim="256Mi")
_NUMBER = re.compile(r"=(\d+\.\d+|\d+)")
WIDTH = "the kernel totals read before and after, µs / 1e6"
# How long a kubelet's cadvisor may serve a sample it took earlier (kubelet --housekeeping-interval 10s; cadvisor
# --max_housekeeping_interval 15s): the bracket below is polled that long before it counts as failed.
HOUSEKEEPING_S = 20.0
# A cgroup's cpu.pressure `full` line came with kernel commit e7fcd7622823 "psi: Add PSI_CPU_FULL state" (Linux
# 5.13; measured: 5.10 shows only `some`); memory and io have had it since PSI itself. The kubelet's CPU stalled
# counter is read from that line, so each check of it needs 5.13.
CPU_FULL = pytest.mark.needs_kernel("5.13")
BRACKET = ("psi.rst: total never decreases, so a counter read between two reads of the pressure file lies between "
           "their transforms; " + SOURCE)


def shape(text: str | None) -> str | None:
    """A pressure file with its numbers replaced (avg → F, total → N); None when the file was not read."""
    if text is None:
        return None
    return "\n".join(_NUMBER.sub(lambda m: "=F" if "." in m.group(1) else "=N", line)
                     for line in text.strip().splitlines())


EXPECTED_SHAPE = "\n".join(f"{kind} avg10=F avg60=F avg300=F total=N" for kind in ("some", "full"))


def total(text: str | None, kind: str = "some") -> int:
    """The `total=` of the `some` (or `full`) line; a file without it fails the check."""
    try:
        return pressure_total(text or "", kind)
    except ValueError as err:
        raise AssertionError(str(err)) from None


@pytest.fixture(scope="module")
def config() -> KubeletConfig:
    """Memory QoS throttling only, with a factor that puts the hog's memory.high far below its working set."""
    base = load_kubelet_config(workload("memory-qos/kubelet-throttling-only.yaml"))
    return replace(base, memory_throttling_factor=FACTOR)


@pytest.fixture(scope="module")
def deployed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied,
             config: KubeletConfig) -> Iterator[Deployed]:
    """One Burstable pod: `hog` touches 96 MiB above its memory.high, `idle` sleeps."""
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    kubelet.use(config)
    hog = container("hog", HOG)
    hog["command"] = memhog(HOG_MIB)
    psi_pod = make_pod("psi", [hog, container("idle", Res(cpu_req="10m", mem_req="8Mi"))])
    with shared_deployment(node, oracle, kubelet, [psi_pod]) as running:
        yield running


def _with_psi(files: CgroupFiles) -> CgroupFiles:
    """The files, or a skip when the kernel exposes no pressure file."""
    if "cpu.pressure" not in files:
        pytest.skip("the node's kernel exposes no PSI files (CONFIG_PSI off or booted with psi=0)")
    return files


def _files(deployed: Deployed, name: str) -> CgroupFiles:
    """The pod's cgroup (name "") or a container's, with its three pressure files; skip without PSI."""
    evidence = deployed.handles[0].evidence(PRESSURE_FILES)
    return _with_psi(evidence.pod_cgroup if not name else evidence.container(name).cgroup)


def test_pod_matches_the_oracle(deployed: Deployed) -> None:
    """The PSI pod itself: Burstable, and the hog's memory.high below its working set, as the oracle says."""
    handle, expected = deployed.handles[0], deployed.expectation.pods[0]
    check_pod(handle, expected, QosClass.BURSTABLE)
    high = next(c for c in expected.containers if c.name == "hog").cgroup.files["memory.high"].value
    assert high != "max" and int(high) < HOG_MIB * 2**20, f"oracle memory.high {high} is not below the hog's size"


@pytest.mark.parametrize("resource", [pytest.param("cpu", marks=CPU_FULL), "memory", "io"])
@pytest.mark.parametrize("level", ["pod", "container"])
def test_pressure_file_readable(deployed: Deployed, level: str, resource: str) -> None:
    """`<resource>.pressure` of the pod cgroup and of a container cgroup reads as the kernel's some/full lines."""
    deployed.handles[0].wait_running()
    files = _files(deployed, "" if level == "pod" else "idle")
    file = f"{resource}.pressure"
    assert_matches(f"pod psi {level} {file}", [
        compare_value("psi", "" if level == "pod" else "idle", files.path, f"{file} (numbers masked)",
                      Expected(EXPECTED_SHAPE, PSI), shape(files.get(file)))])


def test_memory_stall_raises_the_hogs_memory_pressure(deployed: Deployed) -> None:
    """The hog above memory.high stalls in reclaim: its container's and its pod's memory.pressure `some` total
    grows (never avg10, a decaying average); its memory.high is the oracle's."""
    handle = deployed.handles[0]
    handle.wait_running()
    settled_evidence(handle)
    first = _files(deployed, "hog").get("memory.pressure")
    first_pod = _files(deployed, "").get("memory.pressure")

    def grew() -> bool:
        return total(_files(deployed, "hog").get("memory.pressure")) > total(first)

    wait_until("the hog's memory.pressure some total grows", grew, timeout=30)
    hog, pod = _files(deployed, "hog"), _files(deployed, "")
    want = next(c for c in deployed.expectation.pods[0].containers if c.name == "hog").cgroup.files["memory.high"]
    assert_matches("pod psi memory stall", [
        compare_value("psi", "hog", hog.path, "memory.high", want, hog.get("memory.high")),
        compare_value("psi", "hog", hog.path, "memory.pressure some total grew", Expected("yes", STALL),
                      "yes" if total(hog.get("memory.pressure")) > total(first) else "no"),
        compare_value("psi", "", pod.path, "memory.pressure some total grew", Expected("yes", STALL),
                      "yes" if total(pod.get("memory.pressure")) > total(first_pod) else "no"),
    ])


def _series(page: Metrics, name: str, labels: dict[str, str]) -> float | None:
    """The one sample of `name` whose labels include `labels` (a kubelet adds id, image and name); None if absent."""
    found = [value for (sample, pairs), value in page.samples.items()
             if sample == name and labels.items() <= dict(pairs).items()]
    if len(found) > 1:
        raise AssertionError(f"{len(found)} series of {name} for {labels}; expected one")
    return found[0] if found else None


def _counted(deployed: Deployed) -> CgroupFiles:
    """The hog's cgroup a kubelet's cadvisor reports: the runtime's scope when the runtime runs the processes in a
    sub-cgroup of it (crun), else the container cgroup; skip without PSI."""
    container = deployed.handles[0].evidence(PRESSURE_FILES).container("hog")
    return _with_psi(container.scope or container.cgroup)


def _bracket(deployed: Deployed, node: Node, metrics: tuple[PsiMetric, ...]) -> list[ComparedValue]:
    """Each metric of the hog between the oracle's transform of its pressure file read just before and just
    after the /metrics/cadvisor read (the cgroup cadvisor reads: _counted)."""
    pod = deployed.handles[0].pod
    labels = dict(zip(CONTAINER_LABELS, ("hog", pod.namespace, pod.name), strict=True))
    before = _counted(deployed)
    page = node.cadvisor_metrics()
    after = _counted(deployed)
    rows = []
    for metric in metrics:
        what = f"{metric.name} between the kernel's {metric.line} totals (s)"
        band = Band(metric_seconds(pressure_total(before.get(metric.file) or "", metric.line)),
                    metric_seconds(pressure_total(after.get(metric.file) or "", metric.line)), WIDTH)
        value = _series(page, metric.name, labels)
        rows.append(compare_value("psi", "hog", after.path, what, Expected(str(band), BRACKET), None) if value is None
                    else compare_measured("psi", "hog", after.path, what, band, value, BRACKET))
    return rows


@CPU_FULL
def test_kubelet_psi_metric_names_are_the_oracles(deployed: Deployed, node: Node, oracle: Oracle,
                                                  config: KubeletConfig) -> None:
    """The container_pressure_* families on /metrics/cadvisor are exactly the profile's (KubeletPSI on: six)."""
    deployed.handles[0].wait_running()
    _files(deployed, "hog")
    want = sorted(m.name for m in psi_metrics(oracle.profile(config)))
    got = sorted({name for name, _ in node.cadvisor_metrics().samples if name.startswith("container_pressure_")})
    assert_matches("pod psi kubelet metric names", [
        compare_value("psi", "", "/metrics/cadvisor", "container_pressure_* names", Expected(",".join(want), SOURCE),
                      ",".join(got))])


@CPU_FULL
def test_kubelet_psi_metrics_follow_the_kernel_counters(deployed: Deployed, node: Node, oracle: Oracle,
                                                        config: KubeletConfig) -> None:
    """Once the hog has stalled (memory.pressure some total > 0), each of its PSI counters on /metrics/cadvisor
    lies between the oracle's transform (µs → s) of the kernel's total read just before and just after."""
    deployed.handles[0].wait_running()
    wait_until("the hog's memory.pressure some total is above 0",
               lambda: total(_files(deployed, "hog").get("memory.pressure")) > 0, timeout=30)
    metrics = psi_metrics(oracle.profile(config))
    rows: list[ComparedValue] = []

    def bracketed() -> bool:
        rows[:] = _bracket(deployed, node, metrics)
        return all(row.ok for row in rows)

    with contextlib.suppress(AssertionError):
        wait_until("the kubelet's PSI counters lie between the kernel's totals", bracketed, timeout=HOUSEKEEPING_S)
    assert_matches("pod psi kubelet metrics", rows)
