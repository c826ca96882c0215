"""A fake systemd (busctl calls recorded, units as cgroups below their slice) and an agent recovered on it."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.lifecycle import Backoff
from nodeconf.enforcer.oracle import decide_resize, expect
from nodeconf.enforcer.systemd_tree import SystemdCallError, SystemdTree
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE

OWNER = "nodeconf agent /state"


class FakeSystemd:
    """Records each busctl argv; starting a unit creates its cgroup below its slice, stopping removes it."""

    def __init__(self, root: Path, fail: str = "") -> None:
        self.paths = {"-.slice": root}
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv: Sequence[str]) -> str:
        argv = list(argv)
        self.calls.append(argv)
        method, name = argv[6], argv[8]
        if method == self.fail or (method == "ResetFailedUnit" and name not in self.paths):
            raise SystemdCallError(f"systemd {method}: refused")
        if method == "StartTransientUnit":
            parent = argv[argv.index("Wants") + 3] if "Wants" in argv else argv[argv.index("Slice") + 2]
            self.paths[name] = self.paths[parent] / name
            self.paths[name].mkdir()
        elif method == "StopUnit":
            shutil.rmtree(self.paths[name])
        return ""

    def methods(self) -> list[tuple[str, str]]:
        return [(c[6], c[8]) for c in self.calls]


def systemd_agent(tmp_path: Path) -> tuple[Agent, FakeSystemd]:
    """A recovered agent on the fake systemd, its cgroup root tmp_path/cgroup and its state in tmp_path/state."""
    root, state = tmp_path / "cgroup", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    systemd = FakeSystemd(root)
    agent = Agent(SystemdTree(root, owner=OWNER, run=systemd), state, ARTICLE_NODE, expect, decide_resize,
                  backoff=Backoff(initial=0.05, cap=0.2))
    agent.recover()
    return agent, systemd
