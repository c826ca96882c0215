"""The helper pod's evidence reader against fake /proc and cgroup trees (systemd, cgroupfs, kind-nested, CRI-O)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.nodes.kube import reader as kube_reader
from nodeconf.nodes.kube.reader import (
    ReaderError,
    answer,
    is_container_leaf,
    kubepods_of,
    qos_leaf_name,
    unified_path,
)
from tests.unit.nodes.kube.fakes import CID_APP, CID_SANDBOX, CID_SIDE, FakeNode, Layout

UID = "0f6a3c1e-2b4d-4e8f-9a1b-3c5d7e9f1a2b"
UID_ = UID.replace("-", "_")


SYSTEMD = Layout(
    kubepods="kubepods.slice",
    burstable="kubepods.slice/kubepods-burstable.slice",
    besteffort="kubepods.slice/kubepods-besteffort.slice",
    pod=f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice",
    leaf="cri-containerd-{cid}.scope",
)
CGROUPFS = Layout(
    kubepods="kubepods",
    burstable="kubepods/burstable",
    besteffort="kubepods/besteffort",
    pod=f"kubepods/burstable/pod{UID}",
    leaf="{cid}",
)
KIND = Layout(
    kubepods="kubelet.slice/kubelet-kubepods.slice",
    burstable="kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice",
    besteffort="kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice",
    pod=(f"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
         f"kubelet-kubepods-burstable-pod{UID_}.slice"),
    leaf="cri-containerd-{cid}.scope",
)
CRIO = Layout(
    kubepods="kubepods.slice",
    burstable="kubepods.slice/kubepods-burstable.slice",
    besteffort="kubepods.slice/kubepods-besteffort.slice",
    pod=f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice",
    leaf="crio-{cid}.scope",
)
CONTAINERD_CRUN = Layout(
    kubepods="kubepods.slice",
    burstable="kubepods.slice/kubepods-burstable.slice",
    besteffort="kubepods.slice/kubepods-besteffort.slice",
    pod=f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice",
    leaf="cri-containerd-{cid}.scope",
    sub="container",
)
CRIO_CRUN = Layout(
    kubepods="kubepods.slice",
    burstable="kubepods.slice/kubepods-burstable.slice",
    besteffort="kubepods.slice/kubepods-besteffort.slice",
    pod=f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice",
    leaf="crio-{cid}.scope",
    sub="container",
    conmon="crio-conmon-{cid}.scope",
    pause=False,
)
CRIO_CGROUPFS = Layout(
    kubepods="kubepods",
    burstable="kubepods/burstable",
    besteffort="kubepods/besteffort",
    pod=f"kubepods/burstable/pod{UID}",
    leaf="crio-{cid}",
    conmon="crio-conmon-{cid}",
)
LAYOUTS = [pytest.param(SYSTEMD, id="containerd-runc-systemd"), pytest.param(CGROUPFS, id="containerd-runc-cgroupfs"),
           pytest.param(KIND, id="kind-nested"), pytest.param(CRIO, id="crio-runc-systemd"),
           pytest.param(CONTAINERD_CRUN, id="containerd-crun-systemd"), pytest.param(CRIO_CRUN, id="crio-crun-systemd"),
           pytest.param(CRIO_CGROUPFS, id="crio-cgroupfs")]


@pytest.fixture
def node(tmp_path: Path) -> FakeNode:
    return FakeNode(tmp_path)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("0::/kubepods.slice/x.scope\n", "kubepods.slice/x.scope", id="v2-only"),
    pytest.param("12:memory:/docker/abc\n1:name=systemd:/init.scope\n0::/init.scope\n", "init.scope",
                 id="hybrid-v1-and-v2"),
    pytest.param("0::/\n", "", id="root"),
    pytest.param("4:memory:/kubepods/pod1\n", None, id="v1-only"),
])
def test_unified_path_reads_the_zero_line(text: str, expected: str | None) -> None:
    assert unified_path(text) == expected


@pytest.mark.parametrize(("name", "matches"), [
    pytest.param(f"cri-containerd-{CID_APP}.scope", True, id="containerd-systemd"),
    pytest.param(CID_APP, True, id="cgroupfs"),
    pytest.param(f"crio-{CID_APP}.scope", True, id="crio"),
    pytest.param(f"docker-{CID_APP}.scope", True, id="cri-dockerd"),
    pytest.param(f"crio-conmon-{CID_APP}.scope", False, id="crio-conmon"),
    pytest.param(f"crio-{CID_APP}", True, id="crio-cgroupfs"),
    pytest.param(f"crio-conmon-{CID_APP}", False, id="crio-conmon-cgroupfs"),
    pytest.param(f"cri-containerd-{CID_SIDE}.scope", False, id="other-id"),
    pytest.param(f"x{CID_APP}.scope", False, id="id-not-after-a-dash"),
])
def test_container_leaf_names(name: str, matches: bool) -> None:
    assert is_container_leaf(name, CID_APP) is matches


@pytest.mark.parametrize(("path", "kubepods"), [
    pytest.param(SYSTEMD.container(CID_APP), "kubepods.slice", id="systemd"),
    pytest.param(CGROUPFS.container(CID_APP), "kubepods", id="cgroupfs"),
    pytest.param(KIND.container(CID_APP), "kubelet.slice/kubelet-kubepods.slice", id="kind-nested"),
])
def test_kubepods_found_above_a_container(path: str, kubepods: str) -> None:
    assert kubepods_of(path) == kubepods


def test_kubepods_missing_is_an_error() -> None:
    with pytest.raises(ReaderError, match="no kubepods cgroup"):
        kubepods_of("system.slice/containerd.service")


@pytest.mark.parametrize(("name", "qos"), [
    ("kubepods-burstable.slice", "burstable"), ("kubelet-kubepods-besteffort.slice", "besteffort"),
    ("burstable", "burstable"), (f"kubepods-pod{UID_}.slice", None), ("besteffortish", None),
])
def test_qos_leaf_names(name: str, qos: str | None) -> None:
    assert qos_leaf_name(name) == qos


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pod_evidence_discovers_every_level(node: FakeNode, layout: Layout) -> None:
    node.pod(layout)
    got = answer(node.host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP, "side": CID_SIDE}})
    assert got["pod"] == {"path": layout.pod, "files": {"cpu.weight": "10", "memory.max": "max",
                                                        "memory.low": "0"}}
    assert [a["path"] for a in got["ancestors"]] == [layout.kubepods, layout.burstable]
    app = got["containers"]["app"]
    assert app["path"] == layout.container(CID_APP)
    assert app["files"] == {"cgroup.procs": "102\n103", "cpu.weight": "35", "memory.max": "134217728",
                            "memory.swap.max": "0"}
    assert app["pids"] == [102, 103]
    assert app["oomScoreAdj"] == {"102": 963, "103": 963}
    if layout.sub:  # crun: the scope a kubelet's cadvisor reports is read as well, with its own values
        assert app["scope"] == {"path": layout.scope(CID_APP), "files": {
            "cpu.weight": "35", "memory.max": "134217728", "memory.swap.max": "134217728"}}
    else:
        assert app["scope"] is None
    assert got["containers"]["side"]["oomScoreAdj"] == {"104": 999}
    if layout.pause:
        assert [s["path"] for s in got["sandboxes"]] == [layout.container(CID_SANDBOX)]
        assert got["sandboxes"][0]["oomScoreAdj"] == {"101": -998}
    else:  # CRI-O without an infra container: its conmon cgroups are not mistaken for the pause
        assert got["sandboxes"] == []


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pod_cgroup_is_found_by_name_until_it_is_removed(node: FakeNode, layout: Layout) -> None:
    node.pod(layout)
    (node.cgroup / layout.pod / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    got = answer(node.host, {"op": "podCgroup", "podUid": UID, "files": ["memory.events"]})
    assert got == {"path": layout.pod, "files": {"memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1"}}
    other = "11111111-2222-3333-4444-555555555555"
    assert answer(node.host, {"op": "podCgroup", "podUid": other, "files": []}) == {"path": None}


def test_pod_evidence_reads_only_the_named_files(node: FakeNode) -> None:
    node.pod(SYSTEMD)
    got = answer(node.host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP},
                             "files": ["memory.max", "memory.high"]})
    assert got["containers"]["app"]["files"] == {"memory.max": "134217728"}
    assert got["pod"]["files"] == {"memory.max": "max"}


def test_a_terminated_container_keeps_its_name_out(node: FakeNode) -> None:
    node.pod(SYSTEMD)
    got = answer(node.host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP, "gone": "e" * 64}})
    assert set(got["containers"]) == {"app"}


def test_write_only_files_are_skipped(node: FakeNode) -> None:
    node.pod(SYSTEMD)
    reclaim = node.cgroup / SYSTEMD.container(CID_APP) / "memory.reclaim"
    reclaim.write_text("")
    reclaim.chmod(0o200)
    got = answer(node.host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP}})
    assert "memory.reclaim" not in got["containers"]["app"]["files"]


def test_guaranteed_pod_sits_in_kubepods(node: FakeNode) -> None:
    pod = f"kubepods.slice/kubepods-pod{UID_}.slice"
    node.cgroup_dir("kubepods.slice", cpu_weight="79")
    node.process(101, f"{pod}/cri-containerd-{CID_SANDBOX}.scope", -998)
    node.process(102, f"{pod}/cri-containerd-{CID_APP}.scope", -997)
    got = answer(node.host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP}})
    assert got["pod"]["path"] == pod
    assert got["ancestors"] == [{"path": "kubepods.slice", "files": {"cpu.weight": "79"}}]
    assert got["containers"]["app"]["oomScoreAdj"] == {"102": -997}


def test_unknown_pod_is_an_error(node: FakeNode) -> None:
    node.pod(SYSTEMD)
    with pytest.raises(ReaderError, match="no process of pod"):
        answer(node.host, {"op": "pod", "podUid": "11111111-2222-3333-4444-555555555555", "containers": {}})


@pytest.mark.parametrize("request_doc", [
    pytest.param({"op": "pod", "podUid": "../../etc", "containers": {}}, id="bad-uid"),
    pytest.param({"op": "pod", "podUid": UID, "containers": {"app": "../x"}}, id="bad-container-id"),
    pytest.param({"op": "pod", "podUid": UID, "containers": {}, "files": ["../../etc/shadow"]}, id="bad-file"),
    pytest.param({"op": "rm"}, id="unknown-op"),
])
def test_bad_requests_are_refused(node: FakeNode, request_doc: dict[str, object]) -> None:
    node.pod(SYSTEMD)
    with pytest.raises(ReaderError):
        answer(node.host, request_doc)


def test_paths_outside_our_namespace_are_skipped_and_counted(node: FakeNode) -> None:
    node.pod(SYSTEMD)
    node.process(300, "../../kubepods.slice/x.scope")
    node.process(301, "..")
    host = node.host
    assert "../../kubepods.slice/x.scope" not in host.process_cgroups() and host.outside == 2
    got = answer(host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP}})
    assert got["containers"]["app"]["pids"] == [102, 103]


def test_a_pod_seen_only_from_outside_our_namespace_says_so(node: FakeNode) -> None:
    node.process(300, f"../../{SYSTEMD.container(CID_APP)}")
    node.process(301, SYSTEMD.container(CID_SIDE).replace(UID_, "9" * 8 + "_" + "9" * 4 + "_" + "9" * 4 + "_"
                                                           + "9" * 4 + "_" + "9" * 12))
    with pytest.raises(ReaderError, match=r"no process of pod .* \(1 processes lie outside our cgroup namespace\)"):
        answer(node.host, {"op": "pod", "podUid": UID, "containers": {"app": CID_APP}})


def test_check_tells_cgroup_v1_from_v2(node: FakeNode) -> None:
    """cgroup v2 has cgroup.controllers at the root of its mount; a v1 node mounts per-controller dirs there."""
    node.pod(SYSTEMD)
    assert answer(node.host, {"op": "check"}) == {"cgroupV2": False}
    (node.cgroup / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    assert answer(node.host, {"op": "check"}) == {"cgroupV2": True}


def test_cgroup_v1_node_is_an_error(node: FakeNode) -> None:
    (node.proc / "7").mkdir()
    (node.proc / "7" / "cgroup").write_text("4:memory:/kubepods/pod1\n")
    with pytest.raises(ReaderError, match="cgroup v2"):
        node.host.process_cgroups()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_node_evidence_finds_kubepods_above_the_helper(node: FakeNode, layout: Layout) -> None:
    node.pod(layout)
    got = answer(node.host, {"op": "node", "files": ["cpu.weight"]})
    assert got["kubepods"] == {"path": layout.kubepods, "files": {"cpu.weight": "100"}}
    assert got["qos"] == {"burstable": {"path": layout.burstable, "files": {"cpu.weight": "100"}},
                          "besteffort": {"path": layout.besteffort, "files": {"cpu.weight": "100"}}}


def test_facts(node: FakeNode) -> None:
    node.pod(KIND)
    got = answer(node.host, {"op": "facts"})
    assert got["meminfo"] == "MemTotal:       8148820 kB\nSwapTotal:      4194300 kB\n"  # parsed by the controller
    assert got["kubepods"] == KIND.kubepods
    assert got["controllers"] == ["cpu", "memory", "pids"]
    assert got["pageSize"] > 0


def test_the_exact_exec_argv_runs_the_reader(node: FakeNode) -> None:
    """The driver execs `python3 -c <source> <request>`: run that argv for real against the fake tree."""
    node.pod(SYSTEMD)
    source = Path(kube_reader.__file__).read_text()
    request = {"op": "pod", "podUid": UID, "containers": {"app": CID_APP}, "proc": str(node.proc),
               "cgroupRoot": str(node.cgroup), "files": ["memory.max"]}
    done = subprocess.run([sys.executable, "-c", source, json.dumps(request)], capture_output=True, text=True,
                          check=False, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["containers"]["app"]["files"] == {"memory.max": "134217728"}
    bad = subprocess.run([sys.executable, "-c", source, json.dumps({**request, "podUid": "x"})],
                         capture_output=True, text=True, check=False, timeout=30)
    assert bad.returncode == 1
    assert json.loads(bad.stdout) == {"error": "ReaderError: bad pod uid 'x'"}
