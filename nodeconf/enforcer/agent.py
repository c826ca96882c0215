"""The agent's operations: admit pods through the oracle, run, read back, resize and delete them, one per request.

Its state and shared steps are in agent_core.py, the state file in state_file.py, the supervision of processes
and eviction in supervision.py (issue 12: agent.py split at its own section banners).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf import names
from nodeconf.cgroup_files import evidence_files
from nodeconf.enforcer import oci_bundle, process, reserved
from nodeconf.enforcer.agent_core import LOG_FILE, STATE_FILE, TERMINAL, AgentError, live_cgroup
from nodeconf.enforcer.metrics import render, render_cadvisor
from nodeconf.enforcer.ownership import foreign_message, is_marked
from nodeconf.enforcer.patch import patched_pod
from nodeconf.enforcer.records import INIT, PAUSE, REGULAR, SIDECAR, ContainerRecord, PodRecord
from nodeconf.enforcer.supervision import Supervision
from nodeconf.enforcer.wire import ExecDoc
from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.manifest import Pod, object_from_dict
from nodeconf.semantics.expectation import ContainerExpectation
from nodeconf.semantics.profile import DEFAULT_VERSION, profile_for
from nodeconf.semantics.psi import psi_metrics
from nodeconf.workloads import SLEEPER


class Agent(Supervision):
    """One node agent; every public method is one API operation and holds the lock."""

    def configure(self, config_doc: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
        """Take a KubeletConfiguration (as a kubelet restart would) and rewrite every value for it."""
        with self.lock:
            try:
                config = kubelet_config_from_dict(config_doc, source="configure")
                profile_for(version or self.version, config)
                reserves = self.reserve_paths(config)
            except (InputError, ValueError) as err:
                raise AgentError(str(err)) from None
            foreign = reserved.refusal(self.tree, reserves)
            if foreign is not None:
                raise AgentError(f"configure: enforced reserve cgroup: {foreign}")
            if config.cgroup_driver != self.config.cgroup_driver and self._active():
                raise AgentError(f"configure: cgroupDriver cannot change from {self.config.cgroup_driver} to "
                                 f"{config.cgroup_driver} while pods run (delete them first)")
            if config.cgroup_driver != self.config.cgroup_driver:
                self._remove_tree()
            self.config, self.version = config, version or self.version
            warnings = self._apply_logged()
            self.save()
            return {"warnings": list(warnings)}

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
        if directory.exists() and not is_marked(directory, self.tree.kernel, self.tree.owner):
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

    def pods_status(self) -> dict[str, Any]:
        with self.lock:
            return {"pods": [r.to_dict() for r in self.pods.values()], "nodeEvents": self.node_events}

    def evidence(self, ref: str, extra_files: Sequence[str] = ()) -> dict[str, Any]:
        """One pod's evidence at once: every file of its containers, pause, pod, QoS and kubepods cgroups,
        container pids and their oom_score_adj, and its status."""
        with self.lock:
            record = self._record(ref)
            files = tuple(evidence_files(extra_files))
            where = {c.name: self.tree.process_cgroup(live_cgroup(c)) for c in record.containers}
            paths = [*_ancestors(record.cgroup), record.cgroup, *(c.cgroup for c in record.containers), *where.values()]
            read = {path: self.tree.read_many(path, files) for path in dict.fromkeys(paths)}
            cgroups = {path: found for path, found in read.items() if found is not None}
            processes = {}
            for c in record.containers:  # where the runtime put the process (crun: a sub-cgroup of its scope)
                procs = (cgroups.get(where[c.name]) or {}).get("cgroup.procs") or ""
                pids = [int(p) for p in procs.split()] if self.tree.kernel else ([c.pid] if c.pid else [])
                processes[c.name if c.kind != PAUSE else "POD"] = {
                    "pids": pids, "oomScoreAdj": {str(p): process.read_oom_score_adj(p) for p in pids},
                    "cgroup": where[c.name],
                }
            return {"status": record.to_dict(), "cgroups": cgroups, "processes": processes}

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> dict[str, Any]:
        """The node-level cgroups the oracle describes (kubepods and QoS slices) and the enforced reserve cgroups
        the agent made, as read back now."""
        with self.lock:
            files = tuple(evidence_files(extra_files))
            read = {p: self.tree.read_many(p, files) for p in sorted(self._expect().cgroups)}
            for path in reserved.made(self.tree, sorted(self.reserves)):
                read[path] = reserved.reserve_tree(self.tree, path).read_many(path, files)
            return {p: found for p, found in read.items() if found is not None}

    def exec_in(self, ref: str, container: str, argv: Sequence[str], timeout: float) -> ExecDoc:
        """Run argv inside a container's cgroup with its oom_score_adj (kubectl exec); in its namespaces when a
        runtime started it."""
        with self.lock:
            c = self._record(ref).container(container)
            if c.state != "running" or c.proc is None:
                raise AgentError(f"container {container} of pod {ref} is not running")
            directory, adj = self.tree.dir(self.tree.process_cgroup(live_cgroup(c))), c.oom_score_adj
            enter = c.proc.pid if self.runtime is not None else None
        return _run(argv, directory, adj, timeout, enter)

    def exec_in_reserve(self, path: str, argv: Sequence[str], timeout: float) -> ExecDoc:
        """Run argv inside an enforced reserve cgroup this agent made (a system daemon under system-reserved)."""
        with self.lock:
            if path not in reserved.made(self.tree, self.reserves):
                raise AgentError(f"{path} is not an enforced reserve cgroup of this agent")
            directory = reserved.reserve_tree(self.tree, path).dir(path)
        return _run(argv, directory, 0, timeout)

    def resize(self, ref: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """In-place resize: the oracle decides apply now, defer (retried each tick) or refuse with its message."""
        with self.lock:
            record = self._record(ref)
            if record.phase in TERMINAL:
                raise AgentError(f"pod {ref} is {record.phase}; it cannot be resized")
            spec = patch.get("spec")
            if self.faults.sidecar_resize_ignored and isinstance(spec, Mapping):  # init containers keep theirs
                patch = {**patch, "spec": {k: v for k, v in spec.items() if k != "initContainers"}}
            try:
                desired = patched_pod(record.desired or record.pod, patch)
            except InputError as err:
                raise AgentError(f"resize of {ref}: {err}") from None
            record.desired = desired
            self._try_resize(record)
            self.save()
            return {"status": record.resize_status, "message": record.resize_message}

    def delete(self, ref: str) -> dict[str, Any]:
        """Kill the pod's processes, remove its cgroups and forget it; the sums are rewritten without it."""
        with self.lock:
            record = self._record(ref)
            self._teardown(record)
            del self.pods[ref]
            self._apply(self._expect())
            self.save()
            return {"deleted": ref}

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

    def cadvisor_metrics(self) -> str:
        """/metrics/cadvisor: the profile's PSI counters of each running container, read from its cgroup's
        pressure files (labels as the kubelet's containerPrometheusLabelsFunc: container, id, image, name,
        namespace, pod)."""
        with self.lock:
            metrics = psi_metrics(self.profile())
            files = sorted({m.file for m in metrics})
            rows = []
            for record in self.pods.values():
                for c in record.containers:
                    if c.kind == PAUSE or record.phase in TERMINAL:
                        continue
                    image = next((s.image for s in record.pod.all_containers if s.name == c.name), "")
                    labels = {"container": c.name, "id": "/" + c.cgroup, "image": image, "name": "",
                              "namespace": record.pod.namespace, "pod": record.pod.name}
                    rows.append((labels, {f: self.tree.read(c.cgroup, f) for f in files}))
            return render_cadvisor(metrics, rows, micro=self.faults.psi_metrics_micro)

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

    def reset(self) -> dict[str, Any]:
        """Delete every pod and namespace object and go back to the default configuration."""
        with self.lock:
            self.shutdown()
            self.config, self.version, self.objects, self.object_docs = KubeletConfig(), DEFAULT_VERSION, [], []
            self.node_events.clear()
            self._apply_logged()
            self.save()
            return {"reset": True}

    def node_status(self) -> dict[str, Any]:
        with self.lock:
            return {"conditions": dict(self.conditions), "events": list(self.node_events)}


