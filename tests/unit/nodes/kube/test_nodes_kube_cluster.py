"""The kube driver where real clusters differ from a bare kubelet: other pods on the node, the kubelet's resize
and force-delete sequences, unreadable or unmodelled kubelet configs, API refusals that are not rejections,
retried pulls, racy OOM reasons, proxies, non-Linux and cgroup v1 nodes, and the RBAC manifest.

API objects are shaped as a single-node kind v1.34 cluster returns them (kube-system pods with the requests of
their manifests: kindnet 100m/50Mi Guaranteed, coredns 100m/70Mi with a 170Mi limit, the control plane's static
mirror pods), trimmed to the fields the driver reads.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import NodeError, NotApplicable, ResizeStatus, Terminated
from nodeconf.nodes.kube.api import ClientKubeApi, KubeApiError, load_kube_context, unreachable_reason
from nodeconf.nodes.kube.configz import KubeletConfigNotApplicable
from nodeconf.nodes.kube.node import PROBE_NAME, KubeNode
from nodeconf.nodes.kube.opener import choose_node
from nodeconf.nodes.kube.others import OTHERS_NAMESPACE
from nodeconf.nodes.kube.pods import HELPER_NAME
from nodeconf.semantics.expectation import Expected
from suites.toolkit.compare import compare_reason
from suites.toolkit.kubelet import Oracle
from tests.unit.nodes.kube.fakes import (
    BASE_NS,
    DEFAULT_NS,
    NODE,
    RES_DEMO,
    RESIZE,
    FakeClock,
    FakeKube,
    FakeNode,
    ctr,
    kubeconfig,
    make_node,
)
from tests.unit.nodes.kube.kube_shapes import SHAPES
from tests.unit.nodes.kube.rbac import allowed, permission, rbac_docs
from tests.unit.nodes.kube.suite_on_shape import shape_node_doc

MIRROR = {"kubernetes.io/config.source": "file", "kubernetes.io/config.mirror": "0123abcd",
          "kubernetes.io/config.hash": "0123abcd"}


def api_pod(namespace: str, name: str, created: str, containers: list[dict[str, Any]], *, phase: str = "Running",
            annotations: dict[str, str] | None = None, priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": NODE, "containers": containers, "restartPolicy": "Always",
                            "schedulerName": "default-scheduler", "tolerations": [{"operator": "Exists"}]}
    if priority_class:
        spec.update(priorityClassName=priority_class,
                    priority={"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}[
                        priority_class])
    return {"metadata": {"namespace": namespace, "name": name, "uid": f"{len(name):08d}-1111-2222-3333-444455556666",
                         "creationTimestamp": created, "annotations": annotations or {}},
            "spec": spec, "status": {"phase": phase, "qosClass": "Burstable"}}


def c(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": f"registry.k8s.io/{name}:v1", "resources": resources}


KIND_SYSTEM_PODS = [
    api_pod("kube-system", f"etcd-{NODE}", "2026-11-29T18:00:01Z", [c("etcd", {"cpu": "100m", "memory": "100Mi"})],
            annotations=MIRROR, priority_class="system-node-critical"),
    api_pod("kube-system", f"kube-apiserver-{NODE}", "2026-11-29T18:00:02Z", [c("kube-apiserver", {"cpu": "250m"})],
            annotations=MIRROR, priority_class="system-node-critical"),
    api_pod("kube-system", f"kube-controller-manager-{NODE}", "2026-11-29T18:00:03Z",
            [c("kube-controller-manager", {"cpu": "200m"})], annotations=MIRROR, priority_class="system-node-critical"),
    api_pod("kube-system", f"kube-scheduler-{NODE}", "2026-11-29T18:00:04Z", [c("kube-scheduler", {"cpu": "100m"})],
            annotations=MIRROR, priority_class="system-node-critical"),
    api_pod("kube-system", "kindnet-x7k2p", "2026-11-29T18:00:20Z",
            [c("kindnet-cni", {"cpu": "100m", "memory": "50Mi"}, {"cpu": "100m", "memory": "50Mi"})]),
    api_pod("kube-system", "kube-proxy-5qz8d", "2026-11-29T18:00:21Z", [c("kube-proxy")],
            priority_class="system-node-critical"),
    api_pod("kube-system", "coredns-66bc5c9577-9f2xj", "2026-11-29T18:00:30Z",
            [c("coredns", {"cpu": "100m", "memory": "70Mi"}, {"memory": "170Mi"})],
            priority_class="system-cluster-critical"),
    api_pod("kube-system", "coredns-66bc5c9577-w8m4n", "2026-11-29T18:00:31Z",
            [c("coredns", {"cpu": "100m", "memory": "70Mi"}, {"memory": "170Mi"})],
            priority_class="system-cluster-critical"),
    api_pod("local-path-storage", "local-path-provisioner-7b8c8ddbd6-2v4gl", "2026-11-29T18:00:32Z",
            [c("local-path-provisioner")]),
    # A finished Job's pod: terminal, not among the kubelet's active pods.
    api_pod("default", "backup-29390400-7kq2n", "2026-11-29T18:30:00Z", [c("backup", {"cpu": "2"})],
            phase="Succeeded"),
]


@pytest.fixture
def fake(tmp_path: Path) -> FakeKube:
    fake = FakeKube(FakeNode(tmp_path))
    fake.others = KIND_SYSTEM_PODS
    return fake


# --- every pod on the node counts ----------------------------------------------------------------------------

def test_other_pods_are_the_active_pods_outside_the_checks_namespaces(node: KubeNode, fake: FakeKube) -> None:
    node.run(RES_DEMO)
    others = node.other_pods()
    names = [p.name for p in others]
    # Oldest first (the order the kubelet admitted them); the check's own pod and the finished Job are left out;
    # the reader pod counts (it runs on the node).
    assert names[:4] == [f"kube-system.etcd-{NODE}", f"kube-system.kube-apiserver-{NODE}",
                         f"kube-system.kube-controller-manager-{NODE}", f"kube-system.kube-scheduler-{NODE}"]
    assert f"{BASE_NS}.{HELPER_NAME}" in names
    assert not any("res-demo" in n or "backup" in n for n in names)
    assert {p.namespace for p in others} == {OTHERS_NAMESPACE}
    etcd = others[0]
    assert etcd.is_static and etcd.is_mirror and etcd.priority == 2000001000
    assert str(etcd.containers[0].resources.requests["memory"]) == "100Mi"


def test_node_level_expectations_include_every_pod_on_the_node(node: KubeNode) -> None:
    """The kubelet sets kubepods-burstable cpu.weight from the CPU requests of every Burstable pod on the node
    (qos_container_manager_linux.go setCPUCgroupConfig; linear weight, cm/cgroup_manager_linux.go getCPUWeight)."""
    facts = NodeFacts(memory_capacity=8 * 1024**3, cpu_capacity_milli=4000)
    config = KubeletConfig()
    alone = Oracle(facts, "1.34").expect([RES_DEMO], config)
    oracle = Oracle(facts, "1.34", node.other_pods)
    expected = oracle.expect([RES_DEMO], config)
    burstable = "kubepods.slice/kubepods-burstable.slice"
    # RES_DEMO alone: 250m → 256 shares → 1 + 254·9999/262142 = 10.
    assert alone.cgroups[burstable].files["cpu.weight"].value == "10"
    # With kind's Burstable pods: etcd 100m, apiserver 250m, controller-manager 200m, scheduler 100m, two
    # coredns 100m, + 250m = 1100m → 1126 shares → 1 + 1124·9999/262142 = 43 (kindnet and the reader are
    # Guaranteed, kube-proxy and local-path BestEffort, the finished Job inactive).
    assert expected.cgroups[burstable].files["cpu.weight"].value == "43"
    # The check's pod keeps its own expectation; the other pods are input, found under their own namespace.
    assert expected.pod("res-demo") == alone.pod("res-demo")
    assert expected.pod("kube-system.kindnet-x7k2p", OTHERS_NAMESPACE).qos_class.value == "Guaranteed"


def test_an_unreadable_other_pod_is_named(node: KubeNode, fake: FakeKube) -> None:
    fake.others = [api_pod("team", "odd", "2026-11-29T18:00:00Z", [c("app", {"cpu": "lots"})])]
    with pytest.raises(NodeError, match=r"cannot read the resources of pod team/odd on the node"):
        node.other_pods()


# --- resize: wait until both resize conditions clear ---------------------------------------------------------

@pytest.mark.parametrize(("behaviour", "expected", "waits_for_the_bound"), [
    # Accepted: PodResizeInProgress first, then the status resources, then the condition cleared.
    pytest.param("accept", ResizeStatus("Applied"), False, id="in-progress-then-applied"),
    pytest.param("accept-stuck", ResizeStatus("InProgress", "memory limit too low"), True,
                 id="in-progress-until-the-bound"),
    pytest.param("infeasible", ResizeStatus("Infeasible", "Node didn't have enough capacity: cpu"), False,
                 id="infeasible-is-terminal"),
    pytest.param("defer", ResizeStatus("Deferred", "Node didn't have enough capacity: memory"), True,
                 id="deferred-may-still-change"),
])
def test_resize_is_judged_once_settled(node: KubeNode, fake: FakeKube, clock: FakeClock, behaviour: str,
                                       expected: ResizeStatus, waits_for_the_bound: bool) -> None:
    handle = node.run(RES_DEMO)
    fake.resize_behaviour["res-demo"] = behaviour
    start = clock.now
    assert handle.resize(RESIZE) == expected
    assert (clock.now - start > node.timeouts.resize) is waits_for_the_bound


@pytest.mark.parametrize(("status", "reason", "message", "outcome"), [
    pytest.param(403, "Forbidden", 'pods "res-demo" is forbidden: exceeded quota: budget, requested: '
                                   "requests.cpu=1, used: requests.cpu=250m, limited: requests.cpu=1", "Rejected",
                 id="quota"),
    pytest.param(403, "Forbidden", 'pods "res-demo" is forbidden: User "dev" cannot patch resource "pods/resize" '
                                   'in API group "" in the namespace "x"', "error", id="rbac"),
])
def test_resize_refusals(node: KubeNode, fake: FakeKube, status: int, reason: str, message: str,
                         outcome: str) -> None:
    handle = node.run(RES_DEMO)

    def refuse(*_: Any) -> dict[str, Any]:
        raise KubeApiError(status, message, reason)

    fake.patch_pod_resize = refuse  # type: ignore[method-assign,assignment]
    if outcome == "error":
        with pytest.raises(NodeError, match="lacks a permission"):
            handle.resize(RESIZE)
    else:
        assert handle.resize(RESIZE) == ResizeStatus(outcome, message)


# --- delete: a force delete is over when the node removed the pod --------------------------------------------

def test_delete_waits_until_the_node_removed_the_pod_cgroup(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    pod_dir = fake.tree.cgroup / fake.pods[(DEFAULT_NS, "res-demo")]["pod_dir"]
    fake.linger = 3
    handle.delete()
    assert not pod_dir.exists() and not fake.lingering


def test_a_pod_cgroup_that_stays_is_an_error(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.linger = 1000
    with pytest.raises(NodeError, match=r"pod .*/res-demo still on node kind-control-plane 5 s after deletion"):
        handle.delete()


def test_the_probe_pod_is_gone_from_the_node_before_facts_return(node: KubeNode, fake: FakeKube) -> None:
    node.facts()
    assert not fake.lingering and (BASE_NS, PROBE_NAME) not in fake.pods
    assert not any(PROBE_NAME in p.name for p in node.other_pods())


# --- the live kubelet configuration --------------------------------------------------------------------------

def test_a_config_value_nodeconf_does_not_model_is_a_skip_naming_the_field(node: KubeNode, fake: FakeKube) -> None:
    """OpenShift's kubelet enforces `system-reserved-compressible`, a value the v1beta1 docs do not list."""
    fake.configz["kubeletconfig"]["enforceNodeAllocatable"] = ["pods", "system-reserved-compressible"]
    with pytest.raises(KubeletConfigNotApplicable, match=r"does not model .*enforceNodeAllocatable: unknown value "
                                                         r"'system-reserved-compressible'"):
        node.configure(KubeletConfig())


