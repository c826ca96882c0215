"""The kube driver against a fake Kubernetes API whose kubelet starts pods into a fake node tree read by the
real evidence reader (test_nodes_kube_reader.FakeNode)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from nodeconf.kubelet_config import kubelet_config_from_dict
from nodeconf.manifest import Container, LimitRange, LimitRangeItem, Pod, ResourceQuota
from nodeconf.names import UnsafeName
from nodeconf.nodes.base import NodeError, NotApplicable, ResizeStatus, Terminated
from nodeconf.nodes.kube.api import ExecOutput, KubeApiError
from nodeconf.nodes.kube.configz import KubeletConfigNotApplicable
from nodeconf.nodes.kube.node import PROBE_NAME, KubeNode
from nodeconf.nodes.kube.opener import choose_node
from nodeconf.nodes.kube.pods import HELPER_NAME, PROGRAMS_CONFIGMAP, kube_namespace
from nodeconf.quantity import Quantity
from nodeconf.semantics.cgroup_paths import pod_cgroup
from nodeconf.semantics.expectation import QosClass
from nodeconf.workloads import PROGRAMS_DIR
from tests.unit.nodes.kube.fakes import (
    BASE_NS,
    DEFAULT_NS,
    KUBEPODS,
    NODE,
    RES_DEMO,
    RESIZE,
    RUN,
    FakeClock,
    FakeKube,
    FakeNode,
    ctr,
    make_node,
)

# --- start and close -----------------------------------------------------------------------------------------

def test_start_creates_the_reader_pod_on_the_node(node: KubeNode, fake: FakeKube) -> None:
    helper = fake.pods[(BASE_NS, HELPER_NAME)]
    spec = helper["spec"]
    assert spec["nodeName"] == NODE and spec["hostPID"] is True
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "cgroup", "mountPath": "/host/cgroup", "readOnly": True},
        {"name": "reader", "mountPath": "/opt/nodeconf/reader", "readOnly": True}]
    assert spec["volumes"][0]["hostPath"]["path"] == "/sys/fs/cgroup"
    # Guaranteed (requests = limits, small): evicted after the suites' own Burstable and BestEffort hogs.
    resources = spec["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "500m", "memory": "128Mi"}
    assert helper["status"]["qosClass"] == "Guaranteed"
    assert helper["metadata"]["labels"]["nodeconf.io/run"] == RUN


def test_close_deletes_every_namespace_of_the_run(fake: FakeKube, clock: FakeClock) -> None:
    with make_node(fake, clock).start() as kube:
        kube.run(RES_DEMO)
    assert sorted(fake.deleted_namespaces) == [BASE_NS, DEFAULT_NS]
    assert not fake.pods and not fake.namespaces and fake.closed


def test_a_reader_pod_that_cannot_start_leaves_nothing_behind(fake: FakeKube, clock: FakeClock) -> None:
    fake.behaviour[HELPER_NAME] = "bad-image"
    with pytest.raises(NodeError, match=r"reader pod .* cannot start: container reader: InvalidImageName"):
        make_node(fake, clock).start()
    assert fake.deleted_namespaces == [BASE_NS] and fake.closed


# --- run -----------------------------------------------------------------------------------------------------

def test_run_binds_the_pod_to_the_node_in_the_run_namespace(node: KubeNode, fake: FakeKube) -> None:
    pod = Pod(name="mixed", uid="11111111-2222-3333-4444-555555555555", labels={"app": "x"},
              containers=(ctr("app"), Container(name="idle"),
                          ctr("hog", image="", command=("python3", f"{PROGRAMS_DIR}/memhog.py", "64"))))
    handle = node.run(pod)
    assert handle.admitted and handle.errors == ()
    sent = fake.pods[(DEFAULT_NS, "mixed")]
    assert sent["spec"]["nodeName"] == NODE
    assert sent["spec"]["terminationGracePeriodSeconds"] == 0
    assert sent["metadata"]["uid"] != pod.uid  # the API server assigns uids
    assert sent["metadata"]["labels"] == {"app": "x", "app.kubernetes.io/managed-by": "nodeconf",
                                          "nodeconf.io/run": RUN}
    app, idle, hog = sent["spec"]["containers"]
    # Fully qualified: CRI-O >= 1.34 refuses short names (cri-o#9401).
    assert app["image"] == "docker.io/library/busybox:1.37" and app["command"] == ["sleep", "3600"]
    assert idle["image"] == "docker.io/library/busybox:1.37" and idle["command"] == ["sleep", "infinity"]
    assert hog["image"] == "docker.io/library/python:3.12-slim"
    assert hog["volumeMounts"] == [{"name": "programs", "mountPath": PROGRAMS_DIR, "readOnly": True}]
    assert sent["spec"]["volumes"] == [{"name": "programs", "configMap": {"name": PROGRAMS_CONFIGMAP}}]
    programs = fake.objects[("ConfigMap", DEFAULT_NS, PROGRAMS_CONFIGMAP)]["data"]
    assert {"memhog.py", "cpuburn.py"} <= set(programs)


@pytest.mark.parametrize(("keep_images", "image", "command"), [
    # As the enforcer: the command runs, or a sleeper; the seed's example image is not pulled.
    pytest.param(False, "docker.io/library/busybox:1.37", ["sleep", "infinity"], id="stand-in"),
    pytest.param(True, "ghcr.io/example/hello:1.0", None, id="keep-images"),
])
def test_image_policy(fake: FakeKube, clock: FakeClock, keep_images: bool, image: str,
                      command: list[str] | None) -> None:
    kube = make_node(fake, clock)
    kube.keep_images = keep_images
    with kube.start():
        kube.run(Pod(name="hello", containers=(Container(name="hello", image="ghcr.io/example/hello:1.0"),)))
        sent = fake.pods[(DEFAULT_NS, "hello")]["spec"]["containers"][0]
        assert (sent["image"], sent.get("command")) == (image, command)


def test_status_reads_phase_qos_containers_and_events(node: KubeNode) -> None:
    status = node.run(RES_DEMO).status()
    assert (status.phase, status.qos_class) == ("Running", "Burstable")
    assert status.container("hello").running and status.container("hello").restart_count == 0
    assert [(e.type, e.reason) for e in status.events] == [("Normal", "Started")]
    assert status.resize == ResizeStatus("")


def test_kubelet_rejection_is_reported_with_its_message(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["huge"] = "reject"
    handle = node.run(Pod(name="huge", containers=(ctr("c", requests={"memory": "64Gi"}),)))
    assert not handle.admitted
    assert handle.errors == ("Pod was rejected: Node didn't have enough resource: memory",)
    assert (DEFAULT_NS, "huge") not in fake.pods  # nothing left behind; the same name can be tried again
    with pytest.raises(NodeError, match="was rejected"):
        handle.evidence()


@pytest.mark.parametrize(("status", "message"), [
    pytest.param(403, 'pods "big" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi',
                 id="limitrange"),
    pytest.param(422, 'Pod "big" is invalid: spec.containers[0].resources.requests[swap]: Invalid value: '
                      '"0": swap may only be specified in limits, not requests', id="validation"),
])
def test_api_rejection_is_reported_with_its_message(node: KubeNode, fake: FakeKube, status: int,
                                                     message: str) -> None:
    fake.refuse["big"] = (status, message)
    handle = node.run(Pod(name="big", containers=(ctr("c"),)))
    assert (handle.admitted, handle.errors) == (False, (message,))


def test_api_outage_is_an_infrastructure_error(node: KubeNode, fake: FakeKube) -> None:
    fake.refuse["p"] = (503, "the server is currently unable to handle the request")
    with pytest.raises(KubeApiError, match="503"):
        node.run(Pod(name="p", containers=(ctr("c"),)))


def test_an_image_that_cannot_be_pulled_is_an_error_and_the_pod_is_deleted(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["cache"] = "image"
    with pytest.raises(NodeError, match=r'pod .*/cache .* cannot start \(for 3 s\): container c: ErrImagePull: '
                                        r'.*busybox:1\.37"'):
        node.run(Pod(name="cache", containers=(ctr("c", image="cache:latest"),)))
    assert (DEFAULT_NS, "cache") not in fake.pods


def test_a_pod_that_never_starts_times_out_with_its_phase(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["stuck"] = "never"
    with pytest.raises(NodeError, match=r"not started on node kind-control-plane within 10 s \(phase Pending"):
        node.run(Pod(name="stuck", containers=(ctr("c"),)))


def test_oom_killed_container_state(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["eater"] = "oom"
    eater = node.run(Pod(name="eater", containers=(ctr("eater", command=("tail", "/dev/zero"),
                                                       requests={"memory": "64Mi"}, limits={"memory": "64Mi"}),)))
    assert eater.admitted
    state = eater.status().container("eater")
    assert (state.state, state.reason, state.restart_count) == ("waiting", "CrashLoopBackOff", 2)
    assert state.last_terminated == Terminated(137, "OOMKilled")
    assert ("Warning", "BackOff") in [(e.type, e.reason) for e in eater.events()]


@pytest.mark.parametrize("name", ["../etc", "Upper", "a" * 254])
def test_bad_pod_names_never_reach_the_api(node: KubeNode, fake: FakeKube, name: str) -> None:
    with pytest.raises(UnsafeName):
        node.run(Pod(name=name, containers=(ctr("c"),)))
    assert len(fake.pods) == 1  # only the reader


def test_namespaces_map_into_the_run() -> None:
    assert kube_namespace(RUN, "default") == DEFAULT_NS
    long_name = kube_namespace(RUN, "n" * 60)
    assert len(long_name) <= 63 and long_name.startswith(f"nodeconf-{RUN}-")
    assert kube_namespace(RUN, "n" * 60) != kube_namespace(RUN, "n" * 61)


# --- evidence ------------------------------------------------------------------------------------------------

def test_reader_requests_stay_short(node: KubeNode, fake: FakeKube) -> None:
    """An exec's argv travels in the request URL (command=...): the program is mounted, only JSON is sent."""
    node.run(RES_DEMO).evidence(extra_files=["memory.swap.max"])
    assert len(urlencode([("command", word) for word in fake.execs[-1][3]])) < 4096


