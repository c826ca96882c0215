"""The agent's core: admit pods through the oracle, write its values, run and supervise container processes."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf.enforcer import names, oci_bundle, process
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.lifecycle import (
    KUBELET_BACKOFF,
    NO_FAULTS,
    Backoff,
    Faults,
    pod_phase,
    ready_to_start,
    restarts,
    restarts_for_resize,
)
from nodeconf.enforcer.metrics import render
from nodeconf.enforcer.oci_runtime import OciRuntime, RuntimeCommandError, RuntimeProcess, container_id
from nodeconf.enforcer.oracle import ContainerUsage, ExpectFn, ResizeFn
from nodeconf.enforcer.ownership import ForeignCgroup, foreign_message, is_marked, kill_recorded, process_start
from nodeconf.enforcer.patch import patched_pod
from nodeconf.enforcer.records import INIT, PAUSE, REGULAR, SIDECAR, ContainerRecord, PodRecord
from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict, kubelet_config_to_dict
from nodeconf.manifest import LimitRange, NamespaceObject, Pod, ResourceQuota, object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu import container_shares
from nodeconf.semantics.eviction import MEMORY_PRESSURE, PodMemoryUsage, decide_memory_eviction
from nodeconf.semantics.expectation import CgroupExpectation, ContainerExpectation, NodeExpectation, PodExpectation
from nodeconf.semantics.profile import DEFAULT_VERSION, Profile, profile_for

APPLIED = "Applied"
# Resize outcomes that stay pending and are asked about again on every tick (PodResizeInProgress, Deferred).
PENDING = ("InProgress", "Deferred")


# Files read as a pod's evidence besides those the oracle expects (cgroup-v2.rst interface files). memory.stat
# and the PSI files are costly to read (a stats flush per read): callers ask for them as extra files.
OBSERVED_FILES = (
    "cgroup.procs", "cpu.weight", "cpu.max", "cpu.stat",
    "memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max", "memory.oom.group",
    "memory.current", "memory.swap.current", "memory.peak", "memory.events", "memory.swap.events", "pids.current",
)
TERMINAL = ("Succeeded", "Failed")
# How often memory.available is checked (kubelet evictionMonitoringPeriod is 10 s; faster here for tests).
EVICTION_INTERVAL = 1.0
STATE_FILE = "state.json"
LOG_FILE = "agent.log"


class AgentError(Exception):
    """A request the agent refuses; the message goes back to the caller as is."""


class Agent:
    """One node agent; every public method is one API operation and holds the lock."""

    def __init__(self, tree: CgroupTree, state_dir: Path, facts: NodeFacts, expect_fn: ExpectFn,
                 resize_fn: ResizeFn, *, node_memory_used: Callable[[], int] | None = None, faults: Faults = NO_FAULTS,
                 backoff: Backoff = KUBELET_BACKOFF, log: logging.Logger | None = None,
                 runtime: OciRuntime | None = None) -> None:
        self.tree = tree
        self.state_dir = state_dir
        self.facts = facts
        self.expect_fn = expect_fn
        self.resize_fn = resize_fn
        self.next_eviction_check = 0.0
        self.node_memory_used = node_memory_used
        self.conditions: dict[str, bool] = {MEMORY_PRESSURE: False}
        self.faults = faults
        self.backoff = backoff
        self.log = log or logging.getLogger("nodeconf.enforcer")
        self.lock = threading.RLock()
        self.config = KubeletConfig()
        self.version = DEFAULT_VERSION
        self.objects: list[NamespaceObject] = []
        self.object_docs: list[dict[str, Any]] = []
        self.pods: dict[str, PodRecord] = {}
        self.written: dict[tuple[str, str], str] = {}
        self.node_events: list[dict[str, str]] = []
        # With a real runtime: each container's linux.resources (by cgroup path) and what a running one was given.
        self.runtime = runtime
        self.resources: dict[str, dict[str, Any]] = {}
        self.sent: dict[str, dict[str, Any]] = {}

    # --- state ----------------------------------------------------------------------------------------

    def save(self) -> None:
        """Write the state file atomically (it lets the agent's pods survive its own restart)."""
        doc = {
            "config": kubelet_config_to_dict(self.config), "version": self.version,
            "objects": self.object_docs, "pods": [self._saved(p) for p in self.pods.values()],
            "nodeEvents": self.node_events,
        }
        tmp = self.state_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(self.state_dir / STATE_FILE)

    def recover(self) -> None:
        """Refuse a node with a kubepods cgroup nodeconf did not create (ForeignCgroup, before any write); kill
        what a crashed agent left, remove its marked cgroups, then restore and restart its pods."""
        with self.lock:
            self.tree.refuse_foreign()
            path = self.state_dir / STATE_FILE
            previous = json.loads(path.read_text()) if path.exists() else None
            kill_recorded(previous)
            for top in self.tree.owned_roots():
                self.log.info("removing cgroup %s left by a previous run", top)
            self._clear_tree()
            if previous is not None:
                self._restore(previous)
            self._apply_logged()
            self.save()

    def _apply_logged(self) -> tuple[str, ...]:
        """Apply the expectation for the current config, logging the oracle's startup warnings (kubelet start)."""
        expectation = self._expect()
        for warning in expectation.warnings:
            self.log.warning("%s", warning)
        self._apply(expectation)
        return tuple(expectation.warnings)

    def _restore(self, previous: Mapping[str, Any]) -> None:
        """Take back config, objects and pods from the state file; running containers start again."""
        self.config = kubelet_config_from_dict(previous["config"], source="agent state")
        self.version = previous["version"]
        self._set_objects(previous["objects"])
        self.node_events = previous["nodeEvents"]
        for doc in previous["pods"]:
            record = PodRecord.from_dict(doc)
            for c in record.containers:
                if c.state == "running":
                    c.state, c.reason, c.next_start = "waiting", "AgentRestarted", 0.0
            self.pods[record.ref] = record
        self.log.info("restored %d pods from the state file", len(self.pods))

    # --- oracle ---------------------------------------------------------------------------------------

    def profile(self) -> Profile:
        return profile_for(self.version, self.config)

    def oracle_facts(self) -> NodeFacts:
        if self.faults.cpu_weight_formula is None:
            return self.facts
        return dataclasses.replace(self.facts, cpu_weight_formula=self.faults.cpu_weight_formula)

    def oracle_config(self) -> KubeletConfig:
        if self.faults.memory_throttling_factor is None:
            return self.config
        return dataclasses.replace(self.config, memory_throttling_factor=self.faults.memory_throttling_factor)

    def _active(self) -> list[Pod]:
        return [r.pod for r in self.pods.values() if r.phase not in TERMINAL]

    def _expect(self, extra: Sequence[Pod] = ()) -> NodeExpectation:
        return self.expect_fn(self.faults.pods_seen([*self._active(), *extra], self.config.swap_behavior),
                              self.oracle_facts(), self.oracle_config(), self.profile(), self.objects)

    # --- writing the tree -----------------------------------------------------------------------------

    def _write(self, cgroup: CgroupExpectation) -> list[str]:
        try:
            self.tree.ensure(cgroup.path)
        except ForeignCgroup as err:
            return [str(err)]
        problems = []
        for file, expected in cgroup.files.items():
            if self.written.get((cgroup.path, file)) == expected.value:
                continue
            try:
                self.tree.write(cgroup.path, file, expected.value)
                self.written[(cgroup.path, file)] = expected.value
            except OSError as err:
                problems.append(f"writing {expected.value!r} to {cgroup.path}/{file}: {err.strerror or err}")
        return problems

    def _apply(self, expectation: NodeExpectation) -> None:
        """Write every value the oracle computes: node level first, then each active pod and its containers."""
        for cgroup in expectation.cgroups.values():
            for problem in self._write(cgroup):
                self.log.error("%s", problem)
        for pe in expectation.pods:
            record = self.pods.get(pe.pod.ref)
            if record is None or record.phase in TERMINAL or pe.cgroup is None:
                continue
            cgroups = [pe.cgroup, *(c.cgroup for c in _with_pause(pe.containers, pe.pause))]
            if self.runtime is not None:  # the container cgroups are the runtime's
                cgroups = [pe.cgroup]
                self._runtime_resources(record, pe)
            for cgroup in cgroups:
                for problem in self._write(cgroup):
                    self.log.error("pod %s: %s", record.ref, problem)
                    record.event("Warning", "FailedCgroupWrite", problem)

    def _runtime_resources(self, record: PodRecord, pe: PodExpectation) -> None:
        """Each container's linux.resources as containerd builds them from the kubelet's CRI values; a change
        goes to a running container through the runtime's `update` (UpdateContainerResources)."""
        assert self.runtime is not None
        for ce in _with_pause(pe.containers, pe.pause):
            if ce is pe.pause:
                resources = oci_bundle.sandbox_resources()
            else:
                spec = next(c for c in pe.pod.all_containers if c.name == ce.name)
                files = {name: e.value for name, e in ce.cgroup.files.items()}
                cri = oci_bundle.cri_resources(files, container_shares(pe.pod, spec, self.profile()))
                resources = oci_bundle.linux_resources(cri, self.facts.has_swap_controller)
            path = ce.cgroup.path
            self.resources[path] = resources
            c = next((c for c in record.containers if c.cgroup == path), None)
            if c is None or not isinstance(c.proc, RuntimeProcess) or c.proc.returncode is not None \
                    or self.sent.get(path) == resources:
                continue
            try:
                self.runtime.update(c.proc.cid, resources)
                self.sent[path] = resources
            except RuntimeCommandError as err:
                self.log.error("pod %s: %s", record.ref, err)
                record.event("Warning", "FailedCgroupWrite", str(err))

    def _forget_written(self, path: str) -> None:
        for key in [k for k in self.written if k[0] == path or k[0].startswith(path + "/")]:
            del self.written[key]
        for cache in (self.resources, self.sent):
            for cgroup in [p for p in cache if p == path or p.startswith(path + "/")]:
                del cache[cgroup]

    # --- operations -----------------------------------------------------------------------------------

    def configure(self, config_doc: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
        """Take a KubeletConfiguration (as a kubelet restart would) and rewrite every value for it."""
        with self.lock:
            try:
                config = kubelet_config_from_dict(config_doc, source="configure")
                profile_for(version or self.version, config)
            except InputError as err:
                raise AgentError(str(err)) from None
            if config.cgroup_driver != self.config.cgroup_driver and self._active():
                raise AgentError(f"configure: cgroupDriver cannot change from {self.config.cgroup_driver} to "
                                 f"{config.cgroup_driver} while pods run (delete them first)")
            if config.cgroup_driver != self.config.cgroup_driver:
                self._remove_tree()
            self.config, self.version = config, version or self.version
            warnings = self._apply_logged()
            self.save()
            return {"warnings": list(warnings)}

    def _set_objects(self, docs: Sequence[Mapping[str, Any]]) -> None:
        objects: list[NamespaceObject] = []
        for doc in docs:
            try:
                obj = object_from_dict(doc, source="objects")
            except InputError as err:
                raise AgentError(str(err)) from None
            if not isinstance(obj, LimitRange | ResourceQuota):
                raise AgentError(f"objects: {obj.name} is a Pod; only LimitRange and ResourceQuota belong here")
            objects.append(obj)
        self.objects, self.object_docs = objects, [dict(d) for d in docs]

    def set_objects(self, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Replace the namespace objects (LimitRange, ResourceQuota) that admission consults."""
        with self.lock:
            self._set_objects(docs)
            self.save()
            return {"objects": len(self.objects)}

    def run_pod(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """Admit a pod through the oracle; refused → its messages and nothing created; else start it."""
        with self.lock:
            try:
                pod = object_from_dict(doc, source="run")
            except InputError as err:
                raise AgentError(str(err)) from None
            if not isinstance(pod, Pod):
                raise AgentError(f"run: expected a Pod, got {type(pod).__name__}")
            _check_names(pod)
            if pod.ref in self.pods:
                raise AgentError(f"pod {pod.ref} already exists")
            expectation = self._expect([pod])
            pe = expectation.pod(pod.name, pod.namespace)
            shared = self._shared_cgroup(pod, pe.cgroup.path) if pe.admitted and pe.cgroup is not None else []
            if not pe.admitted or pe.cgroup is None or shared:
                errors = [*pe.errors, *shared]
                self.log.info("pod %s rejected: %s", pod.ref, "; ".join(errors))
                return {"admitted": False, "errors": errors, "status": None}
            containers = [_container_record(c, pe.pod) for c in pe.containers]
            if pe.pause is not None:
                containers.insert(0, _container_record(pe.pause, None))
            record = PodRecord(pod=pe.pod, qos_class=pe.qos_class.value, cgroup=pe.cgroup.path,
                               containers=containers)
            for event in pe.events:
                record.event(event.type, event.reason, event.message)
            self.pods[pod.ref] = record
            self._apply(expectation)
            self._start_due(record, time.monotonic())
            self.save()
            self.log.info("pod %s admitted (%s)", pod.ref, record.qos_class)
            return {"admitted": True, "errors": [], "status": record.to_dict()}

    def _shared_cgroup(self, pod: Pod, cgroup: str) -> list[str]:
        """The refusal of a pod whose uid (hence cgroup) another pod holds, or whose cgroup exists without
        nodeconf's mark: deleting one would kill the other's processes."""
        for other in self.pods.values():
            if other.pod.uid == pod.uid or other.cgroup == cgroup:
                return [f"pod {pod.ref}: uid {pod.uid} is already used by pod {other.ref} (cgroup {other.cgroup}); "
                        "two pods must not share one uid"]
        directory = self.tree.dir(cgroup)
        if directory.exists() and not is_marked(directory, self.tree.kernel):
            return [f"pod {pod.ref}: {foreign_message(directory)}"]
        return []

    def _record(self, ref: str) -> PodRecord:
        record = self.pods.get(ref)
        if record is None:
            raise AgentError(f"no pod {ref}")
        return record

    def status(self, ref: str) -> dict[str, Any]:
        with self.lock:
            return self._record(ref).to_dict()

    def _saved(self, record: PodRecord) -> dict[str, Any]:
        """The record for the state file: with each process's start time, to tell a reused pid apart later."""
        out = record.to_dict()
        for c in out["containers"]:
            c["pidStart"] = process_start(c["pid"]) if c["pid"] else None
        return out

    def pods_status(self) -> dict[str, Any]:
        with self.lock:
            return {"pods": [r.to_dict() for r in self.pods.values()], "nodeEvents": self.node_events}

    def evidence(self, ref: str, extra_files: Sequence[str] = ()) -> dict[str, Any]:
        """One pod's evidence at once: every file of its containers, pause, pod, QoS and kubepods cgroups,
        container pids and their oom_score_adj, and its status."""
        with self.lock:
            record = self._record(ref)
            files = tuple(dict.fromkeys((*OBSERVED_FILES, *(names.cgroup_file(f) for f in extra_files))))
            paths = _ancestors(record.cgroup) + [record.cgroup] + [c.cgroup for c in record.containers]
            read = {path: self.tree.read_many(path, files) for path in paths}
            cgroups = {path: found for path, found in read.items() if found is not None}
            processes = {}
            for c in record.containers:
                procs = (cgroups.get(c.cgroup) or {}).get("cgroup.procs") or ""
                pids = [int(p) for p in procs.split()] if self.tree.kernel else ([c.pid] if c.pid else [])
                processes[c.name if c.kind != PAUSE else "POD"] = {
                    "pids": pids, "oomScoreAdj": {str(p): process.read_oom_score_adj(p) for p in pids},
                }
            return {"status": record.to_dict(), "cgroups": cgroups, "processes": processes}

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> dict[str, Any]:
        """The node-level cgroups the oracle describes (kubepods and QoS slices) as read back now."""
        with self.lock:
            files = tuple(dict.fromkeys((*OBSERVED_FILES, *(names.cgroup_file(f) for f in extra_files))))
            read = {p: self.tree.read_many(p, files) for p in sorted(self._expect().cgroups)}
            return {p: found for p, found in read.items() if found is not None}

    def exec_in(self, ref: str, container: str, argv: Sequence[str], timeout: float) -> dict[str, Any]:
        """Run argv inside a container's cgroup with its oom_score_adj (kubectl exec)."""
        with self.lock:
            c = self._record(ref).container(container)
            if c.state != "running":
                raise AgentError(f"container {container} of pod {ref} is not running")
            directory, adj = self.tree.dir(c.cgroup), c.oom_score_adj
        if not argv or not all(isinstance(a, str) for a in argv):
            raise AgentError("exec needs a non-empty list of strings")
        rc, out, err = process.run_in(argv, directory, adj, timeout)
        return {"rc": rc, "stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace")}

    def resize(self, ref: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """In-place resize: the oracle decides apply now, defer (retried each tick) or refuse with its message."""
        with self.lock:
            record = self._record(ref)
            if record.phase in TERMINAL:
                raise AgentError(f"pod {ref} is {record.phase}; it cannot be resized")
            try:
                desired = patched_pod(record.desired or record.pod, patch)
            except InputError as err:
                raise AgentError(f"resize of {ref}: {err}") from None
            record.desired = desired
            self._try_resize(record)
            self.save()
            return {"status": record.resize_status, "message": record.resize_message}

    def _usage(self, record: PodRecord) -> dict[str, ContainerUsage]:
        usage = {}
        for c in record.containers:
            if c.kind != PAUSE:
                usage[c.name] = ContainerUsage(
                    memory=_int(self.tree.read(c.cgroup, "memory.current")),
                    swap=_int(self.tree.read(c.cgroup, "memory.swap.current")),
                )
        return usage

    def _try_resize(self, record: PodRecord) -> None:
        """Ask the oracle about the pending resize with current usage; apply it when it says so."""
        assert record.desired is not None
        others = [p for p in self._active() if p.ref != record.ref]
        decision = self.resize_fn(record.pod, record.desired, self._usage(record), self.oracle_facts(),
                                  self.oracle_config(), self.profile(), others)
        status = str(decision.status)
        changed = (status, decision.message) != (record.resize_status, record.resize_message)
        record.resize_status, record.resize_message = status, decision.message
        if status == APPLIED:
            restart = restarts_for_resize(record.pod, record.desired)
            record.pod, record.desired = record.desired, None
            self._apply(self._expect())
            for name in restart:
                self._restart_for_resize(record, record.container(name))
        elif status not in PENDING:
            record.desired = None
        if changed:
            kind = "Warning" if status not in (APPLIED, *PENDING) else "Normal"
            record.event(kind, f"Resize{status}", decision.message or status)

    def _restart_for_resize(self, record: PodRecord, c: ContainerRecord) -> None:
        """Kill a running container whose resizePolicy asks for it; it starts again on the next tick, without
        back-off, and its restart count grows (kubelet: the container is restarted with the new resources)."""
        if c.proc is None or c.state != "running":
            return
        self._stop_process(c)
        c.last_state = {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": c.started_at,
                                       "finishedAt": time.time()}}
        c.state, c.reason, c.exit_code, c.next_start = "waiting", "ContainerCreating", None, 0.0
        self.log.info("pod %s container %s restarted for its resize", record.ref, c.name)
        record.event("Normal", "Killing", f"Container {c.name} resize requires restart")

    def delete(self, ref: str) -> dict[str, Any]:
        """Kill the pod's processes, remove its cgroups and forget it; the sums are rewritten without it."""
        with self.lock:
            record = self._record(ref)
            self._teardown(record)
            del self.pods[ref]
            self._apply(self._expect())
            self.save()
            return {"deleted": ref}

    @staticmethod
    def _stop_process(c: ContainerRecord) -> None:
        """Kill a container's process: through its runtime (which deletes the container) or directly."""
        if isinstance(c.proc, RuntimeProcess):
            c.proc.stop()
        elif c.proc is not None:
            process.terminate(c.proc)
        c.proc = None

    def _teardown(self, record: PodRecord) -> None:
        for c in record.containers:
            self._stop_process(c)
            if c.state == "running":
                c.state, c.reason, c.exit_code = "terminated", "Killed", 137
        self.tree.kill(record.cgroup)
        self.tree.remove(record.cgroup)
        self._forget_written(record.cgroup)

    def metrics(self) -> str:
        with self.lock:
            expectation = self._expect()
            swap = []
            for record in self.pods.values():
                for c in record.containers:
                    if c.kind == PAUSE or record.phase in TERMINAL:
                        continue
                    value = self.tree.read(c.cgroup, "memory.swap.current")
                    if value is not None and value.isdigit():
                        swap.append((record.pod.namespace, record.pod.name, c.name, int(value)))
            return render(expectation.metrics, swap)

    def logs(self, ref: str | None = None, container: str | None = None, limit: int = 1 << 20) -> str:
        """The agent's log, or a container's output; the last `limit` bytes."""
        with self.lock:
            if ref is None:
                path = self.state_dir / LOG_FILE
            else:
                record = self._record(ref)
                name = record.container(container or record.pod.containers[0].name).name
                path = self._container_log(record, name)
        try:
            with open(path, "rb") as handle:
                handle.seek(max(0, path.stat().st_size - limit))
                return handle.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def _container_log(self, record: PodRecord, name: str) -> Path:
        return self.state_dir / "logs" / names.log_file(record.pod.namespace, record.pod.name, name)

    def shutdown(self) -> dict[str, Any]:
        """Kill every process, remove every cgroup of ours and the state file."""
        with self.lock:
            for record in self.pods.values():
                self._teardown(record)
            self._remove_tree()
            self.pods.clear()
            with contextlib.suppress(FileNotFoundError):
                (self.state_dir / STATE_FILE).unlink()
            return {"stopped": True}

    def _remove_tree(self) -> None:
        """Kill whatever runs in our cgroups and remove them all."""
        self._clear_tree()
        self.written.clear()

    def _clear_tree(self) -> None:
        """Kill and remove every marked cgroup; a cgroup of someone else inside ours stays (logged)."""
        for left in self.tree.clear():
            self.log.warning("left %s in place: %s", left, foreign_message(left))

    def reset(self) -> dict[str, Any]:
        """Delete every pod and namespace object and go back to the default configuration."""
        with self.lock:
            self.shutdown()
            self.config, self.version, self.objects, self.object_docs = KubeletConfig(), DEFAULT_VERSION, [], []
            self.node_events.clear()
            self._apply_logged()
            self.save()
            return {"reset": True}

    # --- supervision ----------------------------------------------------------------------------------

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

    def _working_set(self, path: str) -> int:
        """memory.current − inactive_file (the kubelet's working set), 0 when unreadable."""
        current = _int(self.tree.read(path, "memory.current")) or 0
        return max(0, current - self.tree.keyed(path, "memory.stat").get("inactive_file", 0))

    def _check_eviction(self, now: float) -> bool:
        """Every EVICTION_INTERVAL: memory.available against evictionHard; evict the oracle's first pod."""
        if self.node_memory_used is None or now < self.next_eviction_check:
            return False
        self.next_eviction_check = now + EVICTION_INTERVAL
        live = [r for r in self.pods.values() if r.phase not in TERMINAL]
        usages = [PodMemoryUsage(r.pod, {c.name: self._working_set(c.cgroup) for c in r.containers
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

    def node_status(self) -> dict[str, Any]:
        with self.lock:
            return {"conditions": dict(self.conditions), "events": list(self.node_events)}

    def _exited(self, record: PodRecord, c: ContainerRecord, now: float) -> None:
        assert c.proc is not None and c.proc.returncode is not None
        code = process.exit_code(c.proc.returncode)
        finished, c.proc = c.proc, None
        oom = self.tree.keyed(c.cgroup, "memory.events").get("oom_kill", 0) > c.oom_kills_at_start
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
        log = self._container_log(record, c.name)
        try:
            if self.runtime is not None:
                c.proc, ready = self._runtime_spawn(c, log), None
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
        `delete` removed it after the previous attempt."""
        assert self.runtime is not None
        resources = self.resources.get(c.cgroup)
        if resources is None:
            raise RuntimeCommandError(f"no resources computed for {c.cgroup}")
        self.tree.ensure(c.cgroup)
        proc = self.runtime.run(container_id(c.cgroup), c.argv, c.oom_score_adj, c.cgroup, resources, log)
        self.sent[c.cgroup] = resources
        return proc

    def _update_phase(self, record: PodRecord) -> bool:
        before = record.phase
        record.phase = pod_phase(record.containers, record.phase)
        if record.phase in TERMINAL and before not in TERMINAL:
            self.log.info("pod %s %s", record.ref, record.phase)
            self._teardown(record)
            self._apply(self._expect())
        return record.phase != before


def _container_record(ce: ContainerExpectation, pod: Pod | None) -> ContainerRecord:
    """The record of an expected container (the pause process when pod is None) with its argv and kind."""
    kind, argv = PAUSE, process.SLEEPER
    if pod is not None:
        spec = next(c for c in pod.all_containers if c.name == ce.name)
        argv = process.container_argv(spec.command, spec.args)
        kind = REGULAR if spec in pod.containers else (SIDECAR if spec.is_sidecar else INIT)
    return ContainerRecord(name=ce.name, kind=kind, cgroup=ce.cgroup.path, argv=argv,
                           oom_score_adj=int(ce.oom_score_adj.value))


def _with_pause(containers: Sequence[ContainerExpectation],
                pause: ContainerExpectation | None) -> list[ContainerExpectation]:
    return [*([pause] if pause is not None else []), *containers]


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _check_names(pod: Pod) -> None:
    try:
        names.pod_name(pod.name)
        names.label(pod.namespace, "namespace")
        names.uid(pod.uid)
        for c in pod.all_containers:
            names.label(c.name, "container name")
    except names.UnsafeName as err:
        raise AgentError(f"pod {pod.ref}: {err}") from None


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
