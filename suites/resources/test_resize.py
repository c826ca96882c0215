"""In-place resize: the article's cpu limit to one core without a restart, and its two refusals.

Source: requests-limits-qos article, "Changing resources on the fly" and "Hands-on" resize.
"""

from __future__ import annotations

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodHandle
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import check_pod, deploy_pods, settled_evidence
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import pod, with_container
from suites.toolkit.resize import decision, patch, status_rows

pytestmark = [pytest.mark.requests_limits]

pytestmark.append(pytest.mark.runs_alone(
    "resize decisions against the node's allocatable cpu (what fits depends on every pod's requests)"))

RESIZE = f"{ARTICLE}, Hands-on in-place resize"


def _pid(handle: PodHandle, container: str) -> tuple[int, ...]:
    return settled_evidence(handle).container(container).pids


def test_cpu_limit_to_one_core_without_restart(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """limits.cpu 500m → 1: cpu.max 100000 100000 on container and pod group, same process, restarts 0."""
    demo = pod("requests-limits/res-demo.yaml")
    deployed = deploy_pods(deploy, oracle, kubelet, [demo])
    handle = deployed.handle("res-demo")
    check_pod(handle, deployed.expected("res-demo"), QosClass.BURSTABLE)
    before = _pid(handle, "hello")
    desired = with_container(demo, "hello", limits={"cpu": "1", MEMORY: "128Mi"})
    status, message = decision(oracle, kubelet, demo, desired)
    got = handle.resize(patch("hello", {"limits": {"cpu": "1"}}))
    after = settled_evidence(handle)
    state = after.status.container("hello")
    assert_matches("pod default/res-demo resized", [
        *status_rows("res-demo", got, status, message, RESIZE),
        compare_value("res-demo", "hello", after.container("hello").cgroup.path, "cpu.max",
                      Expected("100000 100000", RESIZE), after.container("hello").cgroup.get("cpu.max")),
        compare_value("res-demo", "", after.pod_cgroup.path, "cpu.max", Expected("100000 100000", RESIZE),
                      after.pod_cgroup.get("cpu.max")),
        compare_value("res-demo", "hello", after.container("hello").cgroup.path, "restarts and process",
                      Expected(f"0 restarts, pids {before}", RESIZE),
                      f"{state.restart_count} restarts, pids {after.container('hello').pids}"),
    ])


@pytest.mark.parametrize(("case", "resources", "message"), [
    # After the article's first resize (limits.cpu 1), requests.cpu 1 would make res-demo Guaranteed.
    ("qos-change", {"requests": {"cpu": "1"}},
     'The Pod "res-demo" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change as a result '
     "of resizing"),
    ("infeasible", {"requests": {"cpu": "3"}, "limits": {"cpu": "4"}},
     'pods "res-demo" is forbidden: node didn\'t have enough allocatable resources: cpu, requested: 3000, '
     "allocatable: 2000"),
], ids=["qos-change", "infeasible"])
def test_resize_refused_with_the_articles_message(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                                  node_facts: NodeFacts, case: str,
                                                  resources: dict[str, dict[str, str]], message: str) -> None:
    """The QoS class is immutable; a request that can never fit is refused at once; nothing changes on the node."""
    if case == "infeasible" and node_facts.cpu_capacity_milli != 2000:
        pytest.skip(f"the message of the {ARTICLE} names a 2-cpu node")
    demo = pod("requests-limits/res-demo.yaml")
    if case == "qos-change":
        demo = with_container(demo, "hello", limits={"cpu": "1", MEMORY: "128Mi"})
    deployed = deploy_pods(deploy, oracle, kubelet, [demo])
    handle = deployed.handle("res-demo")
    check_pod(handle, deployed.expected("res-demo"), QosClass.BURSTABLE)
    hello = demo.containers[0].resources
    requests = {**{k: str(q) for k, q in hello.requests.items()}, **resources.get("requests", {})}
    limits = {**{k: str(q) for k, q in hello.limits.items()}, **resources.get("limits", {})}
    status, oracle_message = decision(oracle, kubelet, demo, with_container(demo, "hello", requests=requests,
                                                                             limits=limits))
    got = handle.resize(patch("hello", resources))
    assert_matches(f"pod default/res-demo {case} resize", [
        compare_value("res-demo", "", "(resize)", f"refusal message ({ARTICLE})", Expected(message, RESIZE),
                      got.message),
        *status_rows("res-demo", got, status, oracle_message, RESIZE),
    ])
    check_pod(handle, deployed.expected("res-demo"), QosClass.BURSTABLE)
