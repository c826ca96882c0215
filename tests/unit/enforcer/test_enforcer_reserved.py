"""The agent makes and writes the enforced reserve cgroups (enforceNodeAllocatable system-reserved, kube-reserved)
on a stand-in cgroup tree: created and marked, refused when they exist without nodeconf's mark, removed when no
longer enforced, on reset, shutdown, a restart and `cleanup`; the `reserved-cgroups=ignore` fault makes none.

Expected values: upstream test/e2e_node/node_container_manager_test.go setDesiredConfiguration (system-reserved cpu
100m, memory 100Mi, pid 1000; kube-reserved cpu 100m, memory 100Mi, pid 738); cpu 100m → MilliCPUToShares 102 →
cpu.weight 1 + (102 − 2)·9999/262142 = 4 (the e2e's convertSharesToWeight).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer import systemd_units as su
from nodeconf.enforcer.__main__ import main
from nodeconf.enforcer.agent_error import AgentError
from nodeconf.enforcer.lifecycle import NO_FAULTS, Faults
from nodeconf.enforcer.ownership import MARKER_FILE
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE, make_agent, running_agent
from tests.unit.enforcer.fake_systemd import OWNER, systemd_agent

MI = 1 << 20
SYSTEM = {"cpu.weight": "4", "memory.max": str(100 * MI), "pids.max": "1000"}
KUBE = {**SYSTEM, "pids.max": "738"}
# The cgroupfs driver takes the names as paths; the systemd driver expands them (kube-reserved →
# kube.slice/kube-reserved.slice: cgroup_manager_linux.go ParseSystemdToCgroupName, ToSystemd).
PATHS = {"cgroupfs": ("system-reserved", "kube-reserved"),
         "systemd": ("system.slice/system-reserved.slice", "kube.slice/kube-reserved.slice")}


def upstream_config(driver: str = "cgroupfs", enforce: tuple[str, ...] = ("pods", "system-reserved",
                                                                          "kube-reserved")) -> dict[str, Any]:
    return {"kind": "KubeletConfiguration", "cgroupDriver": driver, "enforceNodeAllocatable": list(enforce),
            "systemReservedCgroup": "system-reserved", "kubeReservedCgroup": "kube-reserved",
            "systemReserved": {"cpu": "100m", "memory": "100Mi", "pid": "1000"},
            "kubeReserved": {"cpu": "100m", "memory": "100Mi", "pid": "738"},
            "evictionHard": {"memory.available": "100Mi"}}


def dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def read(root: Path, path: str, files: dict[str, str]) -> dict[str, str | None]:
    return {f: (root / path / f).read_text().strip() if (root / path / f).exists() else None for f in files}


@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
def test_enforced_reserves_are_created_marked_and_written(tmp_path: Path, driver: str) -> None:
    for agent in running_agent(tmp_path):
        agent.configure(upstream_config(driver))
        root = agent.tree.root
        system, kube = PATHS[driver]
        assert read(root, system, SYSTEM) == SYSTEM
        assert read(root, kube, KUBE) == KUBE
        for path in (system, kube):
            parts = path.split("/")
            for depth in range(1, len(parts) + 1):
                assert (root.joinpath(*parts[:depth]) / MARKER_FILE).is_file()
        seen = agent.node_cgroups()
        assert {k: seen[system][k] for k in SYSTEM} == SYSTEM
        assert {k: seen[kube][k] for k in KUBE} == KUBE


def test_kubepods_is_still_capacity_minus_the_reserves(tmp_path: Path) -> None:
    """createNodeAllocatableCgroups: kubepods memory.max = capacity − 200Mi (no eviction threshold)."""
    for agent in running_agent(tmp_path):
        agent.configure(upstream_config())
        assert agent.tree.read("kubepods", "memory.max") == str((ARTICLE_NODE.memory_capacity - 200 * MI)
                                                                // 4096 * 4096)


@pytest.mark.parametrize(("driver", "foreign"), [("cgroupfs", "system-reserved"), ("systemd", "kube.slice")])
def test_a_reserve_cgroup_nodeconf_did_not_make_is_refused_and_never_written(tmp_path: Path, driver: str,
                                                                             foreign: str) -> None:
    for agent in running_agent(tmp_path):
        (agent.tree.root / foreign).mkdir()
        with pytest.raises(AgentError, match=f"{foreign} was not created by nodeconf"):
            agent.configure(upstream_config(driver))
        assert list((agent.tree.root / foreign).iterdir()) == []
        assert agent.oracle.config.enforce_node_allocatable == ("pods",)
        assert not any((agent.tree.root / p).exists() for p in PATHS[driver] if not p.startswith(foreign))
    assert (tmp_path / "cgroup" / foreign).is_dir()  # shutdown leaves it


@pytest.mark.parametrize(("name", "problem"), [("kubepods", "lies in kubepods"), ("/", "names the root cgroup"),
                                               ("../etc", "does not resolve")])
def test_a_reserve_name_nodeconf_will_not_make_is_one_line(tmp_path: Path, name: str, problem: str) -> None:
    for agent in running_agent(tmp_path):
        with pytest.raises(AgentError, match=problem):
            agent.configure({**upstream_config(), "systemReservedCgroup": name})
        assert dirs(agent.tree.root) == ["kubepods.slice"]


@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
def test_reserves_go_when_no_longer_enforced(tmp_path: Path, driver: str) -> None:
    for agent in running_agent(tmp_path):
        agent.configure(upstream_config(driver))
        agent.configure(upstream_config(driver, ("pods", "kube-reserved")))
        system, kube = PATHS[driver]
        assert not (agent.tree.root / system.split("/")[0]).exists()
        assert read(agent.tree.root, kube, KUBE) == KUBE
        agent.configure(upstream_config(driver, ("pods",)))
        assert dirs(agent.tree.root) == [agent.tree.owned[driver == "cgroupfs"]]


def test_reset_and_shutdown_remove_the_reserves_but_not_a_cgroup_of_someone_else(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    agent.configure(upstream_config())
    agent.reset()
    assert not (agent.tree.root / "system-reserved").exists()
    agent.configure(upstream_config())
    (agent.tree.root / "kube-reserved" / "theirs").mkdir()
    agent.shutdown()
    assert dirs(agent.tree.root) == ["kube-reserved"]
    assert (agent.tree.root / "kube-reserved" / "theirs").is_dir()


def test_a_restarted_agent_removes_and_remakes_the_reserves(tmp_path: Path) -> None:
    first = make_agent(tmp_path)
    first.configure(upstream_config())
    (first.tree.root / "system-reserved" / "pids.max").write_text("5\n")  # as a crashed agent left it
    second = make_agent(tmp_path)
    try:
        assert read(second.tree.root, "system-reserved", SYSTEM) == SYSTEM
    finally:
        second.shutdown()
    assert dirs(second.tree.root) == []


def test_cleanup_removes_the_reserves_the_state_file_names(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    agent.configure(upstream_config())
    (agent.tree.root / "other").mkdir()
    assert main(["cleanup", "--stand-in", "--root", str(agent.tree.root), "--state-dir", str(agent.state_dir)]) == 0
    assert dirs(agent.tree.root) == ["other"]


def test_the_fault_makes_no_reserve_cgroup(tmp_path: Path) -> None:
    for agent in running_agent(tmp_path, Faults.parse(["reserved-cgroups=ignore"])):
        agent.configure(upstream_config())
        assert dirs(agent.tree.root) == ["kubepods"]
        assert agent.tree.read("kubepods", "memory.max") != "max"
        assert not any(p in agent.node_cgroups() for p in PATHS["cgroupfs"])


def test_the_pods_allocatable_fault_leaves_kubepods_at_capacity(tmp_path: Path) -> None:
    """`pods-allocatable=ignore`: kubepods memory.max is the node's capacity, not capacity − both reserves (200Mi),
    as if `pods` were not enforced (node_container_manager_linux.go createNodeAllocatableCgroups); the reserve
    cgroups are still made."""
    for faults, memory in ((NO_FAULTS, ARTICLE_NODE.memory_capacity - 200 * MI),
                           (Faults.parse(["pods-allocatable=ignore"]), ARTICLE_NODE.memory_capacity)):
        (tmp_path / str(memory)).mkdir()
        for agent in running_agent(tmp_path / str(memory), faults):
            agent.configure(upstream_config())
            assert agent.tree.read("kubepods", "memory.max") == str(memory)
            assert dirs(agent.tree.root) == ["kube-reserved", "kubepods", "system-reserved"]


def test_systemd_makes_each_reserve_a_transient_slice_with_its_properties(tmp_path: Path) -> None:
    """The kubelet's systemd driver needs the slice to exist and Updates it: SetUnitProperties, then the files."""
    agent, systemd = systemd_agent(tmp_path)
    root = tmp_path / "cgroup"
    try:
        agent.configure(upstream_config("systemd"))
        system, kube = PATHS["systemd"]
        assert su.start_unit("kube.slice", OWNER) in systemd.calls
        assert su.start_unit(kube, OWNER) in systemd.calls
        assert su.set_properties(system, su.resource_properties(SYSTEM)) in systemd.calls
        assert read(root, system, SYSTEM) == SYSTEM
    finally:
        agent.shutdown()
    assert ("StopUnit", "kube.slice") in systemd.methods()
    assert not (root / "kube.slice").exists()


