"""`--node kind[:CONFIG]` provisioning against fake `kind` and `docker` executables on PATH (kind_fakes.py): the
exact calls and their order, a cluster name of the run's own, the cluster deleted on failure and on SIGINT, kept
with keep=1, never a cluster the run did not create, and the one-line refusals (missing kind or engine, unknown
config, gates the node image does not know, two kind nodes of one config) before anything is started."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from nodeconf.errors import MAX_MESSAGE, InputError
from nodeconf.infra.kind import provision
from nodeconf.infra.kind.configs import KIND_DIR, KindConfig, resolve_config
from nodeconf.infra.kind.provision import open_kind_node
from nodeconf.infra.vm.state import process_start
from nodeconf.loader import load_kubelet_config
from nodeconf.nodes import registry
from nodeconf.nodes.base import Node, NodeError
from nodeconf.nodes.kube.api import KubeApiError
from nodeconf.nodes.kube.node import KubeNode
from tests.unit.infra.kind.kind_fakes import FakeTools, install

REPO = Path(__file__).resolve().parents[4]
WORKLOADS = REPO / "workloads"
NAME = "nodeconf-limitedswap"  # what every run used to create; now a user's (or an older nodeconf's) cluster
OURS = re.compile(r"nodeconf-limitedswap-[0-9a-f]{6}")  # the run's own: config and a random run id

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    fake = install(tmp_path)
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("KIND_EXPERIMENTAL_PROVIDER", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the records of this host's clusters
    return fake


def recorded(tools: FakeTools) -> dict[str, dict[str, Any]]:
    """The records of this host's clusters in the canary cache, by cluster name."""
    directory = tools.state.parent / "xdg" / "nodeconf" / "kind"
    return {path.stem: json.loads(path.read_text()) for path in directory.glob("*.json")}


class OpenedNode:
    """What the injected kube opener returns: it only records close and runs the cluster's after-close action."""

    def __init__(self, after_close: Callable[[], None]) -> None:
        self.after_close = after_close
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self.after_close()


class Opener:
    """A kube opener that records its arguments and the kubeconfig it was given; raises `fail` when set."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.seen: list[tuple[str, Path, dict[str, Any]]] = []

    def __call__(self, context: str, kubeconfig: Path, after_close: Callable[[], None]) -> Node:
        self.seen.append((context, kubeconfig, json.loads(kubeconfig.read_text())))
        if self.fail is not None:
            raise self.fail
        return cast(Node, OpenedNode(after_close))


def create_call(kubeconfig: Path, name: str, config: str = "limitedswap") -> list[str]:
    return ["kind", "create", "cluster", "--name", name, "--config", str(KIND_DIR / f"{config}.yaml"),
            "--kubeconfig", str(kubeconfig), "--wait", "300s"]


def delete_call(kubeconfig: Path, name: str) -> list[str]:
    return ["kind", "delete", "cluster", "--name", name, "--kubeconfig", str(kubeconfig)]


def created_name(tools: FakeTools) -> str:
    """The name the run's `kind create cluster` asked for."""
    [create] = [call for call in tools.calls() if call[1:3] == ["create", "cluster"]]
    return create[create.index("--name") + 1]


def deleted_names(tools: FakeTools) -> list[str]:
    return [call[call.index("--name") + 1] for call in tools.calls() if call[1:3] == ["delete", "cluster"]]


def open_default(opener: Opener, progress: list[str] | None = None, **kwargs: Any) -> Node:
    args: dict[str, Any] = {"kubelet_config": None, "keep": False, "profile": None}
    args.update(kwargs)
    name = args.pop("config", None)
    return open_kind_node(name, progress=(progress if progress is not None else []).append, open_kube=opener, **args)


# --- the calls, in order --------------------------------------------------------------------------------------

