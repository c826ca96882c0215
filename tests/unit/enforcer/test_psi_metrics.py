"""The kubelet's PSI counters (KEP-4205): the oracle's names per profile and the µs → seconds transform, and the
agent's /metrics/cadvisor rendering of them, with the `psi-metrics=micro` fault.

Source: kubernetes pkg/features/kube_features.go (KubeletPSI beta, on from 1.34); cadvisor metrics/prometheus.go.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from nodeconf.enforcer.lifecycle import Faults
from nodeconf.enforcer.metrics import render_cadvisor
from nodeconf.enforcer.oci_runtime import RuntimeProcess
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import parse_metrics
from nodeconf.semantics.profile import SUPPORTED_VERSIONS, profile_for
from nodeconf.semantics.psi import metric_seconds, pressure_total, psi_metrics
from tests.unit.enforcer.enforcer_support import res_demo, running_agent

# The six names of the docs' node-metrics page, each with the pressure file and line cadvisor reads.
UPSTREAM = {
    "container_pressure_cpu_stalled_seconds_total": ("cpu.pressure", "full"),
    "container_pressure_cpu_waiting_seconds_total": ("cpu.pressure", "some"),
    "container_pressure_memory_stalled_seconds_total": ("memory.pressure", "full"),
    "container_pressure_memory_waiting_seconds_total": ("memory.pressure", "some"),
    "container_pressure_io_stalled_seconds_total": ("io.pressure", "full"),
    "container_pressure_io_waiting_seconds_total": ("io.pressure", "some"),
}
MEMORY = ("some avg10=1.50 avg60=0.30 avg300=0.07 total=2500000\n"
          "full avg10=0.90 avg60=0.20 avg300=0.04 total=1250001")
IDLE = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"
LABELS = {"container": "hog", "id": "/kubepods.slice/x", "image": "", "name": "", "namespace": "ns", "pod": "psi"}


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_every_profile_exposes_the_six_counters(version: str) -> None:
    metrics = psi_metrics(profile_for(version))
    assert {m.name: (m.file, m.line) for m in metrics} == UPSTREAM
    assert len(metrics) == len(UPSTREAM)


def test_the_gate_off_exposes_none() -> None:
    assert psi_metrics(profile_for("1.38", KubeletConfig(feature_gates={"KubeletPSI": False}))) == ()


@pytest.mark.parametrize(("line", "want"), [("some", 2500000), ("full", 1250001)], ids=["some", "full"])
def test_pressure_total_reads_the_line(line: str, want: int) -> None:
    assert pressure_total(MEMORY, line) == want


@pytest.mark.parametrize("text", ["", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0", "full avg10=0.00"],
                         ids=["empty", "no-full-line", "no-total"])
def test_pressure_total_without_the_line_is_an_error(text: str) -> None:
    with pytest.raises(ValueError, match="'full'"):
        pressure_total(text, "full")


@pytest.mark.parametrize(("total_us", "seconds"), [(0, 0.0), (1, 0.000001), (2500000, 2.5), (1250001, 1.250001)])
def test_metric_seconds_is_microseconds_over_a_million(total_us: int, seconds: float) -> None:
    assert metric_seconds(total_us) == seconds


def _rendered(micro: bool) -> dict[str, float]:
    text = render_cadvisor(psi_metrics(profile_for("1.38")), [
        (LABELS, {"cpu.pressure": IDLE, "memory.pressure": MEMORY, "io.pressure": None}),
    ], micro=micro)
    samples = parse_metrics(text).samples
    assert {labels for _, labels in samples} == {tuple(sorted(LABELS.items()))}
    return {name: value for (name, _), value in samples.items()}


def test_render_gives_seconds_for_each_readable_file() -> None:
    assert _rendered(micro=False) == {
        "container_pressure_cpu_stalled_seconds_total": 0.0,
        "container_pressure_cpu_waiting_seconds_total": 0.0,
        "container_pressure_memory_stalled_seconds_total": 1.250001,
        "container_pressure_memory_waiting_seconds_total": 2.5,
    }


def test_the_micro_fault_reports_microseconds() -> None:
    assert Faults.parse(["psi-metrics=micro"]).psi_metrics_micro
    rendered = _rendered(micro=True)
    assert rendered["container_pressure_memory_waiting_seconds_total"] == 2500000.0
    assert rendered["container_pressure_memory_stalled_seconds_total"] == 1250001.0


def test_render_declares_every_family_as_a_counter() -> None:
    text = render_cadvisor(psi_metrics(profile_for("1.38")), [])
    assert [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")] == list(UPSTREAM)
    assert {line.split()[3] for line in text.splitlines() if line.startswith("# TYPE")} == {"counter"}


@pytest.mark.parametrize(("fault", "want"), [((), 2.5), (("psi-metrics=micro",), 2500000.0)], ids=["seconds", "micro"])
def test_the_agent_serves_its_containers_counters(tmp_path: Path, fault: tuple[str, ...], want: float) -> None:
    """The agent reads each running container's pressure files (a stand-in tree here) into /metrics/cadvisor."""
    for agent in running_agent(tmp_path, Faults.parse(fault)):
        doc = res_demo()
        hello = next(c for c in agent.run_pod(doc)["status"]["containers"] if c["name"] == "hello")
        (agent.tree.dir(hello["cgroup"]) / "memory.pressure").write_text(MEMORY + "\n")
        samples = parse_metrics(agent.readouts.cadvisor_metrics()).samples
        labels = {"container": "hello", "id": "/" + hello["cgroup"],
                  "image": doc["spec"]["containers"][0]["image"], "name": "", "namespace": "default",
                  "pod": "res-demo"}
        key = tuple(sorted(labels.items()))
        assert samples[("container_pressure_memory_waiting_seconds_total", key)] == want
        assert ("container_pressure_cpu_waiting_seconds_total", key) not in samples, "no cpu.pressure, no series"


@pytest.mark.parametrize(("endpoint", "file", "text", "metric", "want"), [
    ("cadvisor_metrics", "memory.pressure", MEMORY, "container_pressure_memory_waiting_seconds_total", 2.5),
    ("metrics", "memory.swap.current", "4096", "container_swap_usage_bytes", 4096.0),
], ids=["psi", "swap"])
def test_a_cri_runtimes_container_is_read_in_the_runtimes_own_scope(tmp_path: Path, endpoint: str, file: str,
                                                                    text: str, metric: str, want: float) -> None:
    """Under a CRI runtime a container's process lives in the runtime's scope (cri-containerd-<id>.scope), not at
    the oracle's path: its series are read there (the sid containerd run served no PSI series)."""
    for agent in running_agent(tmp_path, Faults.parse(())):
        agent.run_pod(res_demo())
        record = next(iter(agent.pods.live()))
        hello = next(c for c in record.containers if c.name == "hello")
        scope = hello.cgroup.rsplit("/", 1)[0] + "/cri-containerd-0123.scope"
        agent.tree.dir(scope).mkdir(parents=True, exist_ok=True)
        (agent.tree.dir(scope) / file).write_text(text + "\n")
        started, hello.proc = hello.proc, cast(RuntimeProcess, SimpleNamespace(cgroup=scope))  # a CRI record
        try:
            samples = parse_metrics(getattr(agent.readouts, endpoint)()).samples
        finally:
            hello.proc = started
        found = [(dict(key).get("id"), value) for (name, key), value in samples.items()
                 if name == metric and dict(key)["container"] == "hello"]
        assert found == [("/" + scope if endpoint == "cadvisor_metrics" else None, want)]
