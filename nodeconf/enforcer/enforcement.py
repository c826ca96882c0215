"""Making the node what the oracle says: its expectation for the live pods written to the cgroup tree (and given to
the runtime), a pod torn down, a resize applied when the oracle decides so.

Source: issue 27 item 3 (the agent by composition); kubelet pod_workers.go (teardown), kuberuntime
doPodResizeAction (resize applied to the running containers, restarts per resizePolicy).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from nodeconf.enforcer.cgroup_writer import CgroupWriter, with_node_limits
from nodeconf.enforcer.kept_values import KeptValues
from nodeconf.enforcer.launcher import Launcher, live_cgroup, with_pause
from nodeconf.enforcer.lifecycle import restarts_for_resize
from nodeconf.enforcer.oracle import ContainerUsage
from nodeconf.enforcer.oracle_view import OracleView
from nodeconf.enforcer.pod_table import TERMINAL, PodTable
from nodeconf.enforcer.readings import int_or_none
from nodeconf.enforcer.records import PAUSE, ContainerRecord, PodRecord
from nodeconf.manifest import Pod
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.memory_qos_restart import NODE

APPLIED = "Applied"
# Resize outcomes that stay pending and are asked about again on every tick (PodResizeInProgress, Deferred).
PENDING = ("InProgress", "Deferred")


class Enforcement:
    """The oracle's expectation for the agent's pods, enforced through the cgroup writer and the launcher."""

    def __init__(self, oracle: OracleView, pods: PodTable, cgroups: CgroupWriter, launcher: Launcher,
                 log: logging.Logger) -> None:
        self.oracle = oracle
        self.pods = pods
        self.cgroups = cgroups
        self.launcher = launcher
        self.log = log
        self.kept = KeptValues()  # Memory QoS values a kubelet restart (configure) left in place

    def expect(self, extra: Sequence[Pod] = ()) -> NodeExpectation:
        """The oracle's expectation for the live pods (and the given ones)."""
        return self.oracle.expect([*self.pods.active(), *extra])

    def enforce(self) -> None:
        """Write the expectation for the live pods."""
        self.apply(self.expect())

    def restarted(self, driver_changed: bool) -> None:
        """After a new configuration: keep what a kubelet restart leaves on running pods (KeptValues.restart), nothing
        when the cgroup driver changed or under the memory-qos-restart=ignore fault (every value rewritten, as if each
        pod had just started)."""
        if driver_changed or self.oracle.faults.memory_qos_restart_ignored:
            self.kept.clear()
        else:
            self.kept.restart(self.oracle.profile())

    def apply(self, expectation: NodeExpectation) -> None:
        """Write every value the oracle computes (but the Memory QoS files a restart kept): node level first
        (kubepods with its pids.max and hugetlb), then each active pod and its containers."""
        limits = expectation.node_limits
        hugetlb = not self.oracle.faults.hugetlb_ignored
        self.oracle.keep_cpus(expectation)
        for computed in expectation.cgroups.values():
            cgroup = self.kept.overlay(computed, NODE)
            for problem in self.cgroups.write(with_node_limits(cgroup, limits.get(cgroup.path, {}), hugetlb=hugetlb)):
                self.log.error("%s", problem)
        self.cgroups.write_reserves(expectation, self.oracle.reserve_paths(self.cgroups.tree), hugetlb)
        for computed_pod in expectation.pods:
            record = self.pods.get(computed_pod.pod.ref)
            if record is None or record.phase in TERMINAL or computed_pod.cgroup is None:
                continue
            pe = self.kept.overlay_pod(computed_pod)
            assert pe.cgroup is not None
            pod_cgroup = with_node_limits(pe.cgroup, limits.get(pe.cgroup.path, {}), hugetlb=hugetlb)
            cgroups = [pod_cgroup, *(with_node_limits(c.cgroup, limits.get(c.cgroup.path, {}), pids=False,
                                                      hugetlb=hugetlb)
                                     for c in with_pause(pe.containers, pe.pause))]
            self.launcher.note_oom_score_adj(pe.containers)
            if self.launcher.runtime is not None:  # the container cgroups are the runtime's
                cgroups = [pod_cgroup]
                self.launcher.give_resources(record, pe, limits, self.oracle.profile(), hugetlb)
            for cgroup in cgroups:
                for problem in self.cgroups.write(cgroup):
                    self.log.error("pod %s: %s", record.ref, problem)
                    record.event("Warning", "FailedCgroupWrite", problem)

    def teardown(self, record: PodRecord) -> None:
        """Kill the pod's processes and remove its cgroups."""
        self.launcher.stop_all_for_good(record.containers)
        for c in record.containers:
            if c.state == "running":
                c.state, c.reason, c.exit_code = "terminated", "Killed", 137
        self.cgroups.remove(record.cgroup)
        self.launcher.forget(record.cgroup)
        self.kept.forget(record.cgroup)

    def try_resize(self, record: PodRecord) -> None:
        """Ask the oracle about the pending resize with current usage; apply it when it says so."""
        assert record.desired is not None
        others = [p for p in self.pods.active() if p.ref != record.ref]
        decision = self.oracle.decide_resize(record.pod, record.desired, self._usage(record), others)
        status = str(decision.status)
        changed = (status, decision.message) != (record.resize_status, record.resize_message)
        record.resize_status, record.resize_message = status, decision.message
        if status == APPLIED:
            restart = restarts_for_resize(record.pod, record.desired)
            record.pod, record.desired = record.desired, None
            self.kept.resized(record.cgroup, self.oracle.profile())
            self.enforce()
            for name in restart:
                self._restart_for_resize(record, record.container(name))
        elif status not in PENDING:
            record.desired = None
        if changed:
            kind = "Warning" if status not in (APPLIED, *PENDING) else "Normal"
            record.event(kind, f"Resize{status}", decision.message or status)

    def _usage(self, record: PodRecord) -> dict[str, ContainerUsage]:
        """Each container's memory and swap usage for a resize decision; none under `resize-usage=ignore`."""
        if self.oracle.faults.resize_usage_ignored:
            return {}
        tree = self.cgroups.tree
        return {c.name: ContainerUsage(memory=int_or_none(tree.read(live_cgroup(c), "memory.current")),
                                       swap=int_or_none(tree.read(live_cgroup(c), "memory.swap.current")))
                for c in record.containers if c.kind != PAUSE}

    def _restart_for_resize(self, record: PodRecord, c: ContainerRecord) -> None:
        """Kill a running container whose resizePolicy asks for it; it starts again on the next tick, without
        back-off, and its restart count grows (kubelet: the container is restarted with the new resources)."""
        if c.proc is None or c.state != "running":
            return
        self.launcher.stop(c)
        c.last_state = {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": c.started_at,
                                       "finishedAt": time.time()}}
        c.state, c.reason, c.exit_code, c.next_start = "waiting", "ContainerCreating", None, 0.0
        self.log.info("pod %s container %s restarted for its resize", record.ref, c.name)
        record.event("Normal", "Killing", f"Container {c.name} resize requires restart")
