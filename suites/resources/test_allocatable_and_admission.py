"""Node allocatable as kubepods limits, and the article's LimitRange / ResourceQuota walk-through with its messages.

Source: requests-limits-qos article, "How the scheduler uses requests" (reserves), "What the numbers turn into"
(kubepods.slice weight 79 on two cores), "LimitRange", "ResourceQuota", "Hands-on" quotas.
"""

from __future__ import annotations

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import CPU, MEMORY
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodEvidence
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import check_admission, check_node, check_pod, deploy_pods, seed_files
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import namespace_objects, pod, pods, renamed, with_container
from suites.toolkit.tolerance import page_floor

pytestmark = [pytest.mark.requests_limits]

pytestmark.append(pytest.mark.runs_alone(
    "judges kubepods against allocatable, admission against it, and the namespace's LimitRange and ResourceQuota"))

RESERVES = f"{ARTICLE}: kubepods.slice limited to capacity − systemReserved − kubeReserved"
WEIGHT = f"{ARTICLE}: kubepods weight from allocatable cpu, kubelet's linear formula (79 on 2 cores)"
WALK = f"{ARTICLE}, Hands-on quotas"


def _linear_weight(milli_cpu: int) -> int:
    """cpu.shares = milli × 1024 / 1000 (at least 2), weight = 1 + (shares − 2) × 9999 / 262142."""
    shares = max(2, milli_cpu * 1024 // 1000)
    return 1 + ((shares - 2) * 9999) // 262142


@pytest.mark.parametrize("reserved", [False, True], ids=["no-reserves", "reserves"])
def test_kubepods_from_allocatable(kubelet: Kubelet, oracle: Oracle, node_facts: NodeFacts, reserved: bool) -> None:
    """kubepods memory.max = capacity − reserves (never the eviction threshold, never the huge page pool),
    cpu.weight from allocatable cpu."""
    config = kubelet.file("requests-limits/kubelet-config/reserved.yaml") if reserved else kubelet.config
    memory = sum(q.value() for q in (config.system_reserved.get(MEMORY), config.kube_reserved.get(MEMORY)) if q)
    cpu = sum(q.milli_value() for q in (config.system_reserved.get(CPU), config.kube_reserved.get(CPU)) if q)
    check_node(kubelet.node, oracle.expect([], config), "node allocatable")
    kubepods = kubelet.node.node_cgroups()["kubepods.slice"]
    assert_matches(f"kubepods.slice ({ARTICLE})", seed_files("", "", kubepods, {
        "memory.max": str(page_floor(node_facts.memory_capacity - memory, node_facts.page_size)),
    }, RESERVES) + seed_files("", "", kubepods, {
        "cpu.weight": str(_linear_weight(node_facts.cpu_capacity_milli - cpu))}, WEIGHT))


NAMESPACE = [*namespace_objects("requests-limits/limitrange.yaml"), *namespace_objects("requests-limits/quota.yaml")]


def test_limitrange_defaults_a_pod_without_resources(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                     node_facts: NodeFacts) -> None:
    """plain gets requests 100m/128Mi and limits cpu 2 (from max) / 128Mi, and its cgroups show them."""
    plain = pod("requests-limits/quota-test-pods.yaml", "plain")
    deployed = deploy_pods(deploy, oracle, kubelet, [plain], NAMESPACE)
    effective = deployed.expected("plain").pod.containers[0].resources
    shown = {k: {n: str(q) for n, q in sorted(v.items())} for k, v in
             (("limits", effective.limits), ("requests", effective.requests))}
    assert shown == {"limits": {"cpu": "2", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}, (
        f"pod quota-test/plain: the oracle's effective resources {shown} are not those of the {ARTICLE}")

    def article(evidence: PodEvidence) -> list[ComparedValue]:
        return seed_files("plain", "plain", evidence.container("plain").cgroup,
                          {"cpu.max": "200000 100000", "memory.max": "134217728"}, WALK)

    check_pod(deployed.handle("plain"), deployed.expected("plain"), QosClass.BURSTABLE, seed=article)


@pytest.mark.parametrize(("name", "message"), [
    ("huge", 'pods "huge" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi'),
    ("tiny", 'pods "tiny" is forbidden: minimum memory usage per Container is 32Mi, but request is 16Mi'),
], ids=["huge", "tiny"])
def test_limitrange_refuses_with_the_articles_message(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                      name: str, message: str) -> None:
    deployed = deploy_pods(deploy, oracle, kubelet, [pod("requests-limits/quota-test-pods.yaml", name)], NAMESPACE)
    handle = deployed.handle(name)
    check_admission(handle, deployed.expected(name))
    assert_matches(f"pod quota-test/{name}", [compare_value(name, "", "(admission)", "refusal message", Expected(
        message, WALK), "; ".join(handle.errors) or None)])


QUOTA_MESSAGE = ("exceeded quota: budget, requested: pods=1,requests.cpu=100m, used: pods=20,requests.cpu=2, "
                 "limited: pods=20,requests.cpu=2")


def test_quota_admits_twenty_pods_and_refuses_the_next(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """The article's 40-replica Deployment: 20 pods fit the quota (pods 20, requests.cpu 2), the 21st is refused
    naming both. Each replica asks for the LimitRange minimum of memory so that 20 of them also fit the 2 GiB
    reference node; the quota message names only pods and requests.cpu, so it is the article's unchanged."""
    template = with_container(pod("requests-limits/big-deployment.yaml"), "nginx", requests={MEMORY: "32Mi"})
    replicas = [renamed(template, f"big-{i}") for i in range(21)]
    no_room = [e for p in oracle.expect(replicas[:20], kubelet.config, NAMESPACE).pods for e in p.errors
               if e.startswith("OutOf")]
    if no_room:  # the node's capacity (a fact) decides whether the walk-through applies, never the count expected
        pytest.skip(f"the walk-through needs room for 20 replicas of 100m cpu; this node has room for fewer "
                    f"({len(no_room)} refused by node fit: {no_room[0]})")
    deployed = deploy_pods(deploy, oracle, kubelet, replicas, NAMESPACE)
    admitted = [h.pod.name for h in deployed.handles if h.admitted]
    for h in deployed.handles:
        check_admission(h, deployed.expected(h.pod.name))
    last = deployed.handles[-1]
    assert_matches("deployment quota-test/big", [
        compare_value("big", "", "(admission)", "pods admitted", Expected("20", WALK), str(len(admitted))),
        compare_value("big-20", "", "(admission)", "refusal message",
                      Expected(f'pods "big-20" is forbidden: {QUOTA_MESSAGE}', WALK),
                      next((e for e in last.errors if "exceeded quota" in e), None)),
    ])


@pytest.mark.parametrize("manifest", ["requests-limits/admission-besteffort-quota.yaml",
                                      "requests-limits/admission-ratio-limitrange.yaml",
                                      "requests-limits/admission-requests-quota.yaml"],
                         ids=["besteffort-scope", "limit-request-ratio", "requests-need-requests"])
def test_namespace_admission(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, manifest: str) -> None:
    """The article's other namespace rules: each pod admitted or refused as the oracle says, with its message."""
    deployed = deploy_pods(deploy, oracle, kubelet, pods(manifest), namespace_objects(manifest))
    assert any(not p.admitted for p in deployed.expectation.pods), f"{manifest}: no pod is refused"
    for h in deployed.handles:
        check_admission(h, deployed.expected(h.pod.name))
