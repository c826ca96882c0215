"""Shared helpers of the enforcer unit tests: an agent on a temporary cgroup-like tree, the article's node."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.lifecycle import NO_FAULTS, Backoff, Faults
from nodeconf.enforcer.oracle import decide_resize, expect
from nodeconf.enforcer.ownership import agent_owner
from nodeconf.node_facts import NodeFacts
from suites.toolkit.builders import KI, container, pod_manifest

# The article's lab node: 3479660Ki of memory, 2 cpus (requests-limits-qos "What the scheduler sees").
ARTICLE_NODE_MEMORY = 3479660 * KI
ARTICLE_NODE = NodeFacts(memory_capacity=ARTICLE_NODE_MEMORY, swap_capacity=0, cpu_capacity_milli=2000)


def make_agent(tmp_path: Path, faults: Faults = NO_FAULTS,
               node_memory_used: Callable[[], int] | None = None, facts: NodeFacts = ARTICLE_NODE) -> Agent:
    root = tmp_path / "cgroup"
    state = tmp_path / "state"
    root.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    agent = Agent(CgroupTree(root, owner=agent_owner(state)), state, facts, expect, decide_resize, faults=faults,
                  node_memory_used=node_memory_used, backoff=Backoff(initial=0.05, cap=0.2))
    agent.recover()
    return agent


def running_agent(tmp_path: Path, faults: Faults = NO_FAULTS,
                  node_memory_used: Callable[[], int] | None = None) -> Iterator[Agent]:
    agent = make_agent(tmp_path, faults, node_memory_used)
    try:
        yield agent
    finally:
        agent.shutdown()


def res_demo() -> dict[str, Any]:
    """The article's res-demo pod (seed requests-limits-qos "Requests and limits")."""
    return pod_manifest(container("hello", requests={"cpu": "250m", "memory": "128Mi"},
                                          limits={"cpu": "500m", "memory": "128Mi"}), name="res-demo")


def tick_until(agent: Agent, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        agent.tick()
        time.sleep(0.02)


FOREIGN_SCOPE = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podX.slice/cri-containerd-foreign.scope"


def snapshot(top: Path) -> dict[str, str]:
    """Every file below top with its content and every directory (as "<dir>"), to show nothing changed."""
    return {str(p.relative_to(top)): "<dir>" if p.is_dir() else p.read_text() for p in sorted(top.rglob("*"))}


def foreign_tree(root: Path, path: str = FOREIGN_SCOPE) -> Path:
    """A kubelet's cgroups (no nodeconf mark) with a canary file standing for its processes."""
    scope = root / path
    scope.mkdir(parents=True)
    (scope / "cgroup.procs").write_text("4242\n")
    return scope


def run_enforcer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodeconf.enforcer", *args], capture_output=True, text=True,
                          timeout=60, check=False)
