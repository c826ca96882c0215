"""The agent writes the kubelet's node limits: pod pids.max from podPidsLimit, container memory.oom.group from
singleProcessOOMKill, pod and container hugetlb.<size>.max, kubepods pids.max and hugetlb.<size>.max from the
allocatable pids and huge pages; the `pids-limit=ignore`, `single-process-oom-kill=ignore` and `hugetlb=ignore` faults
write the defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from nodeconf.cgroup_files import OBSERVED_FILES
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.cgroup_writer import POD_LIMIT_FILES
from nodeconf.enforcer.lifecycle import NO_FAULTS, Faults
from nodeconf.enforcer.oracle import decide_resize, expect
from nodeconf.enforcer.systemd_tree import SystemdTree
from nodeconf.semantics.hugepages import hugetlb_file, hugetlb_rsvd_file
from suites.toolkit.builders import container, pod_manifest
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE, make_agent, res_demo, running_agent
from tests.unit.enforcer.fake_systemd import OWNER, FakeSystemd

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
# Each size's limit and its reservation limit, written alike (opencontainers/cgroups fs2 setHugeTlb).
HUGE_FILES = tuple(f for size in HUGE for f in (hugetlb_file(size), hugetlb_rsvd_file(size)))


@pytest.mark.parametrize(("fault", "expected"), [("", "0"), ("hugetlb=ignore", None)])
def test_hugetlb_limits_on_pod_and_container(tmp_path: Path, fault: str, expected: str | None) -> None:
    """Every size the node offers, 0 when the pod asks for none (maybeSetHugetlb), at pod and container level."""
    facts = dataclasses.replace(ARTICLE_NODE, hugepages=tuple((size, 0) for size in HUGE))
    agent = make_agent(tmp_path, Faults.parse([fault]) if fault else NO_FAULTS, facts=facts)
    try:
        status = agent.run_pod(res_demo())["status"]
        hello = next(c for c in status["containers"] if c["name"] == "hello")
        for path in (status["cgroup"], hello["cgroup"]):
            assert [agent.tree.read(path, f) for f in HUGE_FILES] == [expected] * 4
    finally:
        agent.shutdown()


@pytest.mark.parametrize(("fault", "expected"), [("", [str(4 << 20)] * 2 + ["0"] * 2), ("hugetlb=ignore", [None] * 4)])
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
            assert [agent.tree.read(path, f) for f in HUGE_FILES] == expected
    finally:
        agent.shutdown()


def test_every_node_limit_file_the_agent_writes_is_read_back() -> None:
    assert {*POD_LIMIT_FILES, *HUGE_FILES} <= set(OBSERVED_FILES)


def test_bad_switch_fault_names_the_good_ones() -> None:
    with pytest.raises(ValueError, match="pids-limit=ignore, single-process-oom-kill=ignore, hugetlb=ignore"):
        Faults.parse(["pids-limit=yes"])


# A node with 32768 pids and a pool of 8 pages of 2 MiB (the 1 GiB size offered, none reserved); upstream's reserves
# (node_container_manager_test.go setDesiredConfiguration: pid 1000 + 738, `pods` enforced): kubepods pids.max
# 32768 − 1738 = 31030, hugetlb.2MB.max the whole pool 8 × 2 MiB = 16777216 (no hugepage reserve), 1GB 0.
POOL_NODE = dataclasses.replace(ARTICLE_NODE, pid_capacity=32768, hugepages=((2 << 20, 16 << 20), (1 << 30, 0)))
KUBEPODS_FILES = ("pids.max", *HUGE_FILES)
CGROUPFS: dict[str, Any] = {"kind": "KubeletConfiguration", "cgroupDriver": "cgroupfs"}
RESERVES: dict[str, Any] = {**CGROUPFS, "enforceNodeAllocatable": ["pods"], "systemReserved": {"pid": "1000"},
                            "kubeReserved": {"pid": "738"}}


@pytest.mark.parametrize(("fault", "expected"), [
    ("", ("31030", "16777216", "16777216", "0", "0")),
    ("hugetlb=ignore", ("31030", None, None, None, None)),
    ("pids-limit=ignore", ("31030", "16777216", "16777216", "0", "0")),
])
def test_kubepods_gets_the_allocatable_pids_and_hugepages(tmp_path: Path, fault: str,
                                                          expected: tuple[str | None, ...]) -> None:
    """createNodeAllocatableCgroups → getCgroupConfig on kubepods; `hugetlb=ignore` writes no hugetlb there either,
    `pids-limit=ignore` (podPidsLimit) leaves kubepods alone."""
    agent = make_agent(tmp_path, Faults.parse([fault]) if fault else NO_FAULTS, facts=POOL_NODE)
    try:
        agent.configure(CGROUPFS)  # `pods` enforced by default, no reserve: the whole capacity
        assert agent.tree.read("kubepods", "pids.max") == "32768"
        agent.configure(RESERVES)
        assert tuple(agent.tree.read("kubepods", f) for f in KUBEPODS_FILES) == expected
        assert tuple(agent.node_cgroups()["kubepods"].get(f) for f in KUBEPODS_FILES) == expected
    finally:
        agent.shutdown()


@pytest.mark.parametrize(("fault", "expected"), [("", [str(1 << 62)] * 4), ("hugetlb=ignore", [None] * 4)])
def test_qos_tiers_get_unbounded_huge_pages(tmp_path: Path, fault: str, expected: list[str | None]) -> None:
    """qos_container_manager_linux.go setHugePagesUnbounded on kubepods/burstable and kubepods/besteffort; the
    fault writes none there either."""
    agent = make_agent(tmp_path, Faults.parse([fault]) if fault else NO_FAULTS, facts=POOL_NODE)
    try:
        agent.configure(CGROUPFS)
        for path in ("kubepods/burstable", "kubepods/besteffort"):
            assert [agent.tree.read(path, f) for f in HUGE_FILES] == expected
    finally:
        agent.shutdown()


def test_kubepods_slice_gets_tasks_max_and_the_hugetlb_files(tmp_path: Path) -> None:
    """systemd driver: pids.max goes as TasksMax in SetUnitProperties of kubepods.slice (and as the file); hugetlb
    has no unit property, so it is written to the cgroup file only."""
    root, state = tmp_path / "cgroup", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    systemd = FakeSystemd(root)
    agent = Agent(SystemdTree(root, owner=OWNER, run=systemd), state, POOL_NODE, expect, decide_resize)
    try:
        agent.recover()
        agent.configure({**RESERVES, "cgroupDriver": "systemd"})
        calls = [c[11:] for c in systemd.calls if c[6:9] == ["SetUnitProperties", "sba(sv)", "kubepods.slice"]]
        triples = [tuple(call[i:i + 3]) for call in calls for i in range(0, len(call), 3)]
        assert ("TasksMax", "t", "31030") in triples
        assert not [t for t in triples if "hugetlb" in t[0].lower()]
        assert tuple(agent.tree.read("kubepods.slice", f) for f in KUBEPODS_FILES) == (
            "31030", "16777216", "16777216", "0", "0")
    finally:
        agent.shutdown()


@pytest.mark.parametrize(("fault", "expected"), [("", ("0",) * 4), ("hugetlb=ignore", (None,) * 4)])
def test_hugetlb_fault_also_spares_the_reserve_cgroup(tmp_path: Path, fault: str,
                                                      expected: tuple[str | None, ...]) -> None:
    """An enforced system-reserved without hugepages reserved gets 0 for every size (maybeSetHugetlb); the fault
    writes none there either."""
    agent = make_agent(tmp_path, Faults.parse([fault]) if fault else NO_FAULTS, facts=POOL_NODE)
    try:
        agent.configure({**RESERVES, "enforceNodeAllocatable": ["pods", "system-reserved"],
                         "systemReservedCgroup": "system-reserved"})
        reserve = agent.tree.root / "system-reserved"
        assert (reserve / "pids.max").read_text() == "1000"
        assert tuple((reserve / f).read_text() if (reserve / f).exists() else None
                     for f in KUBEPODS_FILES[1:]) == expected
    finally:
        agent.shutdown()
