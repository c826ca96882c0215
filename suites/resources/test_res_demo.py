"""The article's res-demo pod and its QoS classes, read back from the node's cgroups and processes.

Source: requests-limits-qos article, "What the numbers turn into: cgroup v2", "QoS classes", "Hands-on".
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.fixtures.node import Deploy
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodEvidence
from nodeconf.report.comparison import PAUSE
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import check_pod, deploy_pods, seed_files
from suites.toolkit.compare import ComparedValue, compare_oom_score_adj, compare_path
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import pod

pytestmark = [pytest.mark.requests_limits]

MI = 1024**2
HANDS_ON = f"{ARTICLE}, Hands-on: res-demo read on k8s-node-2"
# The article's cgroup table for 250m/500m/128Mi: container weight 35 with the new runtime formula, 10 with the old.
CONTAINER_WEIGHT = {"nonlinear": "35", "linear": "10"}
OOM_TABLE = f"{ARTICLE}, oom_score_adj table (Burstable: 1000 − 1000 × request / node memory)"


def _burstable_score(request: int, capacity: int) -> int:
    """The article's oom_score_adj table: 1000 − 1000 × request / node memory, integer division, kept in [2, 999]."""
    return min(999, max(2, 1000 - (1000 * request) // capacity))


@pytest.mark.runs_alone(f"reconfigures the kubelet (the MemoryQoS gate off, as on the node of the {ARTICLE})")
def test_res_demo_container_pod_and_pause(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                          node_facts: NodeFacts) -> None:
    """Every value the article read for res-demo (Memory QoS off, as on the article's 1.36 node)."""
    config = kubelet.use(replace(kubelet.base, feature_gates={**kubelet.base.feature_gates, "MemoryQoS": False}))
    assert config.swap_behavior == "NoSwap"
    demo = deploy_pods(deploy, oracle, kubelet, [pod("requests-limits/res-demo.yaml")])

    def article(evidence: PodEvidence) -> list[ComparedValue]:
        hello = evidence.container("hello")
        assert evidence.pause is not None
        score = _burstable_score(128 * MI, node_facts.memory_capacity)
        return [
            *seed_files("res-demo", "hello", hello.cgroup, {
                "cpu.weight": CONTAINER_WEIGHT[oracle.facts.cpu_weight_formula], "cpu.max": "50000 100000",
                "memory.max": "134217728", "memory.oom.group": "1", "memory.min": "0", "memory.low": "0",
                "memory.high": "max"}, HANDS_ON),
            *seed_files("res-demo", "", evidence.pod_cgroup, {
                "cpu.weight": "10", "cpu.max": "50000 100000", "memory.max": "134217728", "memory.oom.group": "0"},
                f"{HANDS_ON} (pod group, kubelet's linear formula)"),
            *seed_files("res-demo", PAUSE, evidence.pause.cgroup, {
                "cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max"}, f"{HANDS_ON} (pause)"),
            compare_oom_score_adj("res-demo", "hello", Expected(str(score), OOM_TABLE), hello),
            compare_oom_score_adj("res-demo", PAUSE, Expected("-998", OOM_TABLE), evidence.pause),
        ]

    check_pod(demo.handle("res-demo"), demo.expected("res-demo"), QosClass.BURSTABLE, seed=article)



QOS_TABLE = f"{ARTICLE}, QoS classes and oom_score_adj tables; cgroup tree (systemd driver)"


@mirrors("test/e2e_node/container_manager_test.go", *(
    f"Container Manager Misc [Serial] / Validate OOM score adjustments [NodeFeature:OOMScoreAdj] / once the node is "
    f"setup / {it}" for it in ("pod infra containers oom-score-adj should be -998 and best effort container's should "
                               "be 1000", "guaranteed container's oom-score-adj should be -998",
                               "burstable container's oom-score-adj should be between [2, 1000)")))
@mirrors("test/e2e_node/pods_container_manager_test.go",
         "Kubelet Cgroup Manager / QOS containers / On enabling QOS cgroup hierarchy / "
         "Top level QoS containers should have been created [NodeConformance]",
         *(f"Kubelet Cgroup Manager / Pod containers [NodeConformance] / On scheduling a {qos} Pod / "
           f"Pod containers should have been created under the {parent}"
           for qos, parent in (("Guaranteed", "cgroup-root"), ("BestEffort", "BestEffort cgroup"),
                               ("Burstable", "Burstable cgroup"))))
@mirrors("test/e2e/node/pods.go", "Pods Extended / Pods Set QOS Class / "
         "should be set on Pods with matching resource requests and limits for memory and cpu")
@pytest.mark.independent
@pytest.mark.parametrize(
    ("name", "qos", "parent"),
    [
        ("qos-guaranteed", QosClass.GUARANTEED, "kubepods.slice"),
        ("qos-burstable", QosClass.BURSTABLE, "kubepods.slice/kubepods-burstable.slice"),
        ("qos-besteffort", QosClass.BEST_EFFORT, "kubepods.slice/kubepods-besteffort.slice"),
    ],
    ids=["guaranteed", "burstable", "besteffort"],
)
def test_qos_class_slice_and_oom_score_adj(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts,
                                           name: str, qos: QosClass, parent: str) -> None:
    """Each class lands in its slice with the article's oom_score_adj (pause −998 for every pod)."""
    if kubelet.config.cgroup_driver != "systemd":
        pytest.skip(f"the slice names of the {ARTICLE} are the systemd driver's")
    deployed = deploy_pods(deploy, oracle, kubelet, [pod("requests-limits/qos-classes.yaml", name)])
    score = {QosClass.GUARANTEED: -997, QosClass.BEST_EFFORT: 1000,
             QosClass.BURSTABLE: _burstable_score(64 * MI, node_facts.memory_capacity)}[qos]

    def article(evidence: PodEvidence) -> list[ComparedValue]:
        assert evidence.pause is not None
        actual_parent = evidence.pod_cgroup.path.rpartition("/")[0]
        return [
            compare_path(name, "", parent, actual_parent, QOS_TABLE),
            compare_oom_score_adj(name, "app", Expected(str(score), QOS_TABLE), evidence.container("app")),
            compare_oom_score_adj(name, PAUSE, Expected("-998", QOS_TABLE), evidence.pause),
        ]

    check_pod(deployed.handle(name), deployed.expected(name), qos, seed=article)