def test_creates_opens_and_deletes_with_a_private_kubeconfig(tools: FakeTools) -> None:
    opener = Opener()
    progress: list[str] = []
    node = open_default(opener, progress)
    [(context, kubeconfig, written)] = opener.seen
    name = created_name(tools)
    assert OURS.fullmatch(name) and context == f"kind-{name}" and written["current-context"] == context
    assert kubeconfig.name == "kubeconfig" and kubeconfig.parent.name.startswith(f"{name}-")
    assert not kubeconfig.is_relative_to(Path.home() / ".kube")
    assert tools.calls() == [["kind", "version"], ["kind", "get", "clusters"], create_call(kubeconfig, name)]
    assert tools.clusters() == [name]
    node.close()
    assert tools.calls()[3:] == [delete_call(kubeconfig, name)]
    assert tools.calls("end")[-1] == delete_call(kubeconfig, name)
    assert tools.clusters() == [] and not kubeconfig.parent.exists()
    assert progress[0] == ("kind config limitedswap.yaml: kind v0.31.0's default node image kindest/node:v1.35.0 "
                           "(Kubernetes 1.35)")
    assert not [c for c in tools.calls() if c[0] == "docker"], "nodeconf only ever runs kind"


def test_keep_leaves_the_cluster_and_says_how_to_reach_it(tools: FakeTools) -> None:
    opener = Opener()
    progress: list[str] = []
    node = open_default(opener, progress, keep=True)
    node.close()
    [(_, kubeconfig, _)] = opener.seen
    name = created_name(tools)
    assert [c[1:3] for c in tools.calls()] == [["version"], ["get", "clusters"], ["create", "cluster"]]
    assert tools.clusters() == [name] and not kubeconfig.parent.exists()
    assert progress[-1].startswith(f"kept kind cluster {name} (keep=1): `kind export kubeconfig --name {name}`")


@pytest.mark.parametrize("failure", [NodeError("context kind-nodeconf-limitedswap-0a1b2c: reader pod not Running"),
                                     KeyboardInterrupt()], ids=["driver-fails", "interrupted"])
def test_the_cluster_is_deleted_when_the_driver_does_not_open(tools: FakeTools, failure: BaseException) -> None:
    opener = Opener(failure)
    with pytest.raises(type(failure)):
        open_default(opener)
    [(_, kubeconfig, _)] = opener.seen
    name = created_name(tools)
    assert tools.calls()[-2:] == [create_call(kubeconfig, name), delete_call(kubeconfig, name)]
    assert tools.clusters() == [] and not kubeconfig.parent.exists()


def test_keep_keeps_the_cluster_when_the_driver_does_not_open(tools: FakeTools) -> None:
    with pytest.raises(NodeError):
        open_default(Opener(NodeError("no")), keep=True)
    assert tools.clusters() == [created_name(tools)] and tools.calls()[-1][1:3] == ["create", "cluster"]