def test_a_process_runs_inside_a_reserve_cgroup_the_agent_made_only(tmp_path: Path) -> None:
    """exec_node: the process joins the reserve cgroup (its pid in cgroup.procs) before argv runs."""
    for agent in running_agent(tmp_path):
        agent.configure(upstream_config())
        result = agent.exec_in_reserve("system-reserved", ["sh", "-c", "echo $$"], 10)
        assert result["rc"] == 0
        assert (agent.tree.root / "system-reserved" / "cgroup.procs").read_text().split() == [result["stdout"].strip()]
        with pytest.raises(AgentError, match="is not an enforced reserve cgroup of this agent"):
            agent.exec_in_reserve("kubepods", ["true"], 10)


def test_a_reserve_cgroup_that_lost_its_mark_is_neither_read_nor_given_a_process(tmp_path: Path) -> None:
    for agent in running_agent(tmp_path):
        agent.configure(upstream_config())
        (agent.tree.root / "system-reserved" / MARKER_FILE).unlink()  # someone else's now
        assert "system-reserved" not in agent.node_cgroups()
        with pytest.raises(AgentError, match="is not an enforced reserve cgroup"):
            agent.exec_in_reserve("system-reserved", ["true"], 10)
    assert dirs(tmp_path / "cgroup") == ["system-reserved"]
