"""The kubelet's /metrics/resource, rendered from the agent's Summary (stats_summary) in the Prometheus text format
as the kubelet's resource metrics collector renders its own summary: one series per value the summary holds, none for
one it left out, each stamped with its stats' time in ms.

Source: kubernetes pkg/kubelet/metrics/collectors/resource_metrics.go (names, help texts, labels container/pod/
namespace; cpu = usageCoreNanoSeconds / 1e9; container_swap_limit_bytes = swapAvailableBytes + swapUsageBytes;
container_start_time_seconds from startTime; resource_scrape_error 0 after a summary read without error).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Iterator, Mapping
from typing import Any

NANOSECONDS_PER_SECOND = 1e9
# name → (type, help) in the collector's order.
FAMILIES = {
    "node_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the node in core-seconds"),
    "node_memory_working_set_bytes": ("gauge", "Current working set of the node in bytes"),
    "node_swap_usage_bytes": ("gauge", "Current swap usage of the node in bytes. Reported only on non-windows systems"),
    "container_start_time_seconds": ("gauge", "Start time of the container since unix epoch in seconds"),
    "container_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the container in core-seconds"),
    "container_memory_working_set_bytes": ("gauge", "Current working set of the container in bytes"),
    "container_swap_usage_bytes": ("gauge", "Current amount of the container swap usage in bytes. Reported only on "
                                            "non-windows systems"),
    "container_swap_limit_bytes": ("gauge", "Current amount of the container swap limit in bytes. Reported only on "
                                            "non-windows systems"),
    "pod_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the pod in core-seconds"),
    "pod_memory_working_set_bytes": ("gauge", "Current working set of the pod in bytes"),
    "pod_swap_usage_bytes": ("gauge", "Current amount of the pod swap usage in bytes. Reported only on non-windows "
                                      "systems"),
    "resource_scrape_error": ("gauge", "1 if there was an error while getting container metrics, 0 otherwise"),
}
Sample = tuple[str, Mapping[str, str], float, "int | None"]


def epoch(stamp: str) -> int:
    """An RFC 3339 UTC time (stats_summary.rfc3339) as Unix seconds."""
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def _usage(name: str, stats: Mapping[str, Any], labels: Mapping[str, str]) -> Iterator[Sample]:
    """The cpu, working set and swap series of one stats object (node, pod or container) that holds them."""
    cpu, memory, swap = stats.get("cpu") or {}, stats.get("memory") or {}, stats.get("swap") or {}
    if "usageCoreNanoSeconds" in cpu:
        yield (f"{name}_cpu_usage_seconds_total", labels, cpu["usageCoreNanoSeconds"] / NANOSECONDS_PER_SECOND,
               epoch(cpu["time"]))
    if "workingSetBytes" in memory:
        yield f"{name}_memory_working_set_bytes", labels, memory["workingSetBytes"], epoch(memory["time"])
    if "swapUsageBytes" in swap:
        yield f"{name}_swap_usage_bytes", labels, swap["swapUsageBytes"], epoch(swap["time"])
    if name == "container" and "swapAvailableBytes" in swap:
        yield ("container_swap_limit_bytes", labels, swap["swapAvailableBytes"] + swap.get("swapUsageBytes", 0),
               epoch(swap["time"]))


def samples(summary: Mapping[str, Any]) -> Iterator[Sample]:
    """Every series of the summary, as the collector walks it: the node, then each pod's containers and the pod."""
    yield from _usage("node", summary["node"], {})
    for pod in summary["pods"]:
        ref = pod["podRef"]
        for c in pod["containers"]:
            labels = {"container": c["name"], "namespace": ref["namespace"], "pod": ref["name"]}
            if "startTime" in c:
                yield "container_start_time_seconds", labels, epoch(c["startTime"]), None
            yield from _usage("container", c, labels)
        yield from _usage("pod", pod, {"namespace": ref["namespace"], "pod": ref["name"]})
    yield "resource_scrape_error", {}, 0, None


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(summary: Mapping[str, Any]) -> str:
    """The page: each family's HELP and TYPE, then its samples (with the sample's time in ms where it has one)."""
    rows = list(samples(summary))
    lines: list[str] = []
    for family, (kind, text) in FAMILIES.items():
        lines += [f"# HELP {family} {text}", f"# TYPE {family} {kind}"]
        for name, labels, value, at in rows:
            if name == family:
                pairs = ",".join(f'{k}="{_escape(labels[k])}"' for k in sorted(labels))
                series = f"{name}{{{pairs}}}" if pairs else name
                lines.append(f"{series} {float(value)!r}" + (f" {at * 1000}" if at is not None else ""))
    return "\n".join(lines) + "\n"
