"""The oracle as this agent asks it: with the node's facts, the kubelet configuration and version it was given and
the namespace objects, each changed by the agent's faults.

Source: issue 27 item 3 (the agent by composition); enforcer/lifecycle.py Faults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from nodeconf.enforcer import reserved
from nodeconf.enforcer.agent_error import AgentError
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.lifecycle import Faults
from nodeconf.enforcer.oracle import AdmittedMemo, ContainerUsage, ExpectFn, ResizeDecision, ResizeFn
from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict, kubelet_config_to_dict
from nodeconf.manifest import LimitRange, NamespaceObject, Pod, ResourceQuota
from nodeconf.manifest_reader import object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.node_limits import reserved_cgroup_paths
from nodeconf.semantics.profile import DEFAULT_VERSION, Profile, profile_for


class OracleView:
    """The agent's settings (config, version, namespace objects) and the oracle's answers computed with them."""

    def __init__(self, facts: NodeFacts, expect_fn: ExpectFn, resize_fn: ResizeFn, faults: Faults) -> None:
        self.facts = facts
        self.expect_fn = expect_fn
        self.resize_fn = resize_fn
        self.faults = faults
        self.config = KubeletConfig()
        self.version = DEFAULT_VERSION
        self.objects: list[NamespaceObject] = []
        self.object_docs: list[dict[str, Any]] = []
        # The static CPU manager's state (the kubelet's cpu_manager_state): each container's exclusive CPUs as last
        # enforced, handed back to the oracle so a running container keeps them.
        self.cpu_assignments: dict[tuple[str, str], frozenset[int]] = {}
        self._last: tuple[tuple[Any, ...], NodeExpectation] | None = None  # expect's last inputs and answer
        self._memo = AdmittedMemo()  # and each admitted pod's (only the same pods are asked about again)

    def profile(self) -> Profile:
        return profile_for(self.version, self.config)

    def facts_used(self) -> NodeFacts:
        """The facts the agent computes with: the node's, changed by the faults."""
        if self.faults.cpu_weight_formula is None:
            return self.facts
        return dataclasses.replace(self.facts, cpu_weight_formula=self.faults.cpu_weight_formula)

    def config_used(self, config: KubeletConfig | None = None) -> KubeletConfig:
        """The configuration the agent computes with: the node's (or the given one), changed by the faults."""
        config = config or self.config
        if self.faults.memory_throttling_factor is not None:
            config = dataclasses.replace(config, memory_throttling_factor=self.faults.memory_throttling_factor)
        if self.faults.pids_limit_ignored:
            config = dataclasses.replace(config, pod_pids_limit=-1)
        if self.faults.single_process_oom_kill_ignored:
            config = dataclasses.replace(config, single_process_oom_kill=False)
        unenforced = {*(reserved.ENFORCED_KEYS if self.faults.reserved_cgroups_ignored else ()),
                      *(("pods",) if self.faults.pods_allocatable_ignored else ())}
        if unenforced:
            config = dataclasses.replace(config, enforce_node_allocatable=tuple(
                k for k in config.enforce_node_allocatable if k not in unenforced))
        return config

    def reserve_paths(self, tree: CgroupTree, config: KubeletConfig | None = None) -> list[str]:
        """The reserve cgroups the agent enforces under a config (the current one): oracle paths, each checked
        (InputError, ValueError for a name nodeconf will not make)."""
        paths = sorted(set(reserved_cgroup_paths(self.config_used(config)).values()))
        for path in paths:
            reserved.reserve_tree(tree, path)
        return paths

    def expect(self, pods: Sequence[Pod]) -> NodeExpectation:
        """The oracle's expectation for the node running these pods; the last answer again when every input is
        the same (the agent asks after each change and again for its read-outs: under TCG one answer costs ~4 ms
        and ~8 ms more per pod, issue 31)."""
        asked = (tuple(self.faults.pods_seen(pods, self.config.swap_behavior)), self.facts_used(), self.config_used(),
                 self.profile(), tuple(self.objects), dict(self.cpu_assignments))
        if self._last is not None and self._last[0] == asked:
            return self._last[1]
        answer = self.expect_fn(*asked[:5], cpu_assignments=asked[5], memo=self._memo)
        self._last = (asked, answer)
        return answer

    def keep_cpus(self, expectation: NodeExpectation) -> None:
        """Take an enforced expectation's CPU assignments as the state (freed ones gone, new ones added)."""
        self.cpu_assignments = dict(expectation.cpu_assignments)

    def set_config(self, config: KubeletConfig, version: str) -> None:
        """Take a new config and version; a changed CPU manager setting starts from an empty CPU state (the kubelet
        refuses a state file of another policy or reserved set: upstream's e2e removes it with the config change)."""
        cpus = (config.cpu_manager_policy, config.reserved_system_cpus, config.cpu_manager_policy_options)
        if cpus != (self.config.cpu_manager_policy, self.config.reserved_system_cpus,
                    self.config.cpu_manager_policy_options):
            self.cpu_assignments = {}
        self.config, self.version = config, version

    def decide_resize(self, current: Pod, desired: Pod, usage: Mapping[str, ContainerUsage],
                      others: Sequence[Pod]) -> ResizeDecision:
        return self.resize_fn(current, desired, usage, self.facts_used(), self.config_used(), self.profile(), others)

    def parse_config(self, config_doc: Mapping[str, Any], version: str | None) -> tuple[KubeletConfig, str]:
        """A KubeletConfiguration and the version to compute with (the current one unless given), checked."""
        try:
            config = kubelet_config_from_dict(config_doc, source="configure")
            profile_for(version or self.version, config)
        except (InputError, ValueError) as err:
            raise AgentError(str(err)) from None
        return config, version or self.version

    def set_objects(self, docs: Sequence[Mapping[str, Any]]) -> None:
        """Replace the namespace objects admission consults: LimitRange and ResourceQuota only."""
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

    def reset(self) -> None:
        """Back to the default configuration, without namespace objects."""
        self.config, self.version, self.objects, self.object_docs = KubeletConfig(), DEFAULT_VERSION, [], []
        self.cpu_assignments = {}

    def to_state(self) -> dict[str, Any]:
        """The settings for the state file."""
        return {"config": kubelet_config_to_dict(self.config), "version": self.version, "objects": self.object_docs,
                "cpuAssignments": [[uid, name, sorted(cpus)]
                                   for (uid, name), cpus in sorted(self.cpu_assignments.items())]}

    def restore(self, previous: Mapping[str, Any]) -> None:
        """Take the settings back from a state file."""
        self.config = kubelet_config_from_dict(previous["config"], source="agent state")
        self.version = previous["version"]
        self.set_objects(previous["objects"])
        self.cpu_assignments = {(str(uid), str(name)): frozenset(int(c) for c in cpus)
                                for uid, name, cpus in previous.get("cpuAssignments", [])}
