"""QoS classes (seed requests-limits-qos "QoS classes"; pkg/apis/core/v1/helper/qos ComputePodQOS)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.manifest import Pod
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.qos import pod_qos
from suites.toolkit.builders import container as ctr
from suites.toolkit.builders import pod

G, B, BE = QosClass.GUARANTEED, QosClass.BURSTABLE, QosClass.BEST_EFFORT
FULL = {"cpu": "500m", "memory": "128Mi"}


def qos(p: Pod, version: str = "1.38") -> QosClass:
    return pod_qos(with_api_defaults(p), profile_for(version))


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod(ctr("hello", {"cpu": "250m", "memory": "128Mi"}, FULL)), B, id="article-res-demo"),
        pytest.param(pod(ctr("burner", {"cpu": "100m", "memory": "16Mi"}, {"cpu": "200m", "memory": "16Mi"})), B,
                     id="article-burner"),
        pytest.param(pod(ctr("eater", {"cpu": "50m", "memory": "64Mi"}, {"memory": "64Mi"})), B, id="article-eater"),
        pytest.param(pod(ctr("a", FULL, FULL)), G, id="requests-equal-limits"),
        pytest.param(pod(ctr("a", None, FULL)), G, id="limit-alone-defaults-request"),
        pytest.param(pod(ctr("a")), BE, id="nothing"),
        pytest.param(pod(ctr("a", {"memory": "64Mi"})), B, id="request-only"),
        pytest.param(pod(ctr("a", FULL, FULL), ctr("b")), B, id="guaranteed-plus-besteffort-is-burstable"),
        pytest.param(pod(ctr("a", None, {"cpu": "1"})), B, id="cpu-only-limit"),
        pytest.param(pod(ctr("a", {"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "2Gi"})), BE,
                     id="ephemeral-storage-only"),
        pytest.param(pod(ctr("a", None, {"hugepages-2Mi": "4Mi"})), BE, id="hugepages-only"),
        pytest.param(pod(ctr("a", FULL, {**FULL, "swap": "1Gi"})), G, id="limits-swap-does-not-change-class"),
        pytest.param(pod(ctr("a", FULL, FULL), init=(ctr("i"),)), B, id="init-container-without-limits"),
        pytest.param(pod(ctr("a"), init=(ctr("i", {"cpu": "10m"}),)), B, id="init-container-request"),
        pytest.param(pod(ctr("a", {"cpu": "0"}, {"cpu": "0"})), BE, id="zero-quantities-ignored"),
    ],
)
def test_classes(p: Pod, expected: QosClass) -> None:
    assert qos(p) is expected


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"limits": FULL}, G, id="pod-level-limits-only"),
        pytest.param({"requests": {"memory": "64Mi"}}, B, id="pod-level-request"),
        pytest.param({"requests": FULL, "limits": {"cpu": "1", "memory": "128Mi"}}, B, id="pod-level-unequal"),
    ],
)
def test_pod_level_resources_decide(resources: dict[str, Any], expected: QosClass) -> None:
    assert qos(pod(ctr("a"), ctr("b"), resources=resources)) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [("1.36", BE), ("1.37", B), ("1.38", B)],
)
def test_empty_pod_level_resources_before_the_fix(version: str, expected: QosClass) -> None:
    """kubernetes#135082: `spec.resources: {}` made ComputePodQOS say BestEffort until the 1.37 fix gate."""
    assert qos(pod(ctr("a", {"memory": "1Gi"}), resources={}), version) is expected
