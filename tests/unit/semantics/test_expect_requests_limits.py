"""expect() on the requests/limits article's manifests: every number the article shows (seed
requests-limits-qos), through the public API only. Expected values are typed from the article."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import LimitRange, Pod, ResourceQuota, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import NodeExpectation, QosClass
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import KI, pod
from suites.toolkit.builders import container as ctr
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE_MEMORY

WORKLOADS = Path(__file__).resolve().parents[3] / "workloads" / "requests-limits"
LAB_NODE = NodeFacts(memory_capacity=ARTICLE_NODE_MEMORY, cpu_capacity_milli=2000)
RES_DEMO_UID = "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"


def manifests(*names: str) -> list[Pod]:
    return [o for o in load_objects([WORKLOADS / n for n in names]) if isinstance(o, Pod)]


def explain(pods: list[Pod], node: NodeFacts = LAB_NODE, version: str = "1.36") -> NodeExpectation:
    """The article's lab runs Kubernetes 1.36 with the default kubelet configuration."""
    return expect(pods, node, KubeletConfig(), profile_for(version))


def files(cgroup_files: dict[str, str], names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(cgroup_files[n] for n in names)


def values(result: NodeExpectation, pod_name: str, container: str | None = None) -> dict[str, str]:
    p = result.pod(pod_name)
    cgroup = p.container(container).cgroup if container else p.cgroup
    assert cgroup is not None
    return {name: e.value for name, e in cgroup.files.items()}


@pytest.mark.parametrize(("formula", "weight"), [("nonlinear", "35"), ("linear", "10")])
def test_res_demo_container(formula: str, weight: str) -> None:
    result = explain(manifests("res-demo.yaml"), replace(LAB_NODE, cpu_weight_formula=formula))
    got = values(result, "res-demo", "hello")
    assert files(got, ("cpu.weight", "cpu.max", "memory.max", "memory.oom.group")) == \
        (weight, "50000 100000", "134217728", "1")
    # Memory QoS is off in 1.36: "memory.min, memory.low, memory.high are untouched".
    assert files(got, ("memory.min", "memory.low", "memory.high")) == ("0", "0", "max")


def test_res_demo_pod_cgroup() -> None:
    result = explain(manifests("res-demo.yaml"))
    got = values(result, "res-demo")
    assert files(got, ("cpu.weight", "cpu.max", "memory.max", "memory.oom.group")) == \
        ("10", "50000 100000", "134217728", "0")


def test_res_demo_pod_path_from_its_uid() -> None:
    (res_demo,) = manifests("res-demo.yaml")
    result = explain([replace(res_demo, uid=RES_DEMO_UID)])
    cgroup = result.pod("res-demo").cgroup
    assert cgroup is not None and cgroup.path == (
        "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5.slice"
    )
    assert result.pod("res-demo").container("hello").cgroup.path.startswith(cgroup.path + "/cri-containerd-")


@pytest.mark.parametrize(("name", "container", "adj"), [("res-demo", "hello", 963), ("eater", "eater", 982)])
def test_oom_score_adj_on_the_lab_node(name: str, container: str, adj: int) -> None:
    result = explain(manifests("res-demo.yaml", "eater.yaml"))
    assert result.pod(name).container(container).oom_score_adj.value == str(adj)


def test_oom_score_adj_by_class_and_pause() -> None:
    """Article: "a Guaranteed pod's process got −997, a BestEffort one 1000, the pause containers −998"."""
    result = explain(manifests("qos-classes.yaml"))
    assert result.pod("qos-guaranteed").container("app").oom_score_adj.value == "-997"
    assert result.pod("qos-besteffort").container("app").oom_score_adj.value == "1000"
    for p in result.pods:
        assert p.pause is not None and p.pause.oom_score_adj.value == "-998"


def test_pause_container_files() -> None:
    """Article: "The pause container has cpu.weight 1, and cpu.max and memory.max are max"."""
    pause = explain(manifests("res-demo.yaml")).pod("res-demo").pause
    assert pause is not None
    got = {n: e.value for n, e in pause.cgroup.files.items()}
    assert files(got, ("cpu.weight", "cpu.max", "memory.max")) == ("1", "max 100000", "max")


def test_allocatable_on_the_lab_node() -> None:
    assert explain([]).node.allocatable_memory == 3377260 * KI
    assert explain([]).node.allocatable_cpu_milli == 2000


def test_node_level_cgroups() -> None:
    """Article: kubepods.slice on a two-core node has weight 79 and holds all the node's memory (no reserves)."""
    result = explain(manifests("res-demo.yaml"))
    kubepods = {n: e.value for n, e in result.cgroups["kubepods.slice"].files.items()}
    assert kubepods["cpu.weight"] == "79" and kubepods["memory.max"] == str(ARTICLE_NODE_MEMORY)
    besteffort = result.cgroups["kubepods.slice/kubepods-besteffort.slice"].files["cpu.weight"]
    assert besteffort.value == "1"


@pytest.mark.parametrize(
    ("name", "qos"),
    [("res-demo", QosClass.BURSTABLE), ("burner", QosClass.BURSTABLE), ("eater", QosClass.BURSTABLE),
     ("qos-guaranteed", QosClass.GUARANTEED), ("qos-burstable", QosClass.BURSTABLE),
     ("qos-besteffort", QosClass.BEST_EFFORT)],
)
def test_qos_classes_of_the_article_pods(name: str, qos: QosClass) -> None:
    result = explain(manifests("res-demo.yaml", "burner.yaml", "eater.yaml", "qos-classes.yaml"))
    assert result.pod(name).qos_class is qos and result.pod(name).admitted


def test_burner_quota_20000() -> None:
    """Article: "the 20000 100000 quota is set on both the pod group and the container group"."""
    result = explain(manifests("burner.yaml"))
    assert values(result, "burner")["cpu.max"] == "20000 100000"
    assert values(result, "burner", "burner")["cpu.max"] == "20000 100000"


def test_eater_pod_limit_64mi() -> None:
    """Article: "oom_memcg is the pod group: its limit is the sum of the container limits, the same 64 MiB"."""
    result = explain(manifests("eater.yaml"))
    assert values(result, "eater")["memory.max"] == "67108864"
    assert values(result, "eater", "eater")["cpu.max"] == "max 100000"


def test_resize_cpu_limit_to_one_core() -> None:
    """Article: after the resize patch `limits.cpu: 1`, container and pod cpu.max read "100000 100000"."""
    (res_demo,) = manifests("res-demo.yaml")
    hello = res_demo.containers[0]
    resized = replace(hello, resources=Resources(
        requests=hello.resources.requests, limits={**hello.resources.limits, "cpu": Quantity.parse("1")}
    ))
    result = explain([res_demo.with_containers([resized], [])])
    assert values(result, "res-demo")["cpu.max"] == "100000 100000"
    assert values(result, "res-demo", "hello")["cpu.max"] == "100000 100000"


def test_limit_range_defaults_and_bounds() -> None:
    """Article hands-on: plain gets the LimitRange defaults; huge and tiny are refused with its messages."""
    objects = load_objects([WORKLOADS / n for n in ("limitrange.yaml", "quota.yaml", "quota-test-pods.yaml")])
    pods = [o for o in objects if isinstance(o, Pod)]
    namespace_objects = [o for o in objects if isinstance(o, LimitRange | ResourceQuota)]
    result = expect(pods, LAB_NODE, KubeletConfig(), profile_for("1.36"), namespace_objects)
    plain = result.pod("plain", "quota-test")
    assert plain.admitted and plain.qos_class is QosClass.BURSTABLE
    # {"limits":{"cpu":"2","memory":"128Mi"},"requests":{"cpu":"100m","memory":"128Mi"}}
    hello = plain.container("plain").cgroup.files
    assert (hello["cpu.max"].value, hello["memory.max"].value) == ("200000 100000", "134217728")
    huge, tiny = result.pod("huge", "quota-test"), result.pod("tiny", "quota-test")
    assert not huge.admitted and huge.errors == (
        'pods "huge" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi',)
    assert not tiny.admitted and tiny.errors == (
        'pods "tiny" is forbidden: minimum memory usage per Container is 32Mi, but request is 16Mi',)
    assert huge.cgroup is None and huge.containers == ()


@pytest.mark.parametrize(
    ("p", "message"),
    [
        pytest.param(pod(ctr("c", {"cpu": "2"}, {"cpu": "1"})),
                     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu '
                     "limit of 1", id="request-above-limit"),
        pytest.param(pod(ctr("c"), name="Bad_Name"), 'metadata.name: Invalid value: "Bad_Name"', id="bad-pod-name"),
        pytest.param(pod(ctr("Web")), 'spec.containers[0].name: Invalid value: "Web"', id="bad-container-name"),
        pytest.param(pod(ctr("c"), ctr("c")), 'spec.containers[1].name: Duplicate value: "c"', id="duplicate-names"),
        pytest.param(pod(ctr("c"), init=(ctr("c"),)), 'spec.containers[0].name: Duplicate value: "c"',
                     id="duplicate-with-init"),
        pytest.param(pod(ctr("c", {"memory": "-1"})), 'requests[memory]: Invalid value: "-1": must be greater than',
                     id="negative"),
        pytest.param(pod(ctr("c", {"cpu": "3"})),
                     "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
                     id="does-not-fit-the-node"),
        pytest.param(pod(ctr("c", {"memory": "100Mi"}), resources={"requests": {"memory": "50Mi"}}),
                     'spec.resources.requests[memory]: Invalid value: "50Mi": must be greater than or equal to '
                     "aggregate container requests of 100Mi", id="pod-level-below-containers"),
        pytest.param(pod(ctr("c"), meta={"uid": "../../escape"}), 'metadata.uid: Invalid value: "../../escape"',
                     id="unsafe-uid"),
        pytest.param(pod(ctr("c", restartPolicy="Always")), "spec.containers[0].restartPolicy: Forbidden",
                     id="restart-policy-on-regular-container"),
        pytest.param(pod(ctr("c"), init=(ctr("i", restartPolicy="Never"),)),
                     'spec.initContainers[0].restartPolicy: Unsupported value: "Never"', id="init-restart-policy"),
        pytest.param(pod(ctr("c"), meta={"namespace": "Team"}), 'metadata.namespace: Invalid value: "Team"',
                     id="bad-namespace"),
    ],
)
def test_rejected_pods_are_reported_not_raised(p: Pod, message: str) -> None:
    result = explain([p])
    (rejected,) = result.pods
    assert not rejected.admitted and rejected.cgroup is None
    assert any(message in e for e in rejected.errors), rejected.errors


def test_node_fit_counts_earlier_pods() -> None:
    first, second = pod(ctr("c", {"cpu": "1500m"}), name="a"), pod(ctr("c", {"cpu": "600m"}), name="b")
    result = explain([first, second])
    assert result.pod("a").admitted and not result.pod("b").admitted
    assert "requested: 600, used: 1500, capacity: 2000" in result.pod("b").errors[0]


def test_sub_byte_memory_warns() -> None:
    """Article: `memory: 400m` is a request for 0.4 bytes."""
    result = explain([pod(ctr("c", {"memory": "400m"}))])
    (p,) = result.pods
    assert p.admitted
    assert p.warnings == ('spec.containers[0].resources.requests[memory]: fractional byte value "400m" is invalid, '
                          "must be an integer",)


def test_every_container_and_sidecar_gets_a_cgroup() -> None:
    p = pod(ctr("app", {"memory": "64Mi"}), init=(ctr("side", restartPolicy="Always"), ctr("setup")))
    got = explain([p]).pod("p")
    assert [(c.name, c.init, c.sidecar) for c in got.containers] == [
        ("side", True, True), ("setup", True, False), ("app", False, False)]
    paths = {c.cgroup.path for c in got.containers}
    assert len(paths) == 3


def test_cgroupfs_driver_paths() -> None:
    result = expect([pod(ctr("c"))], LAB_NODE, KubeletConfig(cgroup_driver="cgroupfs"), profile_for())
    assert set(result.cgroups) == {"kubepods", "kubepods/burstable", "kubepods/besteffort"}
    cgroup = result.pods[0].cgroup
    assert cgroup is not None and cgroup.path.startswith("kubepods/besteffort/pod")


def test_max_pods() -> None:
    """The kubelet admits at most maxPods pods (110 by default; article: `pods: 110`)."""
    pods = [pod(ctr("c"), name=f"p{i}") for i in range(111)]
    result = explain(pods)
    assert all(p.admitted for p in result.pods[:110])
    assert result.pods[110].errors == (
        "OutOfpods: Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110",)
