"""The agent's read-only endpoints that serve a kubelet's metrics and stats pages from the live cgroups: /metrics,
/metrics/cadvisor, /stats/summary and /metrics/resource, each read under the agent's lock.

Source: issue 27 item 3 (the agent by composition); the pages' sources are in metrics, stats_summary and
resource_metrics.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

from nodeconf.enforcer import readings, resource_metrics, stats_summary
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.enforcement import Enforcement
from nodeconf.enforcer.metrics import render, render_cadvisor
from nodeconf.enforcer.oracle_view import OracleView
from nodeconf.enforcer.pod_table import PodTable
from nodeconf.semantics.cgroup_paths import kubepods
from nodeconf.semantics.psi import psi_metrics


def node_name() -> str:
    """The kubelet's default node name: the host name, lowercased (nodeutil.GetHostname)."""
    return socket.gethostname().strip().lower()


def _meminfo() -> str | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            return handle.read()
    except OSError:
        return None


class Readouts:
    """The metrics and stats pages of one agent's pods."""

    def __init__(self, tree: CgroupTree, pods: PodTable, oracle: OracleView, enforcement: Enforcement,
                 lock: threading.RLock) -> None:
        self.tree, self.pods, self.oracle, self.enforcement, self.lock = tree, pods, oracle, enforcement, lock

    def metrics(self) -> str:
        with self.lock:
            return render(self.enforcement.expect().metrics, readings.swap_rows(self.tree, self.pods.live()))

    def cadvisor_metrics(self) -> str:
        """/metrics/cadvisor: the profile's PSI counters of each running container, read from its cgroup's
        pressure files (readings.pressure_rows)."""
        with self.lock:
            metrics = psi_metrics(self.oracle.profile())
            rows = readings.pressure_rows(self.tree, self.pods.live(), sorted({m.file for m in metrics}))
            return render_cadvisor(metrics, rows, micro=self.oracle.faults.psi_metrics_micro)

    def stats_summary(self) -> dict[str, Any]:
        """/stats/summary: the live pods' stats and the kubepods cgroup's, PSI with the profile's KubeletPSI."""
        with self.lock:
            with_psi = bool(psi_metrics(self.oracle.profile()))
            return stats_summary.summary(self.tree, self.pods.live(), kubepods(self.oracle.config.cgroup_driver),
                                         node_name(), with_psi, _meminfo() if self.tree.kernel else None)

    def resource_metrics(self) -> str:
        """/metrics/resource: rendered from the summary, as the kubelet's collector does."""
        return resource_metrics.render(self.stats_summary())
