"""The kube driver against a real cluster (a kind cluster from nodeconf/infra/kind/ or any kubeconfig context).

Which cluster: `--node kube[:CONTEXT]`, else $NODECONF_KUBE_CONTEXT, else the kubeconfig's current context; the
whole-cluster case (`?nodes=all`) lists that cluster's nodes and opens the first and the last.
Skipped with the reason (within about two seconds) when no kubeconfig or no reachable API server exists.
The `vm` test runs the evidence reader on the reference VM's real kernel against a pod the enforcer runs.
Expected values: the requests/limits article's res-demo (workloads/requests-limits/res-demo.yaml: 250m/500m cpu,
128Mi memory; cpu.max 50000 100000, cpu.weight 35 with new runc or 10 with old, oom_score_adj from the request).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeconf.kubelet_config import kubelet_config_from_dict
from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.node_facts import meminfo_bytes
from nodeconf.nodes.base import NotApplicable
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.kube.api import IN_CLUSTER, ClientKubeApi, KubeApiError, load_kube_context, unreachable_reason
from nodeconf.nodes.kube.configz import KubeletConfigNotApplicable
from nodeconf.nodes.kube.facts import live_kubelet_config
from nodeconf.nodes.kube.node import KubeNode
from nodeconf.nodes.kube.node_kind import KUBE, MAX_FANOUT_CEILING, KubeSpec
from nodeconf.nodes.kube.opener import open_node
from nodeconf.nodes.kube.pods import kube_namespace, reader_request, reader_source
from nodeconf.nodes.registry import open_node as open_spec
from nodeconf.nodes.spec import chosen_specs, parse_node_spec
from nodeconf.semantics.cgroup_paths import container_id, pod_cgroup
from nodeconf.semantics.expectation import QosClass

MI = 1024 * 1024
RES_DEMO = Path(__file__).resolve().parents[2] / "workloads" / "requests-limits" / "res-demo.yaml"


def wanted_context(config: pytest.Config) -> str | None:
    (spec,) = chosen_specs(config.getoption("--node", default=None))
    if spec.scheme == "kube":
        return KubeSpec.of(spec).context
    return os.environ.get("NODECONF_KUBE_CONTEXT") or None


@pytest.fixture(scope="module")
def kube_node(request: pytest.FixtureRequest) -> Iterator[KubeNode]:
    context = wanted_context(request.config)
    try:
        client, chosen = load_kube_context(context)
    except KubeApiError as err:
        pytest.skip(f"no Kubernetes cluster: {err}")
    api = ClientKubeApi(client)
    try:
        reason = unreachable_reason(client)
        if reason is None:
            api.version()
    except KubeApiError as err:
        reason = f"no Kubernetes API answers: {err}"
    finally:
        api.close()
    if reason:
        pytest.skip(f"no Kubernetes cluster reachable through context {chosen}: {reason}")
    node = open_node(chosen)
    try:
        yield node
    finally:
        node.close()


def res_demo() -> Pod:
    (pod,) = load_objects([RES_DEMO])
    assert isinstance(pod, Pod)
    return pod


def test_facts_come_from_the_node(kube_node: KubeNode) -> None:
    facts = kube_node.facts()
    assert facts.memory_capacity > 0 and facts.cpu_capacity_milli >= 1000
    assert facts.page_size & (facts.page_size - 1) == 0
    assert "memory" in facts.cgroup_controllers
    assert facts.kernel_version


def test_res_demo_cgroups_and_scores(kube_node: KubeNode) -> None:
    facts = kube_node.facts()
    handle = kube_node.run(res_demo())
    try:
        assert handle.admitted, handle.errors
        evidence = handle.evidence()
        assert evidence.status.qos_class == "Burstable"
        hello = evidence.container("hello")
        assert hello.cgroup["cpu.max"] == "50000 100000"
        assert hello.cgroup.limit("memory.max") == 128 * MI
        assert hello.cgroup["cpu.weight"] == {"nonlinear": "35", "linear": "10"}[facts.measured_cpu_weight_formula]
        expected_adj = 1000 - (1000 * 128 * MI) // facts.memory_capacity
        assert hello.pids and all(adj == expected_adj for adj in hello.oom_score_adj.values())
        assert evidence.pause is not None and set(evidence.pause.oom_score_adj.values()) == {-998}
        assert evidence.pod_cgroup.path.rsplit("/", 1)[0] in evidence.ancestors
        driver = "systemd" if "kubepods.slice" in evidence.ancestors else "cgroupfs"
        assert evidence.pod_cgroup.path == pod_cgroup(handle.pod.uid, QosClass.BURSTABLE, driver)
        assert handle.exec("hello", ["sh", "-c", "exit 3"]).rc == 3
    finally:
        handle.delete()


def test_cpu_limit_resize_without_restart(kube_node: KubeNode) -> None:
    handle = kube_node.run(res_demo())
    try:
        patch = {"spec": {"containers": [{"name": "hello", "resources": {
            "requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}}}]}}
        try:
            outcome = handle.resize(patch)
        except NotApplicable as err:
            pytest.skip(str(err))
        assert outcome.status == "Applied", outcome
        assert handle.evidence().container("hello").cgroup["cpu.max"] == "100000 100000"
        assert handle.status().container("hello").restart_count == 0
    finally:
        handle.delete()


def test_configure_accepts_only_the_running_config(kube_node: KubeNode) -> None:
    live = live_kubelet_config(kube_node.api.node_proxy(kube_node.node, "configz"), kube_node.node)
    assert kube_node.configure(live) == ()
    other = "LimitedSwap" if live.swap_behavior != "LimitedSwap" else "NoSwap"
    with pytest.raises(KubeletConfigNotApplicable, match=r"memorySwap\.swapBehavior"):
        kube_node.configure(kubelet_config_from_dict({"memorySwap": {"swapBehavior": other}}))


def test_close_removes_the_run_namespaces(kube_node: KubeNode) -> None:
    from kubernetes import client as kube_client
    from kubernetes.client.exceptions import ApiException

    second = open_node(kube_node.context)
    namespaces = [kube_namespace(second.run_id, "default"), f"nodeconf-{second.run_id}"]
    assert second.run(res_demo()).admitted
    second.close()
    api_client, _ = load_kube_context(kube_node.context)
    try:
        core = kube_client.CoreV1Api(api_client)
        for name in namespaces:
            try:
                status = core.read_namespace(name).status
                assert status is not None and status.phase == "Terminating"
            except ApiException as err:
                assert err.status == 404
    finally:
        api_client.close()


def typed_node(node: Any) -> tuple[str, str, bool]:
    """Name, operating system and readiness of a V1Node (the client's typed model)."""
    assert node.metadata is not None and node.status is not None and node.status.node_info is not None
    ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ())
    return str(node.metadata.name), str(node.status.node_info.operating_system), ready