def test_the_real_opener_waits_bounded_for_a_ready_node_then_the_cluster_goes(
        tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake kubeconfig points at a closed port: no node ever becomes Ready; the cluster is still deleted.

    The wait runs on a fake clock that only the poll interval advances, so the bound is counted, not timed."""
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    real_wait = provision.wait_ready
    monkeypatch.setattr(provision, "READY_TIMEOUT", 3.0)
    monkeypatch.setattr(provision, "wait_ready", lambda context, kubeconfig, timeout: real_wait(
        context, kubeconfig, timeout, sleep=sleep, clock=lambda: now[0]))
    with pytest.raises(NodeError, match=r"context kind-nodeconf-limitedswap-[0-9a-f]{6}: no Ready node within 3 s"):
        open_kind_node(None, kubelet_config=None, keep=False, profile=None, progress=lambda _: None)
    assert sleeps == [2.0, 2.0]
    assert tools.calls()[-1][1:3] == ["delete", "cluster"] and tools.clusters() == []


def test_a_failed_create_is_reported_with_kinds_error_and_kind_removed_its_nodes(
        tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> None:
    """kind ended on its own: it removed what it made (create.go), so nodeconf deletes nothing."""
    monkeypatch.setenv("FAKE_KIND_CREATE_FAIL", "1")
    opener = Opener()
    with pytest.raises(NodeError, match=r"failed \(exit 1\): ERROR: failed to create cluster: failed to init node "
                                        r"with kubeadm$"):
        open_default(opener)
    assert opener.seen == [] and deleted_names(tools) == [] and tools.clusters() == []


# --- never a cluster the run did not create ----------------------------------------------------------------------

def test_a_cluster_of_the_old_fixed_name_is_someone_elses_and_is_left_alone(tools: FakeTools) -> None:
    """A user's `nodeconf-limitedswap` (or one an older nodeconf kept): the run makes its own and deletes only it."""
    (tools.state / "clusters.txt").write_text(f"kind\n{NAME}\n")
    open_default(Opener()).close()
    ours = created_name(tools)
    assert ours != NAME and deleted_names(tools) == [ours]
    assert tools.clusters() == ["kind", NAME]


def test_a_create_that_finds_its_name_taken_in_between_deletes_nothing(tools: FakeTools,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Another job creates a cluster of the name after `kind get clusters` answered: kind refuses the create, and
    the other job's cluster is left alone."""
    monkeypatch.setenv("FAKE_KIND_NAME_TAKEN", "1")
    with pytest.raises(NodeError, match=r'node\(s\) already exist for a cluster with the name "nodeconf-limitedswap'):
        open_default(Opener())
    assert deleted_names(tools) == [] and tools.clusters() == [created_name(tools)]


def test_a_name_kind_already_lists_is_refused_and_left_alone(tools: FakeTools,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision, "run_id", lambda: "0a1b2c")
    taken = "nodeconf-limitedswap-0a1b2c"
    (tools.state / "clusters.txt").write_text(f"{taken}\n")
    with pytest.raises(InputError) as caught:
        open_default(Opener())
    assert str(caught.value).startswith(f"--node: a kind cluster {taken} already exists")
    assert tools.calls() == [["kind", "version"], ["kind", "get", "clusters"]] and tools.clusters() == [taken]


def test_the_host_records_a_cluster_while_its_run_has_it(tools: FakeTools, monkeypatch: pytest.MonkeyPatch) -> None:
    node = open_default(Opener())
    name = created_name(tools)
    assert recorded(tools) == {name: {"name": name, "pid": os.getpid(), "start": process_start(os.getpid())}}
    node.close()
    assert recorded(tools) == {}
    open_default(Opener(), keep=True).close()
    assert recorded(tools) == {}, "a kept cluster is the user's: clean never deletes it"
    monkeypatch.setenv("FAKE_KIND_NAME_TAKEN", "1")
    with pytest.raises(NodeError):
        open_default(Opener())
    assert recorded(tools) == {}, "a cluster kind refused to create is another's"


def write_record(tools: FakeTools, name: str, pid: int, start: int) -> None:
    directory = tools.state.parent / "xdg" / "nodeconf" / "kind"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps({"name": name, "pid": pid, "start": start}))


def test_clean_deletes_only_the_clusters_killed_runs_of_this_host_left(
        tools: FakeTools, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nodeconf.cli.main import main

    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone_start = process_start(gone.pid)
    gone.kill()
    gone.wait()  # a run killed with SIGKILL: its record stays
    killed, live, foreign = "nodeconf-noswap-0a1b2c", "nodeconf-noswap-d4e5f6", "nodeconf-memoryqos-777777"
    (tools.state / "clusters.txt").write_text(f"{NAME}\n{killed}\n{live}\n{foreign}\n")
    write_record(tools, killed, gone.pid, gone_start)
    write_record(tools, live, os.getpid(), process_start(os.getpid()))
    write_record(tools, "nodeconf-noswap-999999", gone.pid, gone_start)  # its cluster was deleted by hand
    assert main(["clean", "--cache-dir", str(tmp_path / "cache"), "--node", "kind"]) == 0
    assert deleted_names(tools) == [killed]
    assert tools.clusters() == [NAME, live, foreign] and sorted(recorded(tools)) == [live]
    [delete] = [call for call in tools.calls() if call[1:2] == ["delete"]]
    assert not Path(delete[delete.index("--kubeconfig") + 1]).is_relative_to(Path.home())
    out = capsys.readouterr().out.splitlines()
    assert f"nodeconf clean: kind cluster {killed}: its run (pid {gone.pid}) is gone; deleted" in out
    assert f"nodeconf clean: kind cluster {live}: its run (pid {os.getpid()}) still runs: kept" in out
    assert f"nodeconf clean: kind cluster {foreign} (a --node kind run kept it, or another's): not deleted; " \
           f"delete it with `kind delete cluster --name {foreign}`" in out


def test_each_run_creates_a_cluster_of_its_own(tools: FakeTools) -> None:
    first, second = open_default(Opener()), open_default(Opener())
    names = tools.clusters()
    assert len(set(names)) == 2 and all(OURS.fullmatch(name) for name in names)
    second.close()
    first.close()
    assert sorted(deleted_names(tools)) == sorted(names) and tools.clusters() == []


@pytest.mark.parametrize(("nodes", "config"), [
    pytest.param(["kind", "kind?name=b"], "limitedswap", id="default-twice"),
    pytest.param(["kind:noswap", "kind:noswap.yaml?name=b"], "noswap", id="named-twice"),
])
def test_two_kind_nodes_of_one_config_are_refused_before_anything_starts(
        tools: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        nodes: list[str], config: str) -> None:
    from nodeconf.cli.main import main

    started: list[object] = []
    monkeypatch.setattr("nodeconf.cli.run._run_pytest", started.append)
    argv = ["run", "--reports", str(tmp_path / "reports")]
    for node in nodes:
        argv += ["--node", node]
    assert main(argv) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"nodeconf: --node: {nodes[0]} and {nodes[1]} both use the kind config {config}")
    assert not started and not [c for c in tools.calls() if c[1:2] == ["create"]]


def test_kind_nodes_of_different_configs_may_share_a_run(tools: FakeTools, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from nodeconf.cli.main import main

    started: list[list[str]] = []

    def run_pytest(argv: list[str]) -> int:
        started.append(argv)
        return 5  # pytest's "no tests collected"

    monkeypatch.setattr("nodeconf.cli.run._run_pytest", run_pytest)
    main(["run", "--reports", str(tmp_path / "reports"), "--node", "kind", "--node", "kind:noswap?name=b"])
    assert len(started) == 1 and not [c for c in tools.calls() if c[1:2] == ["create"]]


# --- refusals before anything starts ---------------------------------------------------------------------------

@pytest.mark.parametrize(("on_path", "provider", "message"), [
    ((), "", "a kind node needs kind and a container engine (docker, nerdctl, podman) on PATH"),
    (("kind",), "", "a kind node needs a container engine (docker, nerdctl, podman) on PATH"),
    (("docker",), "", "a kind node needs kind on PATH"),
    (("kind", "docker"), "podman", "a kind node needs podman (KIND_EXPERIMENTAL_PROVIDER=podman) on PATH"),
], ids=["nothing", "no-engine", "no-kind", "provider-missing"])
def test_missing_tools_are_one_line_and_nothing_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       on_path: tuple[str, ...], provider: str, message: str) -> None:
    fake = install(tmp_path, on_path)
    monkeypatch.setenv("PATH", str(fake.bin))
    monkeypatch.setenv("FAKE_KIND_STATE", str(fake.state))
    monkeypatch.setenv("KIND_EXPERIMENTAL_PROVIDER", provider)
    with pytest.raises(InputError) as caught:
        open_default(Opener())
    assert str(caught.value) == f"--node: {message}"
    assert fake.calls() == []


@pytest.mark.parametrize(("on_path", "provider"), [(("kind", "podman"), ""), (("kind", "podman"), "podman"),
                                                   (("kind", "docker"), "bogus")])
def test_an_engine_kind_would_use_is_enough(tmp_path: Path, on_path: tuple[str, ...], provider: str) -> None:
    fake = install(tmp_path, on_path)
    assert provision.missing_tools({"PATH": str(fake.bin), "KIND_EXPERIMENTAL_PROVIDER": provider}) == []


def test_an_unknown_config_is_refused_before_kind_runs(tools: FakeTools) -> None:
    with pytest.raises(InputError) as caught:
        open_default(Opener(), config="../kube/rbac")
    assert str(caught.value) == (f"--node: no kind config '../kube/rbac' in {KIND_DIR} "
                                 "(configs: limitedswap, memoryqos, noswap)")
    assert tools.calls() == []


def test_gates_the_node_image_does_not_know_are_refused_before_create(tools: FakeTools,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """memoryqos.yaml sets MemoryQoS; a pre-release kind's default image is not known, so neither is the gate's
    fate: refused with the way out."""
    monkeypatch.setenv("FAKE_KIND_VERSION", "kind v0.33.0-alpha go1.25.0 linux/amd64")
    with pytest.raises(InputError) as caught:
        open_default(Opener(), config="memoryqos")
    error = caught.value
    assert (error.source, error.field) == (str(KIND_DIR / "memoryqos.yaml"), "featureGates")
    assert error.problem == (
        "feature gate MemoryQoS needs Kubernetes 1.22 or newer, and which version the default node image of kind "
        "v0.33.0-alpha go1.25.0 linux/amd64 runs is unknown; name the image in the config's nodes[].image")
    assert tools.calls() == [["kind", "version"]]


def test_a_profile_the_image_does_not_run_is_refused(tools: FakeTools) -> None:
    with pytest.raises(InputError) as caught:
        open_default(Opener(), profile="1.36")
    assert str(caught.value) == (
        "--profile: kind v0.31.0's default node image kindest/node:v1.35.0 runs Kubernetes 1.35, not 1.36: leave "
        "--profile out (the node's version decides) or name a 1.36 image in the config's nodes[].image")
    assert tools.calls() == [["kind", "version"]]


def test_the_matching_profile_is_accepted(tools: FakeTools) -> None:
    open_default(Opener(), profile="1.35").close()
    assert [c[1:3] for c in tools.calls()][-1] == ["delete", "cluster"]


# --- which config ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "kubelet_config", "expected"), [
    (None, None, "limitedswap"),
    ("noswap", None, "noswap"),
    ("memoryqos.yaml", None, "memoryqos"),
    (None, WORKLOADS / "kep-5359/kubelet-config/no-swap.yaml", "noswap"),
    (None, WORKLOADS / "kep-5359/kubelet-config/limited-swap.yaml", "limitedswap"),
    (None, WORKLOADS / "memory-qos/kubelet-tiered-reservation.yaml", "memoryqos"),
])
def test_the_config_is_named_or_matches_the_kubelet_config(name: str | None, kubelet_config: Path | None,
                                                           expected: str) -> None:
    config: KindConfig = resolve_config(name, None if kubelet_config is None else load_kubelet_config(kubelet_config))
    assert config.name == expected and config.path == KIND_DIR / f"{expected}.yaml"
    assert config.cluster["kind"] == "Cluster"


