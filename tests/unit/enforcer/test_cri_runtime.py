"""What the CRI runtime sends, as the kubelet sends it: the LinuxContainerResources from the oracle's files (read
back by protobuf's generated message), the pod cgroup as cgroup_parent per cgroup driver, the container cgroup the
runtime makes (containerd getCgroupsPath, RUNTIME-FACTS §1), and one token per state directory, removed by the
cleanup once the runtime holds nothing labelled with it."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer import __main__ as enforcer_main
from nodeconf.enforcer import oci_bundle
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.cri import messages as m
from nodeconf.enforcer.cri.images import OWNER_LABEL
from nodeconf.enforcer.cri.proto import encode
from nodeconf.enforcer.cri.runtime import SANDBOX_LINE, TOKEN_FILE, CriRuntime
from nodeconf.enforcer.oracle import decide_resize, expect
from nodeconf.enforcer.ownership import MARKER_FILE, agent_owner
from tests.unit.enforcer.cri_server import Handler, server
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE

api = pytest.importorskip("cri_api.v1.api_pb2")
__all__ = ["server"]  # the grpcio runtime fixture (tests.unit.enforcer.cri_server)
POD_SLICE = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice"
POD_PATH = "kubepods/burstable/pod1234-5678"
FILES = {"cpu.max": "50000 100000", "memory.max": "268435456", "memory.swap.max": "0", "memory.min": "0",
         "memory.high": "241591910", "hugetlb.2MB.max": "4194304", "hugetlb.2MB.rsvd.max": "4194304",
         "hugetlb.1GB.max": "0", "cpu.weight": "20"}


def runtime(tmp_path: Path, systemd: bool = True) -> CriRuntime:
    return CriRuntime(tmp_path, (), systemd, socket_path=str(tmp_path / "none.sock"))


def test_the_kubelets_resources_reach_the_runtime_field_by_field(tmp_path: Path) -> None:
    cri = oci_bundle.cri_resources(FILES, 512)
    sent = api.LinuxContainerResources()
    sent.ParseFromString(encode(m.LINUX_CONTAINER_RESOURCES, runtime(tmp_path).resources_for(cri, True)))
    assert (sent.cpu_quota, sent.cpu_period, sent.cpu_shares, sent.memory_limit_in_bytes) == (
        50000, 100000, 512, 268435456)
    assert dict(sent.unified) == {"memory.swap.max": "0", "memory.high": "241591910"}
    assert sorted((h.page_size, h.limit) for h in sent.hugepage_limits) == [("1GB", 0), ("2MB", 4194304)]
    assert sent.memory_swap_limit_in_bytes == 0  # the kubelet sends no CRI swap on cgroup v2 (RUNTIME-FACTS 2a)


def test_an_unlimited_container_sends_zeros_which_the_runtime_reads_as_unset(tmp_path: Path) -> None:
    cri = oci_bundle.cri_resources({"cpu.max": "max 100000", "memory.max": "max"}, 2)
    sent = runtime(tmp_path).resources_for(cri, True)
    assert (sent["cpu_quota"], sent["memory_limit_in_bytes"], sent["cpu_period"]) == (0, 0, 100000)
    assert "hugepage_limits" not in sent
    assert "cpuset_cpus" not in sent  # no CPU manager choice: the runtime's default


def test_the_static_cpu_managers_cpus_reach_the_runtime(tmp_path: Path) -> None:
    cri = oci_bundle.cri_resources({"cpu.max": "max 100000", "cpuset.cpus": "1,3"}, 2048)
    sent = api.LinuxContainerResources()
    sent.ParseFromString(encode(m.LINUX_CONTAINER_RESOURCES, runtime(tmp_path).resources_for(cri, True)))
    assert sent.cpuset_cpus == "1,3"


@pytest.mark.parametrize(("systemd", "pod", "parent", "container"), [
    (True, POD_SLICE, "kubepods-burstable-pod1234_5678.slice", f"{POD_SLICE}/cri-containerd-abc.scope"),
    (False, POD_PATH, f"/{POD_PATH}", f"{POD_PATH}/abc"),
])
def test_cgroup_parent_and_the_container_cgroup_follow_the_driver(tmp_path: Path, systemd: bool, pod: str,
                                                                  parent: str, container: str) -> None:
    cri = runtime(tmp_path, systemd)
    assert cri.cgroup_parent(pod) == parent
    assert cri.live_cgroup(pod, "abc") == container


def test_one_token_per_state_directory(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    first, again, other = runtime(tmp_path), runtime(tmp_path), runtime(tmp_path / "other")
    assert first.token == again.token != other.token
    assert first.workload_image.endswith(":" + first.token)
    assert (tmp_path / "cri-token").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("dump", "image"), [
    # containerd 1.6/1.7 `config dump` (CRI plugin section) and 2.x (the image plugin's pinned images).
    ('[plugins."io.containerd.grpc.v1.cri"]\n    sandbox_image = "registry.k8s.io/pause:3.8"\n',
     "registry.k8s.io/pause:3.8"),
    ("[plugins.'io.containerd.cri.v1.images'.pinned_images]\n      sandbox = 'registry.k8s.io/pause:3.10'\n",
     "registry.k8s.io/pause:3.10"),
])
def test_the_sandbox_image_is_read_from_either_config_dump(dump: str, image: str) -> None:
    found = SANDBOX_LINE.search(dump)
    assert found is not None and found.group(1) == image


@pytest.fixture
def runtime_answering(tmp_path: Path, server: tuple[str, dict[str, Handler]],
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[Any], Path]]:
    """The node's CRI runtime for the cleanup: a grpcio server holding no sandbox, and a `ctr` that lists no
    image; the ListPodSandbox requests it saw and the file its `ctr` calls are logged in."""
    path, handlers = server
    listed: list[Any] = []

    def list_sandboxes(request: bytes, _context: Any) -> bytes:
        message = api.ListPodSandboxRequest()
        message.ParseFromString(request)
        listed.append(message)
        return bytes(api.ListPodSandboxResponse().SerializeToString())

    handlers[m.RUNTIME_SERVICE + "ListPodSandbox"] = list_sandboxes
    calls = tmp_path / "ctr-calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ctr").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (bin_dir / "ctr").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(enforcer_main, "CONTAINERD_SOCKET", path)
    yield listed, calls


def marked_state(tmp_path: Path) -> Path:
    """A state directory as the driver pushes it (its mark) with an agent's CRI token in it."""
    state = tmp_path / "state"
    state.mkdir()
    (state / MARKER_FILE).write_text("session\n")
    (state / TOKEN_FILE).write_text("0123456789abcdef\n")
    (tmp_path / "cgroup").mkdir()
    return state