def test_fields_the_node_does_not_show_are_not_compared(node: KubeNode, fake: FakeKube) -> None:
    """A kubelet older than a field omits it from /configz: nodeconf's default is not the node's value."""
    live = fake.configz["kubeletconfig"]
    for field in ("memoryReservationPolicy", "singleProcessOOMKill"):
        live.pop(field, None)
    live["maxPods"] = 29  # a managed node's own value: shown, so compared (/configz is read once per run)
    doc = {"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": "LimitedSwap"},
           "featureGates": {"MemoryQoS": True}, "memoryReservationPolicy": "TieredReservation",
           "singleProcessOOMKill": True}
    assert node.configure(kubelet_config_from_dict({**doc, "maxPods": 29}), "1.34") == ()
    with pytest.raises(KubeletConfigNotApplicable, match=r"maxPods: requested 110, node has 29"):
        node.configure(kubelet_config_from_dict(doc), "1.34")


def test_without_nodes_proxy_the_checks_needing_the_kubelet_skip(node: KubeNode, fake: FakeKube) -> None:
    fake.forbidden_proxy = True
    with pytest.raises(KubeletConfigNotApplicable, match=r"cannot be read .*needs `get` on nodes/proxy"):
        node.configure(KubeletConfig())
    with pytest.raises(NotApplicable, match=r"metrics .* cannot be read"):
        node.metrics()
    assert node.run(RES_DEMO).admitted  # everything else still works