def test_a_kubelet_config_no_kind_config_gives_is_refused_with_the_reason() -> None:
    source = WORKLOADS / "kep-5359/kubelet-config/workload-controlled-swap.yaml"
    with pytest.raises(InputError) as caught:
        resolve_config(None, load_kubelet_config(source))
    error = caught.value
    assert (error.source, error.field) == (str(source), "--kubelet-config")
    assert error.problem.startswith(
        f"no kind config gives this kubelet configuration: no config in {KIND_DIR} gives "
        "swapBehavior WorkloadControlledSwap: no released kind node image knows the WorkloadControlledSwap")
    assert len(str(error)) <= MAX_MESSAGE


# --- interrupt ---------------------------------------------------------------------------------------------------

OPENER_SCRIPT = """
from nodeconf.infra.kind.provision import open_kind_node
open_kind_node(None, kubelet_config=None, keep=False, profile=None, progress=print)
"""


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_sigint_during_create_deletes_the_cluster_and_a_second_sigint_waits_for_it(tools: FakeTools) -> None:
    """Ctrl-C while `kind create` runs: kind is stopped, `kind delete` runs; a second Ctrl-C during the delete is
    held until it finished, then the process ends by the first SIGINT."""
    env = tools.env(FAKE_KIND_CREATE_SLEEP="60", FAKE_KIND_DELETE_SLEEP="1.5")
    process = subprocess.Popen([sys.executable, "-c", OPENER_SCRIPT], cwd=REPO, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: any(c[1:2] == ["create"] for c in tools.calls()), "kind create")
        process.send_signal(signal.SIGINT)
        wait_for(lambda: any(c[1:2] == ["delete"] for c in tools.calls()), "kind delete")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGINT, stderr
    assert [c[1:3] for c in tools.calls()][-2:] == [["create", "cluster"], ["delete", "cluster"]]
    assert [c[1:3] for c in tools.calls("end")] == [["version"], ["get", "clusters"], ["delete", "cluster"]], (
        "create was stopped before it finished; delete ran to its end")
    assert deleted_names(tools) == [created_name(tools)]
    assert f"SIGINT held until kind cluster {created_name(tools)} is deleted" in stderr
    assert tools.clusters() == []


