"""The agent's state and what every operation shares: the oracle's view of the node, writing its values to the
cgroup tree, tearing a pod down.

Source: issue 12 (enforcer/agent.py split at its own section banners).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from nodeconf import names
from nodeconf.enforcer import oci_bundle, process, reserved
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.lifecycle import (
    KUBELET_BACKOFF,
    NO_FAULTS,
    Backoff,
    Faults,
    restarts_for_resize,
)
from nodeconf.enforcer.oci_runtime import OciRuntime, RuntimeCommandError, RuntimeProcess
from nodeconf.enforcer.oom_watch import OomWatch
from nodeconf.enforcer.oracle import ContainerUsage, ExpectFn, ResizeFn
from nodeconf.enforcer.ownership import ForeignCgroup, foreign_message, process_start
from nodeconf.enforcer.records import PAUSE, ContainerRecord, PodRecord
from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import LimitRange, NamespaceObject, Pod, ResourceQuota, object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu import container_shares
from nodeconf.semantics.eviction import MEMORY_PRESSURE
from nodeconf.semantics.expectation import (
    CgroupExpectation,
    ContainerExpectation,
    Expected,
    NodeExpectation,
    PodExpectation,
)
from nodeconf.semantics.node_limits import reserved_cgroup_paths
from nodeconf.semantics.profile import DEFAULT_VERSION, Profile, profile_for

APPLIED = "Applied"
# Resize outcomes that stay pending and are asked about again on every tick (PodResizeInProgress, Deferred).
PENDING = ("InProgress", "Deferred")
# Node-limit files (semantics.node_limits) the agent writes: pids.max on kubepods (node_container_manager_linux.go
# getCgroupConfig) and each pod cgroup (pod_container_manager_linux.go EnsureExists), hugetlb.<size>.max on kubepods,
# pod and container cgroups (cgroup_manager_linux.go maybeSetHugetlb; kuberuntime GetHugepageLimitsFromResources
# for containers).
POD_LIMIT_FILES = ("pids.max",)
HUGETLB_PREFIX = "hugetlb."


TERMINAL = ("Succeeded", "Failed")
# How often memory.available is checked (kubelet evictionMonitoringPeriod is 10 s; faster here for tests).
EVICTION_INTERVAL = 1.0
STATE_FILE = "state.json"
LOG_FILE = "agent.log"
# The serving agent's pid and start time (/proc/PID/stat field 22), and the file it holds locked (flock) for its
# lifetime: one agent per state directory.
PID_FILE = "agent.pid"
LOCK_FILE = "agent.lock"


class AgentError(Exception):
    """A request the agent refuses; the message goes back to the caller as is."""


class AgentCore:
    """The node agent's state: config, namespace objects, pods, written values, conditions; one lock."""

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
        # The values last computed for each cgroup (a systemd scope's are written when its process starts it),
        # and the memory.events watch of each running container in a scope (systemd removes it when it empties).
        self.expected: dict[str, CgroupExpectation] = {}
        self.oom_watches: dict[str, OomWatch] = {}
        self.node_events: list[dict[str, str]] = []
        # With a real runtime: each container's linux.resources (by cgroup path) and what a running one was given.
        self.runtime = runtime
        self.resources: dict[str, dict[str, Any]] = {}
        self.sent: dict[str, dict[str, Any]] = {}
        # The oom_score_adj a container gets at its next (re)start, from the pod as last resized (by cgroup path).
        self.start_oom_score_adj: dict[str, int] = {}
        # The enforced reserve cgroups the agent made (system-/kube-reserved), removed when no longer enforced.
        self.reserves: set[str] = set()

    def profile(self) -> Profile:
        return profile_for(self.version, self.config)

    def oracle_facts(self) -> NodeFacts:
        """The facts the agent computes with: the node's, changed by the faults."""
        facts = self.facts
        if self.faults.cpu_weight_formula is not None:
            facts = dataclasses.replace(facts, cpu_weight_formula=self.faults.cpu_weight_formula)
        return facts

    def oracle_config(self, config: KubeletConfig | None = None) -> KubeletConfig:
        """The configuration the agent computes with: the node's (or the given one), changed by the faults."""
        config = config or self.config
        if self.faults.memory_throttling_factor is not None:
            config = dataclasses.replace(config, memory_throttling_factor=self.faults.memory_throttling_factor)
        if self.faults.pids_limit_ignored:
            config = dataclasses.replace(config, pod_pids_limit=-1)
        if self.faults.single_process_oom_kill_ignored:
            config = dataclasses.replace(config, single_process_oom_kill=False)
        if self.faults.reserved_cgroups_ignored:
            config = dataclasses.replace(config, enforce_node_allocatable=tuple(
                k for k in config.enforce_node_allocatable if k not in reserved.ENFORCED_KEYS))
        return config

    def reserve_paths(self, config: KubeletConfig | None = None) -> list[str]:
        """The reserve cgroups the agent enforces under a config (the current one): oracle paths, each checked
        (InputError, ValueError for a name nodeconf will not make)."""
        paths = sorted(set(reserved_cgroup_paths(self.oracle_config(config)).values()))
        for path in paths:
            reserved.reserve_tree(self.tree, path)
        return paths

    def _active(self) -> list[Pod]:
        return [r.pod for r in self.pods.values() if r.phase not in TERMINAL]

    def _expect(self, extra: Sequence[Pod] = ()) -> NodeExpectation:
        return self.expect_fn(self.faults.pods_seen([*self._active(), *extra], self.config.swap_behavior),
                              self.oracle_facts(), self.oracle_config(), self.profile(), self.objects)

    def _write(self, cgroup: CgroupExpectation, tree: CgroupTree | None = None) -> list[str]:
        """Create the cgroup, tell its manager the changed values (systemd unit properties), write the files; a
        systemd scope is written once its process has started it (_scope_started)."""
        tree = tree or self.tree
        self.expected[cgroup.path] = cgroup
        if tree.needs_process(cgroup.path) and not tree.exists(cgroup.path):
            return []
        changed = {f: e.value for f, e in cgroup.files.items() if self.written.get((cgroup.path, f)) != e.value}
        if not changed and tree.exists(cgroup.path):
            return []  # nothing to write: no walk of its ancestors' marks (every pod's cgroups, on every run)
        try:
            tree.ensure(cgroup.path)
        except ForeignCgroup as err:
            return [str(err)]
        problems = []
        try:
            tree.set_properties(cgroup.path, changed)
        except (OSError, ValueError) as err:
            problems.append(f"setting the unit properties of {cgroup.path}: {err}")
        for file, value in changed.items():
            try:
                tree.write(cgroup.path, file, value)
                self.written[(cgroup.path, file)] = value
            except OSError as err:
                problems.append(f"writing {value!r} to {cgroup.path}/{file}: {err.strerror or err}")
        return problems

    def _scope_started(self, path: str) -> list[str]:
        """Write a container's values into the scope systemd has just created around its process."""
        for key in [k for k in self.written if k[0] == path]:
            del self.written[key]
        cgroup = self.expected.get(path)
        return self._write(cgroup) if cgroup is not None else [f"no values computed for {path}"]

    def _apply(self, expectation: NodeExpectation) -> None:
        """Write every value the oracle computes: node level first (kubepods with its pids.max and hugetlb), then
        each active pod and its containers."""
        limits = expectation.node_limits
        hugetlb = not self.faults.hugetlb_ignored
        for cgroup in expectation.cgroups.values():
            for problem in self._write(with_node_limits(cgroup, limits.get(cgroup.path, {}), hugetlb=hugetlb)):
                self.log.error("%s", problem)
        self._apply_reserves(expectation)
        for pe in expectation.pods:
            record = self.pods.get(pe.pod.ref)
            if record is None or record.phase in TERMINAL or pe.cgroup is None:
                continue
            pod_cgroup = with_node_limits(pe.cgroup, limits.get(pe.cgroup.path, {}), hugetlb=hugetlb)
            cgroups = [pod_cgroup, *(with_node_limits(c.cgroup, limits.get(c.cgroup.path, {}), pids=False,
                                                      hugetlb=hugetlb)
                                     for c in with_pause(pe.containers, pe.pause))]
            for ce in pe.containers:
                self.start_oom_score_adj[ce.cgroup.path] = int(ce.oom_score_adj.value)
            if self.runtime is not None:  # the container cgroups are the runtime's
                cgroups = [pod_cgroup]
                self._runtime_resources(record, pe, limits)
            for cgroup in cgroups:
                for problem in self._write(cgroup):
                    self.log.error("pod %s: %s", record.ref, problem)
                    record.event("Warning", "FailedCgroupWrite", problem)

    def _apply_reserves(self, expectation: NodeExpectation) -> None:
        """Create and write each enforced reserve cgroup with the oracle's values (the kubelet's Update of an
        existing cgroup); remove the ones made earlier that are no longer enforced."""
        wanted = self.reserve_paths()
        self._remove_reserves(self.reserves - set(wanted), keep={reserved.top(p) for p in wanted})
        for path in wanted:
            self.reserves.add(path)
            files = expectation.node_limits.get(path, {})
            cgroup = CgroupExpectation(path, {name: e for name, e in files.items()
                                              if not (self.faults.hugetlb_ignored and name.startswith(HUGETLB_PREFIX))})
            for problem in self._write(cgroup, reserved.reserve_tree(self.tree, path)):
                self.log.error("%s", problem)

    def _remove_reserves(self, paths: AbstractSet[str], keep: AbstractSet[str] = frozenset()) -> None:
        """Remove reserve cgroups the agent made: the whole top-level cgroup unless `keep` holds it (then the path
        alone); a cgroup of someone else stays (logged)."""
        for path in sorted(paths, reverse=True):
            gone = path if reserved.top(path) in keep else reserved.top(path)
            for left in reserved.remove(self.tree, gone):
                self.log.warning("left %s in place: %s", left, foreign_message(left))
            self._forget_written(gone)
            self.reserves.discard(path)

    def _runtime_resources(self, record: PodRecord, pe: PodExpectation,
                           limits: Mapping[str, Mapping[str, Expected]]) -> None:
        """Each container's resources from the kubelet's CRI values (with its hugepage limits), as the runtime
        takes them (runtime.resources_for); a change goes to a running container through the runtime's `update`
        (UpdateContainerResources)."""
        assert self.runtime is not None
        for ce in with_pause(pe.containers, pe.pause):
            if ce is pe.pause:
                resources = oci_bundle.sandbox_resources()
            else:
                spec = next(c for c in pe.pod.all_containers if c.name == ce.name)
                cgroup = with_node_limits(ce.cgroup, limits.get(ce.cgroup.path, {}), pids=False,
                                          hugetlb=not self.faults.hugetlb_ignored)
                files = {name: e.value for name, e in cgroup.files.items()}
                cri = oci_bundle.cri_resources(files, container_shares(pe.pod, spec, self.profile()))
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

    def _forget_written(self, path: str) -> None:
        for key in [k for k in self.written if k[0] == path or k[0].startswith(path + "/")]:
            del self.written[key]
        for cgroup in [p for p in self.expected if p == path or p.startswith(path + "/")]:
            del self.expected[cgroup]
        for cache in (self.resources, self.sent, self.start_oom_score_adj):
            for cgroup in [p for p in cache if p == path or p.startswith(path + "/")]:
                del cache[cgroup]

    def _set_objects(self, docs: Sequence[Mapping[str, Any]]) -> None:
        objects: list[NamespaceObject] = []
        for doc in docs:
            try:
                obj = object_from_dict(doc, source="objects")
            except InputError as err:
                raise AgentError(str(err)) from None
            if not isinstance(obj, (LimitRange, ResourceQuota)):
                raise AgentError(f"objects: {obj.name} is a Pod; only LimitRange and ResourceQuota belong here")
            objects.append(obj)
        self.objects, self.object_docs = objects, [dict(d) for d in docs]

    def _saved(self, record: PodRecord) -> dict[str, Any]:
        """The record for the state file: with each process's start time, to tell a reused pid apart later."""
        out = record.to_dict()
        for c in out["containers"]:
            c["pidStart"] = process_start(c["pid"]) if c["pid"] else None
        return out

    def _usage(self, record: PodRecord) -> dict[str, ContainerUsage]:
        """Each container's memory and swap usage for a resize decision; none under `resize-usage=ignore`."""
        usage: dict[str, ContainerUsage] = {}
        if self.faults.resize_usage_ignored:
            return usage
        for c in record.containers:
            if c.kind != PAUSE:
                usage[c.name] = ContainerUsage(
                    memory=int_or_none(self.tree.read(live_cgroup(c), "memory.current")),
                    swap=int_or_none(self.tree.read(live_cgroup(c), "memory.swap.current")),
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
            watch = self.oom_watches.pop(c.cgroup, None)
            if watch is not None:
                watch.stop()
            if c.state == "running":
                c.state, c.reason, c.exit_code = "terminated", "Killed", 137
        self.tree.kill(record.cgroup)
        self.tree.remove(record.cgroup)
        self._forget_written(record.cgroup)

    def _container_log(self, record: PodRecord, name: str) -> Path:
        return self.state_dir / "logs" / names.log_file(record.pod.namespace, record.pod.name, name)

    def _clear_tree(self) -> None:
        """Kill and remove every marked cgroup; a cgroup of someone else inside ours stays (logged)."""
        for left in self.tree.clear():
            self.log.warning("left %s in place: %s", left, foreign_message(left))
        self._remove_reserves(set(self.reserves))


def with_node_limits(cgroup: CgroupExpectation, limits: Mapping[str, Expected], pids: bool = True,
                     hugetlb: bool = True) -> CgroupExpectation:
    """A kubepods, pod or container cgroup with the node limits the kubelet writes on it: pids.max unless `pids` is
    off (containers): kubepods' from the allocatable pids, the pod's from podPidsLimit (EnsureExists sets PidsLimit
    when > 0; the oracle's `max` otherwise is a new cgroup's own value, so writing it changes nothing); and, unless
    `hugetlb` is off (the `hugetlb=ignore` fault), hugetlb.<size>.max and .rsvd.max of every size (0 for a size not
    requested; .rsvd.max where the oracle expects it).
    Under systemd pids.max also goes as TasksMax; hugetlb has no unit property (systemd_units.resource_properties)."""
    extra = {name: e for name, e in limits.items()
             if (pids and name in POD_LIMIT_FILES)
             or (hugetlb and name.startswith(HUGETLB_PREFIX) and name.endswith(".max"))}
    return CgroupExpectation(cgroup.path, {**cgroup.files, **extra}) if extra else cgroup


def live_cgroup(c: ContainerRecord) -> str:
    """Where a container's process is now: the cgroup a CRI runtime put it in (`cri-containerd-<its id>.scope`),
    else the oracle's path, where the agent or an OCI runtime starts it."""
    return getattr(c.proc, "cgroup", None) or c.cgroup


def with_pause(containers: Sequence[ContainerExpectation],
               pause: ContainerExpectation | None) -> list[ContainerExpectation]:
    return [*([pause] if pause is not None else []), *containers]


def int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
