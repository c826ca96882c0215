"""Supervision of container processes on each tick: reap exits, restart with back-off, start what is due, update
phases, retry pending resizes; and evict the pod node pressure picks.

Source: issue 12 (supervision); issue 27 item 3 (the agent by composition); kubelet pod_workers.go,
eviction_manager.go.
"""

from __future__ import annotations

import logging
import time

from nodeconf.enforcer import process
from nodeconf.enforcer.enforcement import Enforcement
from nodeconf.enforcer.launcher import Launcher
from nodeconf.enforcer.lifecycle import Backoff, pod_phase, ready_to_start, restarts
from nodeconf.enforcer.pod_table import TERMINAL, PodTable
from nodeconf.enforcer.pressure import NodePressure
from nodeconf.enforcer.records import ContainerRecord, PodRecord


class Supervision:
    """What the agent does on every tick, between requests, and when it starts a pod."""

    def __init__(self, pods: PodTable, launcher: Launcher, enforcement: Enforcement, pressure: NodePressure,
                 backoff: Backoff, log: logging.Logger) -> None:
        self.pods = pods
        self.launcher = launcher
        self.enforcement = enforcement
        self.pressure = pressure
        self.backoff = backoff
        self.log = log

    def tick(self) -> bool:
        """Reap exited processes, restart per restartPolicy with back-off, start what is due, update phases, check
        node pressure; whether anything changed."""
        now = time.monotonic()
        changed = False
        for record in list(self.pods.values()):
            if record.phase in TERMINAL:
                continue
            for c in record.containers:
                if c.proc is not None and c.proc.poll() is not None:
                    self._exited(record, c, now)
                    changed = True
            if record.desired is not None and not self._retry_ignored(record):
                self.enforcement.try_resize(record)
                changed = True
            changed |= self.start_due(record, now)
            changed |= self.update_phase(record)
        return self._check_eviction(now) or changed

    def _retry_ignored(self, record: PodRecord) -> bool:
        """Under `resize-retry=ignore` a Deferred resize is left as it is (kubelet: RetryPendingResizes)."""
        return self.enforcement.oracle.faults.resize_retry_ignored and record.resize_status == "Deferred"

    def _exited(self, record: PodRecord, c: ContainerRecord, now: float) -> None:
        code, oom = self.launcher.reap(c)
        oom = oom and not self.enforcement.oracle.faults.oom_reason_ignored
        reason = "OOMKilled" if oom else ("Completed" if code == 0 else "Error")
        c.exit_code, c.finished_at = code, time.time()
        terminated = {"exitCode": code, "reason": reason, "startedAt": c.started_at, "finishedAt": c.finished_at}
        self.log.info("pod %s container %s exited %d (%s)", record.ref, c.name, code, reason)
        if oom:
            record.event("Warning", "OOMKilling",
                         f"Memory cgroup out of memory: container {c.name} was killed (exit code {code})")
        if restarts(record.pod.restart_policy, c.kind, code):
            c.last_state = {"terminated": terminated}
            c.state, c.reason, c.exit_code = "waiting", "CrashLoopBackOff", None
            c.next_start = now + self.backoff.delay(c.restarts)
            if c.restarts:
                record.event("Warning", "BackOff", f"Back-off restarting failed container {c.name}")
        else:
            c.state, c.reason = "terminated", reason

    def start_due(self, record: PodRecord, now: float) -> bool:
        """Start every container whose turn has come, together; return once each sits in its cgroup."""
        attempted = False
        ready: list[int] = []
        for c in record.containers:
            if c.state == "waiting" and c.next_start <= now and ready_to_start(record.containers, c):
                attempted = True
                fd = self.launcher.start(record, c)
                if fd is not None:
                    ready.append(fd)
        process.await_ready(ready)
        return attempted

    def update_phase(self, record: PodRecord) -> bool:
        """The pod's phase from its containers' states (a pod that ended is torn down); whether it changed."""
        before = record.phase
        record.phase = pod_phase(record.containers, record.phase)
        if record.phase in TERMINAL and before not in TERMINAL:
            self.log.info("pod %s %s", record.ref, record.phase)
            self.enforcement.teardown(record)
            self.enforcement.enforce()
        return record.phase != before

    def _check_eviction(self, now: float) -> bool:
        """Node pressure's check; evict the oracle's first pod."""
        oracle = self.enforcement.oracle
        changed, decision = self.pressure.check(now, self.pods.live(), oracle.facts_used(), oracle.config_used(),
                                                ignore_priority=oracle.faults.eviction_ignores_priority)
        if decision is None or decision.victim is None:
            return changed
        record = self.pods[decision.victim.ref]
        self.log.info("evicting pod %s: %s", record.ref, decision.message)
        self.enforcement.teardown(record)
        record.phase, record.reason, record.message = "Failed", decision.reason, decision.message
        record.disrupted_at = time.time()
        record.event("Warning", decision.reason, decision.message)
        self.enforcement.enforce()
        return True
