"""Starting and stopping container processes: by the agent itself in the container's cgroup, held until systemd
has made its scope, through an OCI runtime, or as a CRI sandbox and container; the resources each runtime was given
and the memory.events watch of each process in a scope.

Source: issue 27 item 3 (the agent by composition); kubelet kuberuntime_container.go startContainer,
generateLinuxContainerConfig; runc with the systemd driver (Apply(pid), Set, then exec).
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf import names
from nodeconf.enforcer import oci_bundle, process
from nodeconf.enforcer.cgroup_writer import CgroupWriter, with_node_limits
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.cri.runtime import CriRuntime
from nodeconf.enforcer.oci_runtime import OciRuntime, RuntimeCommandError, RuntimeProcess, container_id
from nodeconf.enforcer.oom_watch import OomWatch
from nodeconf.enforcer.ownership import ForeignCgroup
from nodeconf.enforcer.records import PAUSE, ContainerRecord, PodRecord
from nodeconf.enforcer.systemd_tree import SystemdTree
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu import container_shares
from nodeconf.semantics.expectation import ContainerExpectation, Expected, PodExpectation
from nodeconf.semantics.profile import Profile


class Launcher:
    """Who starts the containers (the agent, an OCI runtime or CRI) and what each was last given."""

    def __init__(self, cgroups: CgroupWriter, state_dir: Path, facts: NodeFacts, log: logging.Logger,
                 runtime: OciRuntime | None = None) -> None:
        self.cgroups = cgroups
        self.state_dir = state_dir
        self.facts = facts
        self.log = log
        self.runtime = runtime
        # With a real runtime: each container's linux.resources (by cgroup path) and what a running one was given.
        self.resources: dict[str, dict[str, Any]] = {}
        self.sent: dict[str, dict[str, Any]] = {}
        # The oom_score_adj a container gets at its next (re)start, from the pod as last resized (by cgroup path).
        self.start_oom_score_adj: dict[str, int] = {}
        # The memory.events watch of each running container in a scope (systemd removes the scope when it empties).
        self.oom_watches: dict[str, OomWatch] = {}

    def bound_requests(self, config: KubeletConfig) -> None:
        """Bound each runtime command (CRI call) as a kubelet started with this configuration bounds its CRI calls:
        by its runtimeRequestTimeout, unless the kubelet's flag outweighs it (OciRuntime.flag)."""
        if self.runtime is not None:
            self.runtime.bound_requests(config.runtime_request_timeout)

    def remove_images(self) -> None:
        """Remove the images the runtime imported for this agent (CRI); a failure is logged and the token stays, so
        `cleanup` can still find them."""
        if self.runtime is not None:
            try:
                self.log.info("removed the images this agent imported: %s", self.runtime.remove_images())
            except RuntimeCommandError as err:
                self.log.error("%s", err)

    @property
    def tree(self) -> CgroupTree:
        return self.cgroups.tree

    def start(self, record: PodRecord, c: ContainerRecord) -> int | None:
        """Launch one container's process; its ready fd (None: a runtime started it, or it could not start)."""
        if c.started_at is not None:
            c.restarts += 1
        c.oom_kills_at_start = self.tree.keyed(c.cgroup, "memory.events").get("oom_kill", 0)
        # Computed at each start from the pod's current (resized) resources, as the kubelet's
        # generateLinuxContainerConfig does; a running process keeps the value it started with (runc#4669).
        c.oom_score_adj = self.start_oom_score_adj.get(c.cgroup, c.oom_score_adj)
        log = container_log(self.state_dir, record, c.name)
        try:
            if isinstance(self.runtime, CriRuntime):
                c.proc, ready = self._cri_spawn(self.runtime, record, c, log), None
            elif self.runtime is not None:
                c.proc, ready = self._runtime_spawn(self.runtime, c, log), None
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

    def _runtime_spawn(self, runtime: OciRuntime, c: ContainerRecord, log: Path) -> RuntimeProcess:
        """`run` the container from its bundle in its cgroup, created (and marked) here first: the runtime's
        `delete` removed it after the previous attempt. A scope is the runtime's to start, once systemd has removed
        the previous attempt's scope of the same name."""
        resources = self.resources.get(c.cgroup)
        if resources is None:
            raise RuntimeCommandError(f"no resources computed for {c.cgroup}")
        scope = self.tree.needs_process(c.cgroup)  # a --systemd-cgroup runtime starts the scope itself
        self.tree.ensure(c.cgroup.rsplit("/", 1)[0] if scope else c.cgroup)
        if scope:  # the same unit name as the attempt before
            self.tree.await_gone(c.cgroup)
        proc = runtime.run(container_id(c.cgroup), c.argv, c.oom_score_adj, c.cgroup, resources, log)
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
            for problem in self.cgroups.scope_started(c.cgroup):
                self.log.error("pod %s: %s", record.ref, problem)
                record.event("Warning", "FailedCgroupWrite", problem)
            self.oom_watches[c.cgroup] = OomWatch(self.tree.dir(c.cgroup))
            process.release(channel)
        except BaseException:
            channel.close()
            process.terminate(proc)
            raise
        return proc

    def reap(self, c: ContainerRecord) -> tuple[int, bool]:
        """An exited container's exit code and whether the kernel OOM-killed it (its cgroup's oom_kill count grew,
        or its runtime says so); the runtime deletes its container after that is read."""
        assert c.proc is not None and c.proc.returncode is not None
        code = process.exit_code(c.proc.returncode)
        finished, c.proc = c.proc, None
        oom_kill = self.tree.keyed(c.cgroup, "memory.events").get("oom_kill", 0)
        watch = self.oom_watches.pop(c.cgroup, None)
        oom = max(oom_kill, watch.stop() if watch is not None else 0) > c.oom_kills_at_start
        oom = oom or (isinstance(finished, RuntimeProcess) and finished.oom_killed)
        if isinstance(finished, RuntimeProcess):  # read before the runtime removes the cgroup
            finished.runtime.delete(finished.cid)
        return code, oom

    @staticmethod
    def stop(c: ContainerRecord) -> None:
        """Kill a container's process: through its runtime (which deletes the container) or directly."""
        if isinstance(c.proc, RuntimeProcess):
            c.proc.stop()
        elif c.proc is not None:
            process.terminate(c.proc)
        c.proc = None

    def stop_for_good(self, c: ContainerRecord) -> None:
        """Kill a container's process and end its memory.events watch (its pod goes)."""
        self.stop(c)
        watch = self.oom_watches.pop(c.cgroup, None)
        if watch is not None:
            watch.stop()

    def stop_all_for_good(self, containers: Sequence[ContainerRecord]) -> None:
        """stop_for_good for each container of a pod, the processes the agent started itself killed together
        first (process.terminate_all); a runtime's containers are stopped through it one by one."""
        process.terminate_all([c.proc for c in containers if isinstance(c.proc, subprocess.Popen)])
        for c in containers:
            self.stop_for_good(c)

    def note_oom_score_adj(self, containers: Sequence[ContainerExpectation]) -> None:
        """The oom_score_adj each container gets at its next (re)start, from its pod as last resized."""
        for ce in containers:
            self.start_oom_score_adj[ce.cgroup.path] = int(ce.oom_score_adj.value)

    def give_resources(self, record: PodRecord, pe: PodExpectation, limits: Mapping[str, Mapping[str, Expected]],
                       profile: Profile, hugetlb: bool) -> None:
        """Each container's resources from the kubelet's CRI values (with its hugepage limits), as the runtime
        takes them (runtime.resources_for); a change goes to a running container through the runtime's `update`
        (UpdateContainerResources)."""
        assert self.runtime is not None
        for ce in with_pause(pe.containers, pe.pause):
            if ce is pe.pause:
                resources = oci_bundle.sandbox_resources()
            else:
                spec = next(c for c in pe.pod.all_containers if c.name == ce.name)
                cgroup = with_node_limits(ce.cgroup, limits.get(ce.cgroup.path, {}), pids=False, hugetlb=hugetlb)
                files = {name: e.value for name, e in cgroup.files.items()}
                cri = oci_bundle.cri_resources(files, container_shares(pe.pod, spec, profile))
                resources = self.runtime.resources_for(cri, self.facts.has_swap_controller)
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

    def forget(self, path: str) -> None:
        """Forget what was computed for and given to the containers in the cgroup and below it."""
        for cache in (self.resources, self.sent, self.start_oom_score_adj):
            for cgroup in [p for p in cache if p == path or p.startswith(path + "/")]:
                del cache[cgroup]


def container_log(state_dir: Path, record: PodRecord, name: str) -> Path:
    """Where the agent keeps a container's output."""
    return state_dir / "logs" / names.log_file(record.pod.namespace, record.pod.name, name)


def live_cgroup(c: ContainerRecord) -> str:
    """Where a container's process is now: the cgroup a CRI runtime put it in (`cri-containerd-<its id>.scope`),
    else the oracle's path, where the agent or an OCI runtime starts it."""
    return getattr(c.proc, "cgroup", None) or c.cgroup


def with_pause(containers: Sequence[ContainerExpectation],
               pause: ContainerExpectation | None) -> list[ContainerExpectation]:
    return [*([pause] if pause is not None else []), *containers]