def test_evidence_of_a_pod_in_one_reader_round_trip(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    before = len(fake.execs)
    evidence = handle.evidence(extra_files=["memory.swap.max"])
    assert len(fake.execs) == before + 1
    # Paths in the oracle's frame: kind's kubelet- prefix gone, the manifest's uid instead of the API's.
    assert evidence.pod_cgroup.path == pod_cgroup(RES_DEMO.uid, QosClass.BURSTABLE, "systemd")
    assert set(evidence.ancestors) == {"kubepods.slice", "kubepods.slice/kubepods-burstable.slice"}
    assert evidence.cgroup("kubepods.slice/kubepods-burstable.slice")["cpu.weight"] == "100"
    hello = evidence.container("hello")
    assert hello.cgroup.path.startswith(evidence.pod_cgroup.path + "/cri-containerd-")
    real_uid = fake.pods[(DEFAULT_NS, "res-demo")]["metadata"]["uid"].replace("-", "_")
    real_pod = f"{KUBEPODS}/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod{real_uid}.slice"
    assert f"cgroup {evidence.pod_cgroup.path} is {real_pod} on node {NODE}" in node.logs()
    assert hello.cgroup["cpu.weight"] == "35"
    assert hello.cgroup.limit("memory.max") == 128 * 1024 * 1024
    assert hello.cgroup["memory.swap.max"] == "0"
    assert len(hello.pids) == 1 and hello.oom_score_adj == {hello.pids[0]: 500}
    assert evidence.pause is not None and list(evidence.pause.oom_score_adj.values()) == [-998]
    assert evidence.status.qos_class == "Burstable"
    request = json.loads(fake.execs[-1][3][2])
    assert request["op"] == "pod" and "memory.events" in request["files"] and "memory.swap.max" in request["files"]


def test_guaranteed_pod_evidence_has_kubepods_as_its_only_ancestor(node: KubeNode) -> None:
    pod = Pod(name="g", containers=(ctr("c", requests={"cpu": "1", "memory": "1Gi"},
                                        limits={"cpu": "1", "memory": "1Gi"}),))
    evidence = node.run(pod).evidence()
    assert list(evidence.ancestors) == ["kubepods.slice"]
    assert evidence.pod_cgroup.path == pod_cgroup(pod.uid, QosClass.GUARANTEED, "systemd")
    assert evidence.container("c").oom_score_adj == {evidence.container("c").pids[0]: -997}


def test_bad_extra_file_names_never_reach_the_node(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    before = len(fake.execs)
    with pytest.raises(UnsafeName):
        handle.evidence(extra_files=["../../etc/shadow"])
    assert len(fake.execs) == before


def test_reader_errors_name_the_node(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.pods[(DEFAULT_NS, "res-demo")]["metadata"]["uid"] = "99999999-9999-9999-9999-999999999999"
    with pytest.raises(NodeError, match="evidence reader on node kind-control-plane: ReaderError: no process of pod"):
        handle.evidence()


def test_node_cgroups(node: KubeNode) -> None:
    cgroups = node.node_cgroups()
    assert set(cgroups) == {"kubepods.slice", "kubepods.slice/kubepods-burstable.slice",
                            "kubepods.slice/kubepods-besteffort.slice"}
    assert cgroups["kubepods.slice"]["cpu.weight"] == "100"
    assert f"cgroup kubepods.slice is {KUBEPODS} on node {NODE}" in node.logs()


# --- resize, exec, logs, delete ------------------------------------------------------------------------------


@pytest.mark.parametrize(("behaviour", "expected"), [
    pytest.param("apply", ResizeStatus("Applied"), id="applied"),
    pytest.param("defer", ResizeStatus("Deferred", "Node didn't have enough capacity: memory"), id="deferred"),
    pytest.param("qos-change", ResizeStatus("Rejected", 'Pod "res-demo" is invalid: spec: Invalid value: '
                                            '"Guaranteed": Pod QOS Class may not change as a result of resizing'),
                 id="qos-change-refused"),
    pytest.param("unobserved", ResizeStatus("InProgress", "the kubelet has not acted on the resize yet"),
                 id="kubelet-silent"),
])
def test_resize(node: KubeNode, fake: FakeKube, behaviour: str, expected: ResizeStatus) -> None:
    handle = node.run(RES_DEMO)
    fake.resize_behaviour["res-demo"] = behaviour
    assert handle.resize(RESIZE) == expected


def test_resize_on_a_cluster_without_the_subresource_is_not_applicable(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.resize_behaviour["res-demo"] = "no-subresource"
    with pytest.raises(NotApplicable, match="does not serve pods/resize"):
        handle.resize(RESIZE)
    del fake.pods[(DEFAULT_NS, "res-demo")]
    with pytest.raises(KubeApiError, match="not found"):  # a vanished pod stays an infrastructure error
        handle.resize(RESIZE)


def test_resize_status_stays_visible_in_the_pod_status(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    handle.resize(RESIZE)
    assert handle.status().resize == ResizeStatus("Applied")


def test_exec_passes_argv_as_a_list(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.exec_answers["sh"] = ExecOutput(3, "out", "err")
    argv = ["sh", "-c", "echo $HOME; exit 3"]
    assert handle.exec("hello", argv).rc == 3
    assert fake.execs[-1] == (DEFAULT_NS, "res-demo", "hello", argv)
    with pytest.raises(UnsafeName):
        handle.exec("hello; rm -rf /", ["true"])


def test_logs(node: KubeNode) -> None:
    handle = node.run(RES_DEMO)
    assert handle.logs() == f"log of {DEFAULT_NS}/res-demo/hello previous=False\n"
    assert "res-demo: Normal Started: Started container" in node.logs()


def test_delete_waits_until_the_pod_is_gone(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    handle.delete()
    assert (DEFAULT_NS, "res-demo") not in fake.pods
    handle.delete()  # twice is harmless


# --- facts, configure, metrics, namespace objects -----------------------------------------------------------

@pytest.mark.parametrize("formula", ["nonlinear", "linear"])
def test_facts_measure_the_cpu_weight_formula(tmp_path: Path, clock: FakeClock, formula: str) -> None:
    fake = FakeKube(FakeNode(tmp_path), formula=formula)
    with make_node(fake, clock).start() as kube:
        facts = kube.facts()
        assert facts.measured_cpu_weight_formula == formula
        assert facts.cpu_weight_formula == "nonlinear", "the measurement is reported, never expected"
        assert (facts.memory_capacity, facts.swap_capacity) == (3479660 * 1024, 4 * 1024**3)
        assert facts.cgroup_controllers == ("cpu", "memory", "pids")
        assert (BASE_NS, PROBE_NAME) not in fake.pods
        probe = [e for e in fake.execs if json.loads(e[3][2]).get("op") == "pod"]
        assert len(probe) == 1
        assert kube.facts() is facts  # cached


def test_a_refused_probe_pod_is_named(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour[PROBE_NAME] = "reject"
    with pytest.raises(NodeError, match=r"cpu-weight probe pod \(250m cpu\) refused by node kind-control-plane: "
                                        "Pod was rejected"):
        node.facts()
    assert (BASE_NS, PROBE_NAME) not in fake.pods


def test_configure_accepts_the_running_config(node: KubeNode) -> None:
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": "LimitedSwap"},
                                       "featureGates": {"MemoryQoS": True}})
    assert node.configure(config, "1.34") == ()


def test_configure_on_kind_says_how_to_create_the_cluster(node: KubeNode) -> None:
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration",
                                       "memorySwap": {"swapBehavior": "WorkloadControlledSwap"},
                                       "featureGates": {"WorkloadControlledSwap": True}})
    with pytest.raises(KubeletConfigNotApplicable) as err:
        node.configure(config)
    assert isinstance(err.value, NotApplicable)  # the suites skip the check
    text = str(err.value)
    assert "memorySwap.swapBehavior: requested WorkloadControlledSwap, node has LimitedSwap" in text
    # No config under nodeconf/infra/kind/ gives it: no released node image knows the WorkloadControlledSwap gate.
    assert "kind create cluster" not in text and "no released kind node image knows" in text


def test_configure_on_a_real_cluster_and_another_version(node: KubeNode, fake: FakeKube) -> None:
    fake.node["spec"]["providerID"] = "gce://project/zone/node-1"
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": "LimitedSwap"}})
    with pytest.raises(KubeletConfigNotApplicable,
                       match=r"profile: requested 1\.38, node has kubelet 1\.34.*point nodeconf at a node"):
        node.configure(config, "1.38")


def test_node_conditions_are_read_fresh(node: KubeNode, fake: FakeKube) -> None:
    fake.node["status"]["conditions"] = [{"type": "Ready", "status": "True"},
                                         {"type": "MemoryPressure", "status": "False"}]
    assert not node.conditions().memory_pressure
    fake.node["status"]["conditions"][1]["status"] = "True"
    node_event = {"type": "Warning", "reason": "EvictionThresholdMet", "message": "Attempting to reclaim memory",
                  "lastTimestamp": "2026-11-29T19:01:00Z", "involvedObject": {"kind": "Node", "name": NODE}}
    fake.namespaces.add("default")
    fake.events[("default", NODE)] = [node_event]
    conditions = node.conditions()
    assert conditions.memory_pressure and conditions.conditions["Ready"]
    assert [(e.type, e.reason) for e in conditions.events] == [("Warning", "EvictionThresholdMet")]


def test_metrics(node: KubeNode) -> None:
    metrics = node.metrics()
    assert metrics.value("kubelet_node_swap_allocated_bytes") == 1073741824
    assert metrics.value("kubelet_container_swap_usage_bytes", container="app", namespace="ns", pod="p") == 4096


def test_cadvisor_metrics_come_from_the_kubelets_cadvisor_endpoint(node: KubeNode, fake: FakeKube) -> None:
    labels = {"container": "app", "id": "/kubepods.slice/x", "image": "busybox", "name": "abc", "namespace": "ns",
              "pod": "p"}
    key = ("container_pressure_memory_waiting_seconds_total", tuple(sorted(labels.items())))
    assert node.cadvisor_metrics().samples[key] == 2.5, "the sample's timestamp is not its value"
    fake.forbidden_proxy = True
    with pytest.raises(NotApplicable, match=r"metrics .* cannot be read"):
        node.cadvisor_metrics()


def test_the_stats_pages_come_from_the_kubelets_endpoints(node: KubeNode, fake: FakeKube) -> None:
    """/metrics/resource and /stats/summary through the node proxy, with the same permission as /metrics."""
    assert node.resource_metrics().value("container_memory_working_set_bytes", container="app", namespace="ns",
                                         pod="p") == 8388608
    assert node.stats_summary()["pods"][0]["memory"]["workingSetBytes"] == 8388608
    fake.forbidden_proxy = True
    for page in (node.resource_metrics, node.stats_summary):
        with pytest.raises(NotApplicable, match=r"metrics .* cannot be read"):
            page()


def test_namespace_objects_are_replaced_and_quotas_awaited(node: KubeNode, fake: FakeKube) -> None:
    limits = LimitRange(name="mem", namespace="team", limits=(LimitRangeItem(
        type="Container", max={"memory": Quantity.parse("2Gi")}),))
    quota = ResourceQuota(name="budget", namespace="team", hard={"pods": Quantity.parse("20")})
    node.set_namespace_objects([limits, quota])
    team = kube_namespace(RUN, "team")
    assert fake.objects[("LimitRange", team, "mem")]["spec"]["limits"][0]["max"] == {"memory": "2Gi"}
    assert fake.objects[("ResourceQuota", team, "budget")]["status"]["hard"] == {"pods": "20"}
    node.set_namespace_objects([quota])
    assert ("LimitRange", team, "mem") not in fake.objects


# --- node choice ---------------------------------------------------------------------------------------------

def ready(name: str, *, control_plane: bool = False, is_ready: bool = True) -> dict[str, Any]:
    labels = {"node-role.kubernetes.io/control-plane": ""} if control_plane else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True" if is_ready else "False"}]}}


@pytest.mark.parametrize(("nodes", "wanted", "chosen"), [
    pytest.param([ready("kind-control-plane", control_plane=True)], None, "kind-control-plane", id="single-kind"),
    pytest.param([ready("cp", control_plane=True), ready("w2"), ready("w1")], None, "w1", id="prefer-worker"),
    pytest.param([ready("w1", is_ready=False), ready("cp", control_plane=True)], None, "cp", id="only-ready"),
    pytest.param([ready("cp", control_plane=True), ready("w1")], "cp", "cp", id="named"),
])
def test_choose_node(nodes: list[dict[str, Any]], wanted: str | None, chosen: str) -> None:
    assert choose_node(nodes, wanted)["metadata"]["name"] == chosen


@pytest.mark.parametrize(("nodes", "wanted", "message"), [
    pytest.param([ready("w1")], "w9", "no node 'w9' in the cluster (nodes: w1)", id="unknown"),
    pytest.param([ready("w1", is_ready=False)], None, "no Ready Linux node that is not virtual", id="none-ready"),
])
def test_choose_node_errors(nodes: list[dict[str, Any]], wanted: str | None, message: str) -> None:
    with pytest.raises(NodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        choose_node(nodes, wanted)
