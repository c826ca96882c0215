"""SystemdTree on a stand-in directory with a fake systemd: which calls it makes, in which order, and that it only
stops units whose cgroup carries nodeconf's mark (enforcer/systemd_tree.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.enforcer import systemd_units as su
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.ownership import ForeignCgroup, is_marked
from nodeconf.enforcer.systemd_tree import SystemdCallError, SystemdTree, systemd_manages, tree_for
from tests.unit.enforcer.enforcer_support import res_demo
from tests.unit.enforcer.fake_systemd import OWNER, FakeSystemd, systemd_agent

POD = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice"
SCOPE = f"{POD}/cri-containerd-c1.scope"


@pytest.fixture
def systemd(tmp_path: Path) -> FakeSystemd:
    return FakeSystemd(tmp_path)


@pytest.fixture
def tree(tmp_path: Path, systemd: FakeSystemd) -> SystemdTree:
    return SystemdTree(tmp_path, owner=OWNER, run=systemd)


def test_each_slice_is_started_as_a_unit_top_down_and_marked(tree: SystemdTree, systemd: FakeSystemd,
                                                             tmp_path: Path) -> None:
    tree.ensure(POD)
    assert systemd.calls == [su.start_unit("kubepods.slice", OWNER),
                             su.start_unit("kubepods.slice/kubepods-burstable.slice", OWNER),
                             su.start_unit(POD, OWNER)]
    for path in ("kubepods.slice", "kubepods.slice/kubepods-burstable.slice", POD):
        assert is_marked(tmp_path / path, kernel=False)
    tree.ensure(POD)
    assert len(systemd.calls) == 3  # ours and there: nothing started again


def test_a_slice_nodeconf_did_not_create_is_refused_before_any_call(tree: SystemdTree, systemd: FakeSystemd,
                                                                    tmp_path: Path) -> None:
    (tmp_path / "kubepods.slice").mkdir()
    with pytest.raises(ForeignCgroup, match="was not created by nodeconf"):
        tree.ensure(POD)
    assert systemd.calls == []


def test_a_failed_start_leaves_nothing_marked(tmp_path: Path) -> None:
    tree = SystemdTree(tmp_path, owner=OWNER, run=FakeSystemd(tmp_path, fail="StartTransientUnit"))
    with pytest.raises(SystemdCallError, match="StartTransientUnit: refused"):
        tree.ensure("kubepods.slice")
    assert not (tmp_path / "kubepods.slice").exists()


def test_resources_go_to_the_unit_as_properties(tree: SystemdTree, systemd: FakeSystemd) -> None:
    tree.ensure(POD)
    tree.set_properties(POD, {"cpu.weight": "4", "memory.oom.group": "1"})
    assert systemd.calls[-1] == su.set_properties(POD, [su.uint("CPUWeight", 4)])
    calls = len(systemd.calls)
    tree.set_properties(POD, {"memory.oom.group": "1"})  # no property: cgroupfs only
    tree.set_properties(f"{POD}/cri-containerd-gone.scope", {"cpu.weight": "4"})  # no such unit
    assert len(systemd.calls) == calls


def test_a_scope_starts_only_with_its_process(tree: SystemdTree, systemd: FakeSystemd, tmp_path: Path) -> None:
    assert tree.needs_process(SCOPE) and not tree.needs_process(POD)
    with pytest.raises(ValueError, match="starts with its process"):
        tree.ensure(SCOPE)
    tree.start_scope(SCOPE, 4242)
    assert systemd.methods()[-2:] == [("ResetFailedUnit", "cri-containerd-c1.scope"),
                                      ("StartTransientUnit", "cri-containerd-c1.scope")]
    assert systemd.calls[-1] == su.start_unit(SCOPE, OWNER, 4242)
    assert is_marked(tmp_path / SCOPE, kernel=False)
    tree.ensure(SCOPE)  # running: its values can be written
    with pytest.raises(ValueError, match="not a container scope"):
        tree.start_scope(POD, 4242)


def test_a_scope_a_runtime_started_is_adopted(tree: SystemdTree, tmp_path: Path) -> None:
    tree.ensure(POD)
    with pytest.raises(ValueError, match="not a running container scope"):
        tree.adopt(SCOPE)
    (tmp_path / SCOPE).mkdir()  # what `runc --systemd-cgroup run` leaves
    tree.adopt(SCOPE)
    assert is_marked(tmp_path / SCOPE, kernel=False)
    tree.adopt(SCOPE)  # already ours
    assert tree.process_cgroup(SCOPE) == SCOPE


def test_a_runtime_reuses_a_scope_name_only_once_systemd_removed_the_old_scope(tree: SystemdTree,
                                                                                 tmp_path: Path) -> None:
    tree.await_gone(SCOPE, timeout=0.05)  # never started: nothing to wait for
    (tmp_path / SCOPE).mkdir(parents=True)  # still being stopped by systemd
    with pytest.raises(SystemdCallError, match=r"cri-containerd-c1\.scope go away within 0\.05 s"):
        tree.await_gone(SCOPE, timeout=0.05)


def test_crun_s_sub_cgroup_is_adopted_and_holds_the_container(tree: SystemdTree, tmp_path: Path) -> None:
    tree.ensure(POD)
    (tmp_path / SCOPE / "container").mkdir(parents=True)  # what `crun --systemd-cgroup run` leaves
    tree.adopt(SCOPE)
    assert is_marked(tmp_path / SCOPE / "container", kernel=False)
    assert tree.process_cgroup(SCOPE) == f"{SCOPE}/container"
    assert tree.process_cgroup(POD) == POD


def test_remove_stops_units_deepest_first_and_resets_their_failed_state(tree: SystemdTree,
                                                                        systemd: FakeSystemd) -> None:
    tree.start_scope(SCOPE, 1)
    systemd.calls.clear()
    assert tree.remove("kubepods.slice") == []
    assert [(m, n) for m, n in systemd.methods() if m == "StopUnit"] == [
        ("StopUnit", "cri-containerd-c1.scope"), ("StopUnit", "kubepods-burstable-pod12_34.slice"),
        ("StopUnit", "kubepods-burstable.slice"), ("StopUnit", "kubepods.slice")]
    assert systemd.calls[0] == su.stop_unit(SCOPE) and systemd.calls[1] == su.reset_failed(SCOPE)


def test_a_foreign_cgroup_inside_keeps_its_units_running(tree: SystemdTree, systemd: FakeSystemd,
                                                         tmp_path: Path) -> None:
    tree.ensure(POD)
    tree.ensure("kubepods.slice/kubepods-besteffort.slice")
    (tmp_path / POD / "someone-else.scope").mkdir()
    systemd.calls.clear()
    assert tree.remove("kubepods.slice") == [tmp_path / POD / "someone-else.scope"]
    assert [n for m, n in systemd.methods() if m == "StopUnit"] == ["kubepods-besteffort.slice"]
    assert (tmp_path / POD / "someone-else.scope").is_dir()


def test_cgroupfs_driver_paths_stay_directories(tree: SystemdTree, systemd: FakeSystemd, tmp_path: Path) -> None:
    tree.owned = ("kubepods",)
    tree.ensure("kubepods/burstable/pod1234")
    assert systemd.calls == []
    assert is_marked(tmp_path / "kubepods/burstable/pod1234", kernel=False)


def test_systemd_manages_only_its_cgroup2_root(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "comm").write_text("systemd\n")
    root = tmp_path / "cg"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory\n")
    assert systemd_manages(root, proc)
    (root / "cgroup.type").write_text("domain\n")  # not the root cgroup
    assert not systemd_manages(root, proc)
    (proc / "1" / "comm").write_text("nodeconf-init\n")
    assert not systemd_manages(tmp_path, proc)


def test_a_stand_in_directory_gets_the_cgroupfs_tree(tmp_path: Path) -> None:
    assert type(tree_for(tmp_path)) is CgroupTree


def test_an_agent_runs_pods_in_units_and_containers_in_scopes(tmp_path: Path) -> None:
    """res-demo through the agent with the fake systemd: slices started, the pause and hello processes each held
    until their scope exists, the values set as properties and written, everything stopped on delete."""
    agent, systemd = systemd_agent(tmp_path)
    root = tmp_path / "cgroup"
    try:
        status = agent.run_pod(res_demo())["status"]
        containers = {c["name"]: c for c in status["containers"]}
        assert containers["hello"]["state"] == "running"
        hello = next(c for c in agent.pods["default/res-demo"].containers if c.name == "hello")
        assert hello.cgroup.endswith(".scope") and hello.proc is not None
        assert su.start_unit(hello.cgroup, OWNER, hello.proc.pid) in systemd.calls
        props = next(c for c in systemd.calls if c[6] == "SetUnitProperties" and c[8] == Path(hello.cgroup).name)
        # The article's 250m/500m/128Mi container (non-linear weight 35, quota 50 ms per 100 ms, no swap).
        assert props[10:] == ["8", "CPUWeight", "t", "35", "CPUQuotaPeriodUSec", "t", "100000",
                              "CPUQuotaPerSecUSec", "t", "500000", "MemoryMax", "t", "134217728",
                              "MemorySwapMax", "t", "0", "MemoryMin", "t", "0", "MemoryLow", "t", "0",
                              "MemoryHigh", "t", str(su.INFINITY)]
        assert (root / hello.cgroup / "cpu.weight").read_text() == "35"
        assert is_marked(root / hello.cgroup, kernel=False)
        pod_slice = agent.pods["default/res-demo"].cgroup
        agent.delete("default/res-demo")
        stopped = [n for m, n in systemd.methods() if m == "StopUnit"]
        assert Path(hello.cgroup).name in stopped and Path(pod_slice).name in stopped
        assert not (root / pod_slice).exists()
    finally:
        agent.shutdown()


def test_evidence_reads_crun_s_sub_cgroup_and_the_scope_above_it(tmp_path: Path) -> None:
    """crun runs the process in a `container` sub-cgroup of the scope and writes the OCI values there: the
    container's files are that sub-cgroup's, and the scope (what cadvisor reports) is read as well."""
    agent, _ = systemd_agent(tmp_path)
    try:
        agent.run_pod(res_demo())
        hello = next(c for c in agent.pods["default/res-demo"].containers if c.name == "hello")
        sub = tmp_path / "cgroup" / hello.cgroup / "container"
        sub.mkdir()
        (sub / "cpu.weight").write_text("10")  # crun's linear formula; the scope keeps systemd's 35
        assert isinstance(agent.tree, SystemdTree)
        agent.tree.adopt(hello.cgroup)  # as after `crun --systemd-cgroup run`
        doc = agent.evidence("default/res-demo")
        assert doc["processes"]["hello"]["cgroup"] == f"{hello.cgroup}/container"
        assert doc["cgroups"][f"{hello.cgroup}/container"]["cpu.weight"] == "10"
        assert doc["cgroups"][hello.cgroup]["cpu.weight"] == "35"
        assert doc["processes"]["POD"]["cgroup"] != doc["processes"]["hello"]["cgroup"]
    finally:
        agent.shutdown()
