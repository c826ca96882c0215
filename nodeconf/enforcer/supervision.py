"""Supervision of container processes on each tick: reap exits, restart with back-off, start what is due, update
phases; and node-pressure eviction on memory.available.

Source: issue 12 (enforcer/agent.py split at its own section banners); kubelet pod_workers.go, eviction_manager.go.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from nodeconf.enforcer import process
from nodeconf.enforcer.agent_core import EVICTION_INTERVAL, TERMINAL, int_or_none, live_cgroup
from nodeconf.enforcer.cri.runtime import CriRuntime
from nodeconf.enforcer.lifecycle import (
    pod_phase,
    ready_to_start,
    restarts,
)
from nodeconf.enforcer.oci_runtime import RuntimeCommandError, RuntimeProcess, container_id
from nodeconf.enforcer.oom_watch import OomWatch
from nodeconf.enforcer.ownership import ForeignCgroup
from nodeconf.enforcer.records import PAUSE, ContainerRecord, PodRecord
from nodeconf.enforcer.state_file import StateFile
from nodeconf.enforcer.systemd_tree import SystemdTree
from nodeconf.semantics.eviction import MEMORY_PRESSURE, PodMemoryUsage, decide_memory_eviction


class Supervision(StateFile):
    """What the agent does on every tick, between requests."""

    def tick(self) -> None:
        """Reap exited processes, restart per restartPolicy with back-off, start what is due, update phases."""
        with self.lock:
            now = time.monotonic()
            changed = False
            for record in list(self.pods.values()):
                if record.phase in TERMINAL:
                    continue
                for c in record.containers:
                    if c.proc is not None and c.proc.poll() is not None:
                        self._exited(record, c, now)
                        changed = True
                if record.desired is not None:
                    self._try_resize(record)
                    changed = True
                changed |= self._start_due(record, now)
                changed |= self._update_phase(record)
            changed |= self._check_eviction(now)
            if changed:
                self.save()

    def _exited(self, record: PodRecord, c: ContainerRecord, now: float) -> None:
        assert c.proc is not None and c.proc.returncode is not None
        code = process.exit_code(c.proc.returncode)
        finished, c.proc = c.proc, None
        oom_kill = self.tree.keyed(c.cgroup, "memory.events").get("oom_kill", 0)
        watch = self.oom_watches.pop(c.cgroup, None)
        oom = max(oom_kill, watch.stop() if watch is not None else 0) > c.oom_kills_at_start
        oom = oom or (isinstance(finished, RuntimeProcess) and finished.oom_killed)
        oom = oom and not self.faults.oom_reason_ignored
        if isinstance(finished, RuntimeProcess):  # read before the runtime removes the cgroup
            finished.runtime.delete(finished.cid)
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

    def _start_due(self, record: PodRecord, now: float) -> bool:
        """Start every container whose turn has come, together; return once each sits in its cgroup."""
        attempted = False
        ready: list[int] = []
        for c in record.containers:
            if c.state == "waiting" and c.next_start <= now and ready_to_start(record.containers, c):
                attempted = True
                fd = self._spawn(record, c)
                if fd is not None:
                    ready.append(fd)
        process.await_ready(ready)
        return attempted

    def _spawn(self, record: PodRecord, c: ContainerRecord) -> int | None:
        """Launch one container's process; its ready fd (None: a runtime started it, or it could not start)."""
        if c.started_at is not None:
            c.restarts += 1
        c.oom_kills_at_start = self.tree.keyed(c.cgroup, "memory.events").get("oom_kill", 0)
        # Computed at each start from the pod's current (resized) resources, as the kubelet's
        # generateLinuxContainerConfig does; a running process keeps the value it started with (runc#4669).
        c.oom_score_adj = self.start_oom_score_adj.get(c.cgroup, c.oom_score_adj)
        log = self._container_log(record, c.name)
        try:
            if isinstance(self.runtime, CriRuntime):
                c.proc, ready = self._cri_spawn(self.runtime, record, c, log), None
            elif self.runtime is not None:
                c.proc, ready = self._runtime_spawn(c, log), None
            elif self.tree.needs_process(c.cgroup):
                c.proc, ready = self._scope_spawn(record, c, log), None
            else:
                c.proc, ready = process.spawn(c.argv, self.tree.dir(c.cgroup), c.oom_score_adj, log)
        except (OSError, RuntimeCommandError, ForeignCgroup) as err:
            c.state, c.reason, c.exit_code = "terminated", "StartError", 128
            record.event("Warning", "Failed", f"Error: failed to start container {c.name}: {err}")
            return None
        c.state, c.reason, c.exit_code, c.started_at = "running", "", None, time.time()
        return ready

    def _runtime_spawn(self, c: ContainerRecord, log: Path) -> RuntimeProcess:
        """`run` the container from its bundle in its cgroup, created (and marked) here first: the runtime's
        `delete` removed it after the previous attempt. A scope is the runtime's to start, once systemd has removed
        the previous attempt's scope of the same name."""
        assert self.runtime is not None
        resources = self.resources.get(c.cgroup)
        if resources is None:
            raise RuntimeCommandError(f"no resources computed for {c.cgroup}")
        scope = self.tree.needs_process(c.cgroup)  # a --systemd-cgroup runtime starts the scope itself
        self.tree.ensure(c.cgroup.rsplit("/", 1)[0] if scope else c.cgroup)
        if scope:  # the same unit name as the attempt before
            self.tree.await_gone(c.cgroup)
        proc = self.runtime.run(container_id(c.cgroup), c.argv, c.oom_score_adj, c.cgroup, resources, log)
        self.sent[c.cgroup] = resources
        if scope:
            try:
                self.tree.adopt(c.cgroup)
            except OSError:
                proc.stop()
                raise
            self.oom_watches[c.cgroup] = OomWatch(self.tree.dir(c.cgroup))
        return proc

    def _cri_spawn(self, runtime: CriRuntime, record: PodRecord, c: ContainerRecord, log: Path) -> RuntimeProcess:
        """The pause record as the pod's sandbox (RunPodSandbox), any other as a container in it (CreateContainer
        + StartContainer) with the resources computed for it; the attempt is the restart count, as the kubelet's."""
        if c.kind == PAUSE:
            pod = record.pod
            return runtime.run_sandbox(pod.name, pod.namespace, pod.uid, record.cgroup, c.restarts,
                                       self.state_dir / "cri-logs" / pod.uid)
        resources = self.resources.get(c.cgroup)
        if resources is None:
            raise RuntimeCommandError(f"no resources computed for {c.cgroup}")
        proc = runtime.run_container(record.cgroup, c.name, c.restarts, c.argv, c.oom_score_adj, resources, log)
        self.sent[c.cgroup] = resources
        return proc

    def _scope_spawn(self, record: PodRecord, c: ContainerRecord, log: Path) -> subprocess.Popen[bytes]:
        """Start the process held before exec, start its systemd scope around it, write the container's values
        there, then let it exec (runc with the systemd driver: Apply(pid), Set, then exec)."""
        if not isinstance(self.tree, SystemdTree):
            raise OSError(f"{c.cgroup}: a scope needs systemd")
        proc, channel = process.spawn_held(c.argv, c.oom_score_adj, log)
        try:
            self.tree.start_scope(c.cgroup, proc.pid)
            for problem in self._scope_started(c.cgroup):
                self.log.error("pod %s: %s", record.ref, problem)
                record.event("Warning", "FailedCgroupWrite", problem)
            self.oom_watches[c.cgroup] = OomWatch(self.tree.dir(c.cgroup))
            process.release(channel)
        except BaseException:
            channel.close()
            process.terminate(proc)
            raise
        return proc

    def _update_phase(self, record: PodRecord) -> bool:
        before = record.phase
        record.phase = pod_phase(record.containers, record.phase)
        if record.phase in TERMINAL and before not in TERMINAL:
            self.log.info("pod %s %s", record.ref, record.phase)
            self._teardown(record)
            self._apply(self._expect())
        return record.phase != before

    def _working_set(self, path: str) -> int:
        """memory.current − inactive_file (the kubelet's working set), 0 when unreadable."""
        current = int_or_none(self.tree.read(path, "memory.current")) or 0
        return max(0, current - self.tree.keyed(path, "memory.stat").get("inactive_file", 0))

    def _check_eviction(self, now: float) -> bool:
        """Every EVICTION_INTERVAL: memory.available against evictionHard; evict the oracle's first pod."""
        if self.node_memory_used is None or now < self.next_eviction_check:
            return False
        self.next_eviction_check = now + EVICTION_INTERVAL
        live = [r for r in self.pods.values() if r.phase not in TERMINAL]
        usages = [PodMemoryUsage(r.pod, {c.name: self._working_set(live_cgroup(c)) for c in r.containers
                                         if c.kind != PAUSE}) for r in live]
        outside = max(0, self.node_memory_used() - sum(self._working_set(r.cgroup) for r in live))
        decision = decide_memory_eviction(usages, self.oracle_facts(), self.oracle_config(), outside)
        changed = decision.memory_pressure != self.conditions[MEMORY_PRESSURE]
        if changed:
            self.conditions[MEMORY_PRESSURE] = decision.memory_pressure
            self.node_events.append({
                "type": "Warning" if decision.memory_pressure else "Normal",
                "reason": "NodeHasInsufficientMemory" if decision.memory_pressure else "NodeHasSufficientMemory",
                "message": f"memory.available {decision.available} against threshold {decision.threshold}",
            })
            self.log.info("MemoryPressure %s (available %d, threshold %d)", decision.memory_pressure,
                          decision.available, decision.threshold)
        if decision.victim is not None:
            record = self.pods[decision.victim.ref]
            self.log.info("evicting pod %s: %s", record.ref, decision.message)
            self._teardown(record)
            record.phase, record.reason, record.message = "Failed", decision.reason, decision.message
            record.disrupted_at = time.time()
            record.event("Warning", decision.reason, decision.message)
            self._apply(self._expect())
            changed = True
        return changed