def test_whole_cluster_spec_runs_on_each_ready_linux_node(kube_node: KubeNode) -> None:
    """`kube:CONTEXT?nodes=all` expands to one spec per Ready Linux node as the cluster lists them (read here with
    the client's typed models, not the driver's JSON), and an expanded spec opens exactly its node."""
    from kubernetes import client as kube_client

    base = "kube" if kube_node.context == IN_CLUSTER else f"kube:{kube_node.context}"
    api_client, _ = load_kube_context(None if kube_node.context == IN_CLUSTER else kube_node.context)
    try:
        listed = kube_client.CoreV1Api(api_client).list_node().items
    finally:
        api_client.close()
    expected = sorted(name for name, os_name, ready in map(typed_node, listed) if os_name == "linux" and ready)
    if len(expected) > MAX_FANOUT_CEILING:
        pytest.skip(f"the cluster has {len(expected)} Ready Linux nodes, more than a whole-cluster run takes")
    specs = KUBE.expand(parse_node_spec(f"{base}?nodes=all&max={MAX_FANOUT_CEILING}"))
    assert [spec.option("node") for spec in specs] == expected
    assert kube_node.node in expected
    for spec in {specs[0].display: specs[0], specs[-1].display: specs[-1]}.values():  # first and last: each its own
        opened = open_spec(spec)
        try:
            assert isinstance(opened, KubeNode) and opened.node == spec.option("node")
            assert opened.facts().memory_capacity > 0
        finally:
            opened.close()