# --- what counts as a rejected pod ---------------------------------------------------------------------------

RESOURCE_CAUSE = [{"reason": "FieldValueInvalid", "field": "spec.containers[0].resources.requests",
                   "message": 'Invalid value: "2": must be less than or equal to cpu limit of 1'}]


@pytest.mark.parametrize(("status", "reason", "message", "causes", "rejected"), [
    pytest.param(422, "Invalid", 'Pod "p" is invalid: spec.containers[0].resources.requests: Invalid value: "2": '
                 "must be less than or equal to cpu limit of 1", RESOURCE_CAUSE, True, id="resource-validation"),
    pytest.param(422, "Invalid", 'Pod "p" is invalid: spec.overhead: Forbidden: may not be set', [], True,
                 id="overhead-from-the-message"),
    pytest.param(403, "Forbidden", 'pods "p" is forbidden: minimum cpu usage per Container is 100m, but request '
                 "is 50m", [], True, id="limitranger"),
    pytest.param(403, "Forbidden", 'pods "p" is forbidden: failed quota: budget: must specify limits.memory for: '
                 "c", [], True, id="quota-must-specify"),
    pytest.param(403, "Forbidden", 'pods "p" is forbidden: exceeded quota: budget, requested: pods=1, used: pods=2, '
                 "limited: pods=2", [], True, id="quota-exceeded"),
    pytest.param(422, "Invalid", 'Pod "p" is invalid: spec.containers[0].image: Required value',
                 [{"reason": "FieldValueRequired", "field": "spec.containers[0].image"}], False,
                 id="other-validation"),
    pytest.param(403, "Forbidden", 'pods is forbidden: User "dev" cannot create resource "pods" in API group "" in '
                 'the namespace "nodeconf-abc123-default"', [], False, id="rbac"),
    pytest.param(403, "Forbidden", 'pods "p" is forbidden: violates PodSecurity "restricted:latest": '
                 "unrestricted capabilities", [], False, id="pod-security"),
    pytest.param(400, "BadRequest", 'admission webhook "validate.kyverno.svc-fail" denied the request: resource '
                 "Pod/x/p was blocked: require-limits", [], False, id="webhook"),
    pytest.param(422, "Invalid", 'admission webhook "policy.example.com" denied the request: '
                 "spec.containers[0].resources.limits: must be set", RESOURCE_CAUSE, False, id="webhook-invalid"),
])
def test_only_resource_validation_and_namespace_admission_reject_a_pod(
        node: KubeNode, fake: FakeKube, status: int, reason: str, message: str, causes: list[dict[str, str]],
        rejected: bool) -> None:
    fake.refuse["p"] = (status, message, reason, causes)
    if rejected:
        handle = node.run(Pod(name="p", containers=(ctr("c"),)))
        assert (handle.admitted, handle.errors) == (False, (message,))
    else:
        with pytest.raises(NodeError, match="pod default/p: ") as err:
            node.run(Pod(name="p", containers=(ctr("c"),)))
        assert not isinstance(err.value, KubeApiError)  # an infrastructure error, never a check result


