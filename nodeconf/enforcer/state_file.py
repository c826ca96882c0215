"""The agent's state file: written after every change, read back by a restarted agent, which kills what the
crashed one left and restarts its pods.

Source: issue 12 (enforcer/agent.py split at its own section banners).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodeconf.enforcer import reserved
from nodeconf.enforcer.agent_core import STATE_FILE, AgentCore
from nodeconf.enforcer.ownership import kill_recorded
from nodeconf.enforcer.records import PodRecord
from nodeconf.kubelet_config import kubelet_config_from_dict, kubelet_config_to_dict


class StateFile(AgentCore):
    """Saving and recovering the agent's state (state.json in the state directory)."""

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
            self.reserves = set(reserved.in_state(self.tree, previous))
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
