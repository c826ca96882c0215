"""The node agent: admit pods through the oracle, run, read back, resize and delete them, one operation per request,
wired from objects with one job each: the oracle's view (oracle_view), the pods (pod_table), the cgroup tree
(cgroup_writer), the runtime (launcher), enforcing the expectation (enforcement), supervision and node pressure,
the metrics and stats pages (readouts), and the state file.

Source: issue 12 (the agent's operations); issue 27 item 3 (the agent by composition).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf.enforcer import oci_bundle, process, readings, reserved
from nodeconf.enforcer.agent_error import AgentError
from nodeconf.enforcer.cgroup_writer import CgroupWriter
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.enforcement import Enforcement
from nodeconf.enforcer.launcher import Launcher, container_log, live_cgroup
from nodeconf.enforcer.lifecycle import KUBELET_BACKOFF, NO_FAULTS, Backoff, Faults
from nodeconf.enforcer.oci_runtime import OciRuntime
from nodeconf.enforcer.oracle import ExpectFn, ResizeFn
from nodeconf.enforcer.oracle_view import OracleView
from nodeconf.enforcer.ownership import kill_recorded
from nodeconf.enforcer.patch import patched_pod
from nodeconf.enforcer.pod_table import TERMINAL, PodTable, admitted_record, check_names
from nodeconf.enforcer.pressure import NodePressure
from nodeconf.enforcer.readouts import Readouts
from nodeconf.enforcer.state_file import LOG_FILE, StateFile
from nodeconf.enforcer.supervision import Supervision
from nodeconf.enforcer.wire import ExecDoc, NodeStatusDoc
from nodeconf.errors import InputError
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.eviction import PidObservation
from nodeconf.semantics.resize import pod_allocated_resources


class Agent:
    """One node agent; every public method is one API operation and holds the lock."""

    def __init__(self, tree: CgroupTree, state_dir: Path, facts: NodeFacts, expect_fn: ExpectFn,
                 resize_fn: ResizeFn, *, node_memory_used: Callable[[], int] | None = None,
                 node_pids: Callable[[], PidObservation] | None = None, faults: Faults = NO_FAULTS,
                 backoff: Backoff = KUBELET_BACKOFF, log: logging.Logger | None = None,
                 runtime: OciRuntime | None = None) -> None:
        self.tree = tree
        self.state_dir = state_dir
        self.facts = facts
        self.log = log or logging.getLogger("nodeconf.enforcer")
        self.lock = threading.RLock()
        self.oracle = OracleView(facts, expect_fn, resize_fn, faults)
        self.pods = PodTable()
        self.cgroups = CgroupWriter(tree, self.log)
        self.launcher = Launcher(self.cgroups, state_dir, facts, self.log, runtime)
        self.enforcement = Enforcement(self.oracle, self.pods, self.cgroups, self.launcher, self.log)
        self.pressure = NodePressure(tree, node_memory_used, self.log, node_pids)
        self.supervision = Supervision(self.pods, self.launcher, self.enforcement, self.pressure, backoff, self.log)
        self.state_file = StateFile(state_dir)
        self.readouts = Readouts(tree, self.pods, self.oracle, self.enforcement, self.lock)

    def save(self) -> None:
        """Write the state file (it lets the agent's pods survive its own restart)."""
        self.state_file.save({**self.oracle.to_state(), "pods": self.pods.saved(), "nodeEvents": self.pressure.events,
                              "keptValues": self.enforcement.kept.to_state()})

    def recover(self) -> None:
        """Refuse a node with a kubepods cgroup nodeconf did not create (ForeignCgroup, before any write); kill
        what a crashed agent left, remove its marked cgroups, then restore and restart its pods."""
        with self.lock:
            self.tree.refuse_foreign()
            previous = self.state_file.load()
            kill_recorded(previous)
            for top in self.tree.owned_roots():
                self.log.info("removing cgroup %s left by a previous run", top)
            self.cgroups.reserves = set(reserved.in_state(self.tree, previous))
            self.cgroups.clear()
            if previous is not None:
                self.oracle.restore(previous)
                self.pressure.events = previous["nodeEvents"]
                self.pods.restore(previous["pods"])
                self.enforcement.kept.restore(previous.get("keptValues"))
                self.log.info("restored %d pods from the state file", len(self.pods))
            self._enforce_logged()
            self.save()

    def tick(self) -> None:
        """One round of supervision (supervision.Supervision.tick); saved when anything changed."""
        with self.lock:
            if self.supervision.tick():
                self.save()

    def _enforce_logged(self) -> tuple[str, ...]:
        """Enforce the expectation for the current config, logging the oracle's startup warnings (kubelet start)."""
        self.launcher.bound_requests(self.oracle.config)
        expectation = self.enforcement.expect()
        for warning in expectation.warnings:
            self.log.warning("%s", warning)
        self.enforcement.apply(expectation)
        return tuple(expectation.warnings)

    def configure(self, config_doc: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
        """Take a KubeletConfiguration as a kubelet restart would (Enforcement.restarted keeps what one keeps)."""
        with self.lock:
            config, version = self.oracle.parse_config(config_doc, version)
            try:
                reserves = self.oracle.reserve_paths(self.tree, config)
            except (InputError, ValueError) as err:
                raise AgentError(str(err)) from None
            foreign = reserved.refusal(self.tree, reserves)
            if foreign is not None:
                raise AgentError(f"configure: enforced reserve cgroup: {foreign}")
            driver = self.oracle.config.cgroup_driver
            if config.cgroup_driver != driver and self.pods.active():
                raise AgentError(f"configure: cgroupDriver cannot change from {driver} to {config.cgroup_driver} "
                                 "while pods run (delete them first)")
            if config.cgroup_driver != driver:
                self.cgroups.clear()
            self.oracle.set_config(config, version)
            self.enforcement.restarted(driver_changed=config.cgroup_driver != driver)
            warnings = self._enforce_logged()
            self.save()
            return {"warnings": list(warnings)}

    def set_objects(self, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Replace the namespace objects (LimitRange, ResourceQuota) that admission consults."""
        with self.lock:
            self.oracle.set_objects(docs)
            self.save()
            return {"objects": len(self.oracle.objects)}

    def run_pod(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """Admit a pod through the oracle; refused → its messages and nothing created; else start it."""
        with self.lock:
            try:
                pod = object_from_dict(doc, source="run")
            except InputError as err:
                raise AgentError(str(err)) from None
            if not isinstance(pod, Pod):
                raise AgentError(f"run: expected a Pod, got {type(pod).__name__}")
            check_names(pod)
            if pod.ref in self.pods:
                raise AgentError(f"pod {pod.ref} already exists")
            expectation = self.enforcement.expect([pod])
            pe = expectation.pod(pod.name, pod.namespace)
            shared = self.pods.refusal(pod, pe.cgroup.path, self.tree) if pe.admitted and pe.cgroup is not None else []
            if not pe.admitted or pe.cgroup is None or shared:
                errors = [*pe.errors, *shared]
                self.log.info("pod %s rejected: %s", pod.ref, "; ".join(errors))
                return {"admitted": False, "errors": errors, "status": None}
            record = admitted_record(pe)
            self.pods.add(record)
            self.enforcement.apply(expectation)
            self.supervision.start_due(record, time.monotonic())
            self.supervision.update_phase(record)  # now, not at the next tick: one save, and no tick saving again
            self.save()
            self.log.info("pod %s admitted (%s)", pod.ref, record.qos_class)
            return {"admitted": True, "errors": [], "status": record.to_dict()}

    def status(self, ref: str) -> dict[str, Any]:
        """The pod's record with its status.allocatedResources as the kubelet reports them."""
        with self.lock:
            record = self.pods.record(ref)
            allocated = pod_allocated_resources(record.pod, self.oracle.profile())
            return {**record.to_dict(), "allocatedResources": allocated}

    def pods_status(self) -> dict[str, Any]:
        with self.lock:
            return {"pods": [r.to_dict() for r in self.pods.values()], "nodeEvents": self.pressure.events}

    def evidence(self, ref: str, extra_files: Sequence[str] = ()) -> dict[str, Any]:
        """One pod's evidence at once (readings.pod_evidence)."""
        with self.lock:
            return readings.pod_evidence(self.tree, self.pods.record(ref), extra_files)

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> dict[str, Any]:
        """The node-level cgroups and the reserve cgroups the agent made, as read back now."""
        with self.lock:
            return readings.node_cgroups(self.tree, self.enforcement.expect().cgroups, self.cgroups.reserves,
                                         extra_files)

    def exec_in(self, ref: str, container: str, argv: Sequence[str], timeout: float) -> ExecDoc:
        """Run argv inside a container's cgroup with its oom_score_adj (kubectl exec); in its namespaces when a
        runtime started it."""
        with self.lock:
            c = self.pods.record(ref).container(container)
            if c.state != "running" or c.proc is None:
                raise AgentError(f"container {container} of pod {ref} is not running")
            directory, adj = self.tree.dir(self.tree.process_cgroup(live_cgroup(c))), c.oom_score_adj
            enter = c.proc.pid if self.launcher.runtime is not None else None
        return _run(argv, directory, adj, timeout, enter)

    def exec_in_reserve(self, path: str, argv: Sequence[str], timeout: float) -> ExecDoc:
        """Run argv inside an enforced reserve cgroup this agent made (a system daemon under system-reserved)."""
        with self.lock:
            if path not in reserved.made(self.tree, self.cgroups.reserves):
                raise AgentError(f"{path} is not an enforced reserve cgroup of this agent")
            directory = reserved.reserve_tree(self.tree, path).dir(path)
        return _run(argv, directory, 0, timeout)

    def resize(self, ref: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """In-place resize: the oracle decides apply now, defer (retried each tick) or refuse with its message."""
        with self.lock:
            record = self.pods.record(ref)
            if record.phase in TERMINAL:
                raise AgentError(f"pod {ref} is {record.phase}; it cannot be resized")
            spec = patch.get("spec")
            if self.oracle.faults.sidecar_resize_ignored and isinstance(spec, Mapping):  # init containers keep theirs
                patch = {**patch, "spec": {k: v for k, v in spec.items() if k != "initContainers"}}
            try:
                record.desired = patched_pod(record.desired or record.pod, patch)
            except InputError as err:
                raise AgentError(f"resize of {ref}: {err}") from None
            self.enforcement.try_resize(record)
            self.supervision.start_due(record, time.monotonic())  # what the resize restarts, now (the next tick would)
            self.save()
            return {"status": record.resize_status, "message": record.resize_message}

    def delete(self, ref: str) -> dict[str, Any]:
        """Kill the pod's processes, remove its cgroups and forget it; the sums are rewritten without it."""
        with self.lock:
            self.enforcement.teardown(self.pods.record(ref))
            self.pods.remove(ref)
            self.enforcement.enforce()
            self.save()
            return {"deleted": ref}

    def logs(self, ref: str | None = None, container: str | None = None, limit: int = 1 << 20) -> str:
        """The agent's log, or a container's output; the last `limit` bytes."""
        with self.lock:
            if ref is None:
                path = self.state_dir / LOG_FILE
            else:
                record = self.pods.record(ref)
                name = record.container(container or record.pod.containers[0].name).name
                path = container_log(self.state_dir, record, name)
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
                self.enforcement.teardown(record)
            self.cgroups.clear()
            self.enforcement.kept.clear()
            self.pods.clear()
            self.state_file.remove()
            return {"stopped": True}

    def stop(self) -> dict[str, Any]:
        """The agent's last act (the `shutdown` request, SIGTERM): `shutdown`, then remove the images the runtime
        imported for this agent (CRI), so a closed node keeps nothing of the run. A failure is logged and the token
        stays, so `cleanup` can still find them."""
        result = self.shutdown()
        self.launcher.remove_images()
        return result

    def reset(self) -> dict[str, Any]:
        """Delete every pod and namespace object and go back to the default configuration."""
        with self.lock:
            self.shutdown()
            self.oracle.reset()
            self.pressure.events.clear()
            self._enforce_logged()
            self.save()
            return {"reset": True}

    def node_status(self) -> NodeStatusDoc:
        with self.lock:
            return {"conditions": dict(self.pressure.conditions), "events": list(self.pressure.events),
                    "rlimit": self.pressure.rlimit()}


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
