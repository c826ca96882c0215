"""The agent writes the kubelet's node limits: pod pids.max from podPidsLimit, container memory.oom.group from
singleProcessOOMKill, pod and container hugetlb.<size>.max; the `pids-limit=ignore`, `single-process-oom-kill=ignore`
and `hugetlb=ignore` faults write the defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from enforcer_support import ARTICLE_NODE, make_agent, res_demo, running_agent

from nodeconf.cgroup_files import OBSERVED_FILES
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.agent_core import POD_LIMIT_FILES
from nodeconf.enforcer.lifecycle import NO_FAULTS, Faults
from nodeconf.semantics.hugepages import hugetlb_file
from suites.toolkit.builders import container, pod_manifest

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


HUGE = (2 << 20, 1 << 30)  # the x86-64 sizes


@pytest.mark.parametrize(("fault", "expected"), [("", "0"), ("hugetlb=ignore", None)])
def test_hugetlb_limits_on_pod_and_container(tmp_path: Path, fault: str, expected: str | None) -> None:
    """Every size the node offers, 0 when the pod asks for none (maybeSetHugetlb), at pod and container level."""
    facts = dataclasses.replace(ARTICLE_NODE, hugepages=tuple((size, 0) for size in HUGE))
    agent = make_agent(tmp_path, Faults.parse([fault]) if fault else NO_FAULTS, facts=facts)
    try:
        status = agent.run_pod(res_demo())["status"]
        hello = next(c for c in status["containers"] if c["name"] == "hello")
        for path in (status["cgroup"], hello["cgroup"]):
            assert [agent.tree.read(path, hugetlb_file(size)) for size in HUGE] == [expected, expected]
    finally:
        agent.shutdown()


@pytest.mark.parametrize(("fault", "expected"), [("", [str(4 << 20), "0"]), ("hugetlb=ignore", [None, None])])
def test_a_pod_using_the_pool_gets_its_request_as_limit(tmp_path: Path, fault: str,
                                                        expected: list[str | None]) -> None:
    """A node reserving 8 pages of 2 MiB admits a pod asking for 4Mi of them: hugetlb.2MB.max 4Mi, 1GB 0 on pod
    and container (ResourceConfigForPod, GetHugepageLimitsFromResources); the fault admits it and writes none."""
    facts = dataclasses.replace(ARTICLE_NODE, hugepages=((2 << 20, 16 << 20), (1 << 30, 0)))
    agent = make_agent(tmp_path, Faults.parse([fault]) if fault else NO_FAULTS, facts=facts)
    manifest = pod_manifest(container("c", limits={"cpu": "500m", "memory": "100Mi", "hugepages-2Mi": "4Mi"}),
                            name="huge")
    try:
        status = agent.run_pod(manifest)["status"]
        assert status["phase"] != "Failed" and status["containers"], status
        c = next(c for c in status["containers"] if c["name"] == "c")
        for path in (status["cgroup"], c["cgroup"]):
            assert [agent.tree.read(path, hugetlb_file(size)) for size in HUGE] == expected
    finally:
        agent.shutdown()


def test_every_node_limit_file_the_agent_writes_is_read_back() -> None:
    assert {*POD_LIMIT_FILES, *(hugetlb_file(size) for size in HUGE)} <= set(OBSERVED_FILES)


def test_bad_switch_fault_names_the_good_ones() -> None:
    with pytest.raises(ValueError, match="pids-limit=ignore, single-process-oom-kill=ignore, hugetlb=ignore"):
        Faults.parse(["pids-limit=yes"])
