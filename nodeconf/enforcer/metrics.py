"""The agent's /metrics and /metrics/cadvisor texts in the Prometheus exposition format (text format 0.0.4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from nodeconf.semantics.psi import PsiMetric, metric_seconds, pressure_total

# Help texts of the kubelet metrics the oracle computes (pkg/kubelet/metrics/metrics.go).
HELP = {
    "kubelet_node_swap_allocated_bytes": "Sum of limits.swap of the pods on the node (KEP-5359).",
    "kubelet_memory_qos_node_memory_min_bytes": "Sum of memory.min of Guaranteed pods (Memory QoS).",
    "kubelet_memory_qos_node_memory_low_bytes": "Sum of memory.low of Burstable pods (Memory QoS).",
}
CONTAINER_SWAP = "container_swap_usage_bytes"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(node_metrics: Mapping[str, int],
           container_swap: Iterable[tuple[str, str, str, int]]) -> str:
    """Gauges for the node metrics, and container_swap_usage_bytes{namespace,pod,container}."""
    lines: list[str] = []
    for name in sorted(node_metrics):
        lines += [f"# HELP {name} {HELP.get(name, name)}", f"# TYPE {name} gauge", f"{name} {node_metrics[name]}"]
    lines += [f"# HELP {CONTAINER_SWAP} Current swap usage of the container (memory.swap.current).",
              f"# TYPE {CONTAINER_SWAP} gauge"]
    for namespace, pod, container, value in container_swap:
        labels = _labels({"container": container, "namespace": namespace, "pod": pod})
        lines.append(f"{CONTAINER_SWAP}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def _labels(labels: Mapping[str, str]) -> str:
    return ",".join(f'{key}="{_escape(labels[key])}"' for key in sorted(labels))


Series = tuple[Mapping[str, str], Mapping[str, "str | None"]]


def render_cadvisor(metrics: Sequence[PsiMetric], containers: Iterable[Series], micro: bool = False) -> str:
    """The oracle's PSI counters for each (labels, pressure files) container whose file reads; `micro` (the
    `psi-metrics=micro` fault) reports the kernel's µs instead of seconds."""
    rows = list(containers)
    lines: list[str] = []
    for metric in metrics:
        lines += [f"# HELP {metric.name} {metric.line} total of {metric.file}, in seconds (KEP-4205).",
                  f"# TYPE {metric.name} counter"]
        for labels, files in rows:
            total = _total_or_none(files.get(metric.file), metric.line)
            if total is not None:
                value = float(total) if micro else metric_seconds(total)
                lines.append(f"{metric.name}{{{_labels(labels)}}} {value!r}")
    return "\n".join(lines) + "\n"


def _total_or_none(text: str | None, line: str) -> int | None:
    """The line's total, None when the file is missing or not a pressure file."""
    if text is None:
        return None
    try:
        return pressure_total(text, line)
    except ValueError:
        return None