SA_RACE = ('pods "p" is forbidden: error looking up service account nodeconf-abc123-default/default: '
           'serviceaccount "default" not found')


def test_the_service_account_race_of_a_new_namespace_is_retried(node: KubeNode, fake: FakeKube) -> None:
    fake.refuse["p"] = (403, SA_RACE, "Forbidden", [], "once")
    assert node.run(Pod(name="p", containers=(ctr("c"),))).admitted


def test_a_service_account_that_never_comes_is_an_infrastructure_error(node: KubeNode, fake: FakeKube) -> None:
    fake.refuse["p"] = (403, SA_RACE, "Forbidden", [])
    with pytest.raises(NodeError, match="default ServiceAccount was not created"):
        node.run(Pod(name="p", containers=(ctr("c"),)))


def test_a_failed_pull_the_kubelet_retries_is_not_fatal(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["cache"] = "image-once"
    assert node.run(Pod(name="cache", containers=(ctr("c"),))).admitted


# --- OOM kills reported as Error -----------------------------------------------------------------------------

@pytest.mark.parametrize("behaviour", [
    pytest.param("oom-racy", id="oom-kill-counted"),
    pytest.param("sigkill", id="plain-sigkill"),
])
def test_exit_137_reported_as_error_stays_error(node: KubeNode, fake: FakeKube, behaviour: str) -> None:
    """The driver reports the reason the API gave: the pod cgroup's oom_kill count never rewrites it (a measured
    fact names a mismatch's cause, runtime_oom.reason_note; it is never the actual value)."""
    fake.behaviour["eater"] = behaviour
    handle = node.run(Pod(name="eater", containers=(ctr("c", limits={"memory": "64Mi"}),)))
    reads = len(fake.execs)
    assert handle.status().container("c").last_terminated == Terminated(137, "Error")
    assert len(fake.execs) == reads  # the status reads nothing from the node


def test_an_oom_kill_containerd_reported_as_error_fails_naming_the_runtime(tmp_path: Path, clock: FakeClock) -> None:
    """GKE's containerd 1.7.27 node (kube_shapes) with a container the API shows as `Error`, exit 137, restart 1
    (the shape of kubernetes/kubernetes#122256, a containerd node) while its pod cgroup's memory.events counts
    oom_kill 1: the evidence keeps `Error` and the reason check fails, naming containerd 1.7.27 and the count."""
    shape = next(s for s in SHAPES if s.name == "gke-cos")
    fake = FakeKube(FakeNode(tmp_path))
    fake.node, fake.configz = shape_node_doc(shape), shape.configz()
    fake.behaviour["eater"] = "oom-racy"
    node = make_node(fake, clock).start()
    try:
        evidence = node.run(Pod(name="eater", containers=(ctr("c", limits={"memory": "64Mi"}),))).evidence()
        facts = node.facts()
    finally:
        node.close()
    ended = evidence.status.container("c").last_terminated
    assert ended == Terminated(137, "Error")
    oom_kills = evidence.pod_cgroup.keyed("memory.events")["oom_kill"]
    assert oom_kills == 1
    compared = compare_reason("eater", "c", evidence.pod_cgroup.path, "termination",
                              Expected("OOMKilled", "kubelet toKubeContainerStatus"), ended.reason,
                              (ended.reason, ended.exit_code), facts, oom_kills)
    assert not compared.ok and (compared.expected, compared.actual) == ("OOMKilled", "Error")
    assert "runtime containerd 1.7.27 reported reason Error" in compared.rule
    assert "memory.events oom_kill 1" in compared.rule
    assert "its systemd scope" in compared.rule  # the kubelet's kubepods.slice: containerd's SystemdCgroup = true


# --- reaching the cluster and choosing the node --------------------------------------------------------------

def test_the_reachability_probe_goes_through_the_kubeconfig_proxy(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    doc = yaml.safe_load(Path(path).read_text())
    with socket.socket() as proxy:
        proxy.bind(("127.0.0.1", 0))
        proxy.listen(1)
        doc["clusters"][0]["cluster"]["proxy-url"] = f"http://127.0.0.1:{proxy.getsockname()[1]}"
        Path(path).write_text(yaml.safe_dump(doc))
        client, _ = load_kube_context(None, path)
        try:
            assert client.configuration.proxy  # the client sends every request to the proxy
            assert unreachable_reason(client, timeout=2) is None  # the API address itself is unreachable
        finally:
            client.close()
    client, _ = load_kube_context(None, path)
    try:
        reason = unreachable_reason(client, timeout=2)
        assert reason is not None and "through proxy http://127.0.0.1:" in reason
    finally:
        client.close()


def node_obj(name: str, os_name: str | None) -> dict[str, Any]:
    labels = {"kubernetes.io/os": os_name} if os_name else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_only_linux_nodes_are_chosen() -> None:
    nodes = [node_obj("akswin000000", "windows"), node_obj("aks-linux-1", "linux")]
    assert choose_node(nodes, None)["metadata"]["name"] == "aks-linux-1"
    with pytest.raises(NodeError, match=r"node 'akswin000000' is not a Linux node \(kubernetes.io/os=windows\)"):
        choose_node(nodes, "akswin000000")
    with pytest.raises(NodeError, match="no Ready Linux node"):
        choose_node(nodes[:1], None)
    unlabelled = {**node_obj("win-2019", None), "status": {**node_obj("w", None)["status"],
                                                         "nodeInfo": {"operatingSystem": "windows"}}}
    with pytest.raises(NodeError, match="no Ready Linux node"):  # no label: status.nodeInfo.operatingSystem tells
        choose_node([unlabelled], None)


def test_a_cgroup_v1_node_is_skipped_and_left_clean(fake: FakeKube, clock: FakeClock) -> None:
    (fake.tree.cgroup / "cgroup.controllers").unlink()
    with pytest.raises(NotApplicable, match="runs cgroup v1"):
        make_node(fake, clock).start()
    assert fake.deleted_namespaces == [BASE_NS] and fake.closed


# --- the RBAC manifest ---------------------------------------------------------------------------------------


def test_rbac_manifest_is_valid_for_the_kubernetes_models() -> None:
    """Each document builds the client's model (required fields present, types right) and serializes back to the
    same document (no unknown or misspelt field: the models drop those)."""
    from kubernetes import client

    kinds = []
    for doc in rbac_docs():
        kinds.append(doc["kind"])
        model = getattr(client, f"V1{doc['kind']}").from_dict(doc)
        assert client.ApiClient().sanitize_for_serialization(model) == doc  # type: ignore[no-untyped-call]
    assert kinds == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]


def recorded_requests() -> list[tuple[str, str]]:
    """(method, path) of every HTTP request ClientKubeApi sends when each of its calls runs once (exec aside): the
    driver's and `nodeconf clean`'s (nodeconf/nodes/kube/stale.py uses the same client)."""
    import urllib3
    from kubernetes.client import ApiClient, Configuration, rest

    configuration = Configuration()
    configuration.host = "https://cluster.invalid"
    api_client = ApiClient(configuration)
    seen: list[tuple[str, str]] = []

    def request(method: str, url: str, *_: Any, **__: Any) -> Any:
        seen.append((method, url.removeprefix(configuration.host).split("?")[0]))
        return rest.RESTResponse(urllib3.HTTPResponse(body=b"{}", status=200, preload_content=True))

    setattr(api_client.rest_client, "request", request)  # noqa: B010 (a method replaced by a recorder)
    api = ClientKubeApi(api_client)
    manifest = {"apiVersion": "v1", "metadata": {"name": "m"}}
    api.version()
    api.list_nodes()
    api.read_node("n")
    api.list_pods("spec.nodeName=n")
    api.node_proxy("n", "configz")
    api.list_namespaces("app.kubernetes.io/managed-by=nodeconf")
    api.create_namespace({"metadata": {"name": "ns"}})
    api.patch_namespace("ns", {"metadata": {"annotations": {"nodeconf.io/expires": "2026-12-03T07:10:00Z"}}})
    api.delete_namespace("ns")
    for kind in ("ConfigMap", "LimitRange", "ResourceQuota"):
        api.create_object("ns", {**manifest, "kind": kind})
        api.read_object(kind, "ns", "m")
        api.delete_object(kind, "ns", "m")
    api.create_pod("ns", {"metadata": {"name": "p"}})
    api.read_pod("ns", "p")
    api.delete_pod("ns", "p", 0)
    api.list_events("ns", "")
    api.patch_pod_resize("ns", "p", {"spec": {}})
    api.pod_log("ns", "p", "c", False)
    return seen


def test_the_cluster_role_grants_every_request_the_driver_makes() -> None:
    role = next(d for d in rbac_docs() if d["kind"] == "ClusterRole")
    needed = {permission(method, path) for method, path in recorded_requests()}
    assert ("pods", "list") in needed and ("nodes/proxy", "get") in needed and ("pods/resize", "patch") in needed
    # exec runs over a WebSocket (kubernetes.stream): create on pods/exec, get on API servers before 1.31.
    needed |= {("pods/exec", "create"), ("pods/exec", "get")}
    # OpenShift's SCC admission checks `use` of the privileged SCC for whoever creates the reader pod (no request
    # of the driver's own; the reader refusal names it, issue 29 item 5).
    needed |= {("securitycontextconstraints", "use")}
    missing = sorted(p for p in needed if not allowed(role["rules"], *p))
    assert not missing, f"nodeconf/infra/kube/rbac.yaml lacks {missing}"
    granted = {(r, v) for rule in role["rules"] for r in rule.get("resources", rule.get("nonResourceURLs", ()))
               for v in rule["verbs"]}
    assert granted - needed == set(), "the ClusterRole grants more than the driver uses"


# --- CRI-O without an infra container ------------------------------------------------------------------------

@pytest.mark.parametrize(("runtime", "absent"), [
    pytest.param("cri-o://1.34.1", True, id="crio-drops-the-infra-container"),
    pytest.param("containerd://2.1.1", False, id="containerd-always-runs-a-pause"),
])
def test_a_pod_without_a_pause_process(node: KubeNode, fake: FakeKube, runtime: str, absent: bool) -> None:
    fake.node["status"]["nodeInfo"]["containerRuntimeVersion"] = runtime
    node._node_obj = None
    fake.pause = False
    evidence = node.run(RES_DEMO).evidence()
    assert evidence.pause is None
    assert bool(evidence.pause_absent) is absent  # on containerd a missing pause stays a mismatch