# Files the oracle sets (stable between two reads); usage files such as memory.current move.
STABLE_FILES = ("cpu.weight", "cpu.max", "memory.max", "memory.swap.max", "memory.min", "memory.low",
                "memory.high", "memory.oom.group")


def reader_argv(request: dict[str, Any]) -> list[str]:
    """The reader as the helper pod runs it, its source given inline (the VM has no ConfigMap mount)."""
    return ["python3", "-c", reader_source(), reader_request(request)]


@pytest.mark.vm
def test_reader_finds_an_enforced_pod_on_a_real_kernel(reference_vm: Any) -> None:
    """The reader's discovery from /proc/<pid>/cgroup on the reference VM's kernel agrees with the enforcer,
    which knows its paths: same cgroups, same files, same pids and oom_score_adj."""
    node = EnforcedNode(reference_vm.ssh(), describe_host=reference_vm.console_report).start()
    try:
        pod = res_demo()
        handle = node.run(pod)
        assert handle.admitted, handle.errors
        handle.wait_running()
        known = handle.evidence()
        assert known.container("hello").pids
        request = {"op": "pod", "podUid": pod.uid, "containers": {"hello": container_id(pod.uid, "hello")},
                   "cgroupRoot": "/sys/fs/cgroup", "files": [*STABLE_FILES, "memory.reclaim"]}
        done = node.transport.run(reader_argv(request), timeout=120)
        found = json.loads(done.stdout)
        assert done.rc == 0, found
        hello, expected = found["containers"]["hello"], known.container("hello")
        assert found["pod"]["path"] == known.pod_cgroup.path
        assert hello["path"] == expected.cgroup.path
        assert {a["path"] for a in found["ancestors"]} == set(known.ancestors)
        assert "memory.reclaim" not in hello["files"]  # write-only (0200): skipped, not an error
        for name in STABLE_FILES:
            assert hello["files"].get(name) == expected.cgroup.raw.get(name), name
            assert found["pod"]["files"].get(name) == known.pod_cgroup.raw.get(name), name
        assert tuple(hello["pids"]) == expected.pids
        assert {int(p): adj for p, adj in hello["oomScoreAdj"].items()} == dict(expected.oom_score_adj)
        assert known.pause is not None
        assert [tuple(s["pids"]) for s in found["sandboxes"]] == [known.pause.pids]

        # In a private cgroup namespace (a container's, by default on cgroup v2) other processes' paths read
        # as "/../..": the reader joins PID 1's namespace first and finds the same pod.
        private = handle.exec("hello", ["unshare", "--cgroup", *reader_argv(request)], timeout=120)
        assert private.rc == 0, private.stdout + private.stderr
        assert json.loads(private.stdout)["containers"]["hello"]["path"] == expected.cgroup.path

        # As on a cluster, the reader runs inside a pod's container (kubectl exec) and finds kubepods above it.
        inside = handle.exec("hello", reader_argv({"op": "node", "cgroupRoot": "/sys/fs/cgroup",
                                                   "files": list(STABLE_FILES)}), timeout=120)
        levels = json.loads(inside.stdout)
        assert inside.rc == 0, levels
        node_cgroups = node.node_cgroups()
        for level in [levels["kubepods"], *levels["qos"].values()]:
            for name in STABLE_FILES:
                assert level["files"].get(name) == node_cgroups[level["path"]].raw.get(name), (level["path"], name)
        facts_inside = handle.exec("hello", reader_argv({"op": "facts", "cgroupRoot": "/sys/fs/cgroup"}), timeout=120)
        facts = json.loads(facts_inside.stdout)
        assert (facts["pageSize"], meminfo_bytes(facts["meminfo"])["SwapTotal"]) == (node.facts().page_size,
                                                                                node.facts().swap_capacity)
        assert set(node.facts().cgroup_controllers) >= set(facts["controllers"]) >= {"cpu", "memory"}
        handle.delete()
    finally:
        node.close()
