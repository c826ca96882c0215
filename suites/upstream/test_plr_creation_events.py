"""A pod with pod-level resources, created and never resized, has no resize event.

Source: upstream test/e2e/common/node/pod_level_resources_resize.go doInitialCreationNoResizeEventTest "should not
emit ResizeCompleted event on initial creation" ([MinimumKubeletVersion:1.36]): pod-level cpu 200m and memory 256Mi
(requests == limits), one container c1 without resources of its own; its events hold no ResizeCompleted.
The events expected come from the oracle (the pod's expectation at creation); every event whose reason starts with
`Resize` (the kubelet's ResizeCompleted, nodeconf's Resize<status>) must be among them.

Guarantee relied on: the kubelet records a resize event only when it actuates a change of the pod's resources
(kubelet events.ResizeCompleted, sent once a resize's allocation is actuated); a pod's first start actuates its
initial allocation, which is no resize. Deterministic: the events are read once the pod runs, and nothing resizes it.
"""

from __future__ import annotations

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.fixtures.node import Deploy
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.builders import container, pod
from suites.toolkit.checks import check_pod, deploy_pods
from suites.toolkit.compare import EVENTS, NONE, assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle

pytestmark = [pytest.mark.independent, pytest.mark.min_profile("1.36")]

PLR_RESIZE_TEST = "test/e2e/common/node/pod_level_resources_resize.go"
CASE = "PLR Pod InPlace Resize / should not emit ResizeCompleted event on initial creation"
RESIZE = "Resize"  # the prefix of every resize event reason (ResizeCompleted; the enforcer's Resize<status>)


@mirrors(PLR_RESIZE_TEST, CASE)
def test_no_resize_event_on_creation(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """upstream's pod: pod-level 200m/256Mi (requests == limits), container c1 without resources."""
    plr = {"cpu": "200m", "memory": "256Mi"}
    workload = pod(container("c1"), name="plr-no-resize-event", resources={"requests": plr, "limits": plr})
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_pod(handle, expected, QosClass.GUARANTEED)
    want = ", ".join(e.reason for e in expected.events if e.reason.startswith(RESIZE)) or NONE
    got = ", ".join(e.reason for e in handle.events() if e.reason.startswith(RESIZE)) or NONE
    assert_matches(f"pod {workload.ref} events after its first start", [
        compare_value(workload.name, "", EVENTS, "resize events", Expected(want, f"{CASE} (the oracle's events at "
                                                                          "creation)"), got)])