def _run(argv: Sequence[str], directory: Path, oom_score_adj: int, timeout: float,
         enter: int | None = None) -> ExecDoc:
    """argv run to completion in the cgroup directory (and in the namespaces of the container whose process is
    `enter`): its exit code and output."""
    if not argv or not all(isinstance(a, str) for a in argv):
        raise AgentError("exec needs a non-empty list of strings")
    prefix: Sequence[str] = ()
    if enter is not None:
        if not directory.is_relative_to(oci_bundle.CGROUP_TREE):  # the path the container sees it at
            raise AgentError(f"{directory} is not under {oci_bundle.CGROUP_TREE}, where containers see cgroups")
        prefix = oci_bundle.entering(enter)
    rc, out, err = process.run_in(argv, directory, oom_score_adj, timeout, prefix)
    return {"rc": rc, "stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace")}


def _container_record(ce: ContainerExpectation, pod: Pod | None) -> ContainerRecord:
    """The record of an expected container (the pause process when pod is None) with its argv and kind."""
    kind, argv = PAUSE, SLEEPER
    if pod is not None:
        spec = next(c for c in pod.all_containers if c.name == ce.name)
        argv = process.container_argv(spec.command, spec.args)
        kind = REGULAR if spec in pod.containers else (SIDECAR if spec.is_sidecar else INIT)
    return ContainerRecord(name=ce.name, kind=kind, cgroup=ce.cgroup.path, argv=argv,
                           oom_score_adj=int(ce.oom_score_adj.value))


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
