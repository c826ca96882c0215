"""The kubelet's PSI metrics (KEP-4205): which counters /metrics/cadvisor exposes and how each derives from a
cgroup's `<resource>.pressure` file.

Source: kubernetes pkg/features/kube_features.go (KubeletPSI: alpha 1.33, beta and on from 1.34) and the docs'
node-metrics page (with KubeletPSI the six names below on /metrics/cadvisor, also in the Summary API); google/cadvisor
metrics/prometheus.go (NewPrometheusCollector: container_pressure_<resource>_stalled_seconds_total =
asMicrosecondsToSeconds(PSI.Full.Total), _waiting_seconds_total = asMicrosecondsToSeconds(PSI.Some.Total), counters
labelled per container); kernel Documentation/accounting/psi.rst (`total` is the cumulative stall time in µs).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeconf.semantics.profile import Profile

GATE = "KubeletPSI"
RESOURCES = ("cpu", "memory", "io")
# The pressure-file line behind each metric suffix: `full` = no task could progress, `some` = at least one waited.
_LINES = (("stalled", "full"), ("waiting", "some"))
MICROSECONDS_PER_SECOND = 1_000_000
# The labels the kubelet's cadvisor collector puts on a container's series (pkg/kubelet/server/server.go
# containerPrometheusLabelsFunc: container, pod, namespace; cadvisor adds id, image, name).
CONTAINER_LABELS = ("container", "namespace", "pod")
SOURCE = ("KEP-4205 KubeletPSI (kube_features.go, on from 1.34); cadvisor metrics/prometheus.go: "
          "container_pressure_<r>_stalled_seconds_total = full total µs / 1e6, _waiting_ = some total µs / 1e6")


@dataclass(frozen=True)
class PsiMetric:
    """One PSI counter of /metrics/cadvisor: its name and the `some`/`full` line of `<resource>.pressure` it reads."""

    name: str
    resource: str
    line: str

    @property
    def file(self) -> str:
        return f"{self.resource}.pressure"


def psi_metrics(profile: Profile) -> tuple[PsiMetric, ...]:
    """The PSI counters the profile's kubelet exposes per container; none with KubeletPSI off."""
    if not profile.gate(GATE):
        return ()
    return tuple(PsiMetric(f"container_pressure_{resource}_{suffix}_seconds_total", resource, line)
                 for resource in RESOURCES for suffix, line in _LINES)


def pressure_total(text: str, line: str) -> int:
    """The `total=` (µs) of the `some` or `full` line of a pressure file; ValueError when the line is missing."""
    for row in text.splitlines():
        if row.startswith(line + " "):
            for field in row.split():
                if field.startswith("total="):
                    return int(field[len("total="):])
    raise ValueError(f"no {line!r} line with total= in pressure file {text!r}")


def metric_seconds(total_us: int) -> float:
    """The metric's value for a kernel total: microseconds to seconds (cadvisor asMicrosecondsToSeconds)."""
    return total_us / MICROSECONDS_PER_SECOND