def test_cleanup_removes_the_cri_token_once_the_runtime_holds_nothing_of_it(
        tmp_path: Path, runtime_answering: tuple[list[Any], Path]) -> None:
    listed, calls = runtime_answering
    state = marked_state(tmp_path)
    assert enforcer_main.main(["cleanup", "--stand-in", "--root", str(tmp_path / "cgroup"),
                               "--state-dir", str(state)]) == 0
    assert [dict(r.filter.label_selector) for r in listed] == [{OWNER_LABEL: "0123456789abcdef"}]
    assert f'labels."{OWNER_LABEL}"==0123456789abcdef' in calls.read_text()
    assert sorted(p.name for p in state.iterdir()) == [MARKER_FILE]


def test_cleanup_keeps_the_cri_token_while_no_runtime_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Without the token nothing could prove the runtime's leftover sandboxes and images this agent's."""
    monkeypatch.setattr(enforcer_main, "CONTAINERD_SOCKET", str(tmp_path / "absent.sock"))
    state = marked_state(tmp_path)
    assert enforcer_main.main(["cleanup", "--stand-in", "--root", str(tmp_path / "cgroup"),
                               "--state-dir", str(state)]) == 0
    assert (state / TOKEN_FILE).read_text() == "0123456789abcdef\n"
    assert f"kept {state / TOKEN_FILE}" in capsys.readouterr().err


def _agent(state: Path, socket_path: str) -> Agent:
    """An agent on a stand-in cgroup tree whose containers the CRI runtime at `socket_path` starts."""
    root = state.parent / "cgroup"
    root.mkdir(exist_ok=True)
    agent = Agent(CgroupTree(root, owner=agent_owner(state)), state, ARTICLE_NODE, expect, decide_resize,
                  runtime=CriRuntime(state, (), True, socket_path=socket_path))
    agent.recover()
    return agent


def test_each_cri_call_is_bounded_by_the_configured_runtime_request_timeout(
        tmp_path: Path, server: tuple[str, dict[str, Handler]]) -> None:
    """Issue 28: a slow node's operator raises runtimeRequestTimeout, and the kubelet bounds its CRI calls by it
    (cri-client remote_runtime.go: StartContainer and CreateContainer by it, RunPodSandbox by twice it,
    StopContainer by it plus the grace seconds). grpcio reads the deadline our calls carry; the agent keeps the
    bound over its own restart (state file) and drops it with a reset (the 2m0s default)."""
    path, handlers = server
    deadlines: dict[str, float] = {}

    def recorded(name: str) -> Handler:
        def answer(_request: bytes, context: Any) -> bytes:
            deadlines[name] = context.time_remaining()
            return b""
        return answer

    for name in ("CreateContainer", "StartContainer", "RunPodSandbox", "StopContainer"):
        handlers[m.RUNTIME_SERVICE + name] = recorded(name)

    def bounds(agent: Agent) -> dict[str, int]:
        runtime = agent.launcher.runtime
        assert isinstance(runtime, CriRuntime)
        deadlines.clear()
        runtime.client.create_container("s1", {}, {})
        runtime.client.start_container("c1")
        runtime.client.run_pod_sandbox({})
        runtime.client.stop_container("c1", 30)
        return {name: math.ceil(left) for name, left in deadlines.items()}

    state = tmp_path / "state"
    state.mkdir()
    agent = _agent(state, path)
    assert bounds(agent) == {"CreateContainer": 120, "StartContainer": 120, "RunPodSandbox": 240,
                             "StopContainer": 150}
    agent.configure({"kind": "KubeletConfiguration", "runtimeRequestTimeout": "10m0s"})
    assert bounds(agent) == {"CreateContainer": 600, "StartContainer": 600, "RunPodSandbox": 1200,
                             "StopContainer": 630}
    assert bounds(_agent(state, path))["StartContainer"] == 600  # restored from the state file
    agent.reset()
    assert bounds(agent)["StartContainer"] == 120


def test_the_kubelet_flag_overrides_the_configured_runtime_request_timeout(
        tmp_path: Path, server: tuple[str, dict[str, Handler]]) -> None:
    """`serve --runtime-request-timeout 10m0s`, as a slow node's operator passes the kubelet flag: kubelet flags
    override its config file (kubelet reference, --config), so a configuration's 1m0s leaves the bound at 600 s."""
    path, handlers = server
    deadlines: list[float] = []

    def start(_request: bytes, context: Any) -> bytes:
        deadlines.append(context.time_remaining())
        return b""

    handlers[m.RUNTIME_SERVICE + "StartContainer"] = start
    state = tmp_path / "state"
    state.mkdir()
    root = tmp_path / "cgroup"
    root.mkdir()
    runtime = CriRuntime(state, (), True, socket_path=path)
    runtime.take_flag(600.0)
    agent = Agent(CgroupTree(root, owner=agent_owner(state)), state, ARTICLE_NODE, expect, decide_resize,
                  runtime=runtime)
    agent.recover()
    runtime.client.start_container("c1")
    agent.configure({"kind": "KubeletConfiguration", "runtimeRequestTimeout": "1m0s"})
    runtime.client.start_container("c1")
    assert [math.ceil(left) for left in deadlines] == [600, 600]


@pytest.mark.parametrize("flag", ["2min", "-5s"])
def test_a_bad_runtime_request_timeout_flag_is_one_line_and_exit_2(tmp_path: Path, flag: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cgroup").mkdir()
    code = enforcer_main.main(["serve", "--stand-in", "--root", str(tmp_path / "cgroup"), "--state-dir",
                               str(tmp_path / "state"), "--socket", str(tmp_path / "a.sock"),
                               f"--runtime-request-timeout={flag}"])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (2, 1), err
    assert err.startswith("nodeconf agent: --runtime-request-timeout: ")
    assert not (tmp_path / "state").exists()  # refused before anything is made
