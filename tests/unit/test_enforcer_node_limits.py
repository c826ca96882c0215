"""The agent writes the kubelet's node limits: pod pids.max from podPidsLimit, container memory.oom.group from
singleProcessOOMKill; the `pids-limit=ignore` and `single-process-oom-kill=ignore` faults write the defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from enforcer_support import res_demo, running_agent

from nodeconf.cgroup_files import OBSERVED_FILES
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.agent_core import POD_LIMIT_FILES
from nodeconf.enforcer.lifecycle import Faults

CONFIG: dict[str, Any] = {"kind": "KubeletConfiguration", "podPidsLimit": 24, "singleProcessOOMKill": True}


def _files(agent: Agent) -> tuple[str | None, str | None]:
    """(pod pids.max, container memory.oom.group) of res-demo after the agent took CONFIG."""
    agent.configure(CONFIG)
    status = agent.run_pod(res_demo())["status"]
    hello = next(c for c in status["containers"] if c["name"] == "hello")
    return agent.tree.read(status["cgroup"], "pids.max"), agent.tree.read(hello["cgroup"], "memory.oom.group")


def test_pod_pids_limit_and_single_process_oom_kill_are_written(tmp_path: Path) -> None:
    """podPidsLimit 24 → the pod's pids.max 24 (EnsureExists); singleProcessOOMKill → oom.group 0."""
    for agent in running_agent(tmp_path):
        assert _files(agent) == ("24", "0")


@pytest.mark.parametrize(("fault", "expected"), [("pids-limit=ignore", ("max", "0")),
                                                 ("single-process-oom-kill=ignore", ("24", "1"))])
def test_faults_write_the_defaults(tmp_path: Path, fault: str, expected: tuple[str, str]) -> None:
    for agent in running_agent(tmp_path, Faults.parse([fault])):
        assert _files(agent) == expected


def test_unset_pod_pids_limit_leaves_max(tmp_path: Path) -> None:
    for agent in running_agent(tmp_path):
        status = agent.run_pod(res_demo())["status"]
        assert agent.tree.read(status["cgroup"], "pids.max") == "max"


def test_every_node_limit_file_the_agent_writes_is_read_back() -> None:
    assert set(POD_LIMIT_FILES) <= set(OBSERVED_FILES)


def test_bad_switch_fault_names_the_good_ones() -> None:
    with pytest.raises(ValueError, match="pids-limit=ignore, single-process-oom-kill=ignore"):
        Faults.parse(["pids-limit=yes"])