# --- the kube driver's part --------------------------------------------------------------------------------------

class ClosingApi:
    """The two API calls KubeNode.close makes; deleting a namespace fails."""

    closed = False

    def delete_namespace(self, name: str) -> None:
        raise KubeApiError(500, "etcdserver: request timed out")

    def close(self) -> None:
        self.closed = True


def test_kube_node_runs_after_close_also_when_a_namespace_stays() -> None:
    ran: list[str] = []
    api = ClosingApi()
    node = KubeNode(api, "kind-control-plane", after_close=[lambda: ran.append("cluster deleted")])  # type: ignore[arg-type]
    node.namespaces = ["nodeconf-abc123"]
    with pytest.raises(NodeError, match="could not delete namespaces"):
        node.close()
    assert ran == ["cluster deleted"] and api.closed


def test_in_cluster_config_is_used_without_a_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod: no KUBECONFIG, no ~/.kube/config, the service account's token and CA (kubernetes client
    incluster_config.py reads these files and KUBERNETES_SERVICE_HOST/_PORT)."""
    from kubernetes.config import incluster_config

    from nodeconf.nodes.kube.api import IN_CLUSTER, load_kube_context

    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token")
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    client, context = load_kube_context(None)
    assert context == IN_CLUSTER
    assert client.configuration.host == "https://10.96.0.1:443"
    assert client.configuration.api_key["BearerToken"] == "bearer sa-token"
    assert client.configuration.ssl_ca_cert == str(ca)


def test_without_a_service_account_the_in_cluster_error_is_one_line(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes.config import incluster_config

    from nodeconf.nodes.kube.api import load_kube_context

    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeApiError, match=r"^no kubeconfig and no usable in-cluster service account: ") as caught:
        load_kube_context(None)
    assert "\n" not in str(caught.value)


def test_a_kubeconfig_wins_over_the_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nodeconf.nodes.kube.api import load_kube_context

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "mine",
        "clusters": [{"name": "c", "cluster": {"server": "https://192.0.2.1:6443"}}],
        "contexts": [{"name": "mine", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert load_kube_context(None)[1] == "mine"


def test_nodeconf_clean_names_nodeconf_kind_clusters_and_deletes_none(tools: FakeTools, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from nodeconf.cli import clean

    (tools.state / "clusters.txt").write_text(f"kind\n{NAME}\nnodeconf-noswap\n")
    assert clean.run(argparse.Namespace(cache_dir=tmp_path / "cache", dry_run=False, node=None)) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"nodeconf clean: kind cluster {name} (a --node kind run kept it, or another's): not deleted; delete it "
        f"with `kind delete cluster --name {name}`" for name in (NAME, "nodeconf-noswap")]
    assert tools.calls() == [["kind", "get", "clusters"]]
    assert tools.clusters() == ["kind", NAME, "nodeconf-noswap"]


def test_nodeconf_run_kind_refuses_before_pytest_when_kind_is_missing(tmp_path: Path) -> None:
    """`--node kind` without kind on PATH: one line, exit 2, no reports (pytest never started)."""
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    done = subprocess.run([sys.executable, "-m", "nodeconf", "run", "--node", "kind:limitedswap", "--reports",
                           str(tmp_path / "reports")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("nodeconf: --node: a kind node needs kind and a container engine (")
    assert done.stderr.endswith(") on PATH\n") and done.stderr.count("\n") == 1
    assert not (tmp_path / "reports").exists()


def test_the_registry_opens_a_kind_spec_with_the_runs_kubelet_config(tools: FakeTools,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """open_node(kind spec, kubelet_config=…) hands open_kind_node the run's loaded kubelet config itself (never
    a path to read again), with the config and keep the spec names."""
    seen: dict[str, object] = {}

    def fake_open(config_name: str | None, **kwargs: object) -> str:
        seen.update(kwargs, config_name=config_name)
        return "node"

    monkeypatch.setattr(provision, "open_kind_node", fake_open)
    loaded = load_kubelet_config(WORKLOADS / "kep-5359/kubelet-config/no-swap.yaml")
    opened: object = registry.open_node("kind:noswap?keep=1", kubelet_config=loaded, profile="1.34")
    assert opened == "node"
    assert (seen["config_name"], seen["keep"], seen["profile"]) == ("noswap", True, "1.34")
    assert seen["kubelet_config"] is loaded
