"""Pod-level resources against container resources (pkg/apis/core/validation validatePodResourceConsistency)
and activeDeadlineSeconds (ValidatePodSpec)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.validation import pod_errors
from suites.toolkit.builders import container as ctr
from suites.toolkit.builders import pod

PROFILE = profile_for("1.38")
POD_LIMITS = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}


def errors(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any) -> tuple[str, ...]:
    return pod_errors(with_api_defaults(pod(*containers, init=init, resources=POD_LIMITS, **spec)), PROFILE)


def test_each_container_may_take_the_whole_pod_limit() -> None:
    """Limits are compared one container at a time, never summed (policy_test.go's pod-level sidecar pods)."""
    whole = ({"cpu": "100m", "memory": "100Mi"}, {"cpu": "2", "memory": "2Gi"})
    assert errors(ctr("a", *whole), ctr("b", *whole), init=(ctr("s", *whole, restartPolicy="Always"),)) == ()


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        pytest.param({"memory": "3Gi"}, 'spec.resources.containers[1][memory].limits: Invalid value: "3Gi": must be '
                     "less than or equal to pod limits of 2Gi", id="memory"),
        pytest.param({"cpu": "3"}, 'spec.resources.containers[1][cpu].limits: Invalid value: "3": must be less '
                     "than or equal to pod limits of 2", id="cpu"),
    ],
)
def test_a_regular_container_above_the_pod_limit_is_refused(limits: dict[str, str], message: str) -> None:
    assert errors(ctr("a", {"cpu": "10m"}), ctr("b", {"cpu": "10m", "memory": "10Mi"}, limits)) == (message,)


@pytest.mark.parametrize("extra", [{}, {"restartPolicy": "Always"}], ids=["init-container", "sidecar"])
def test_init_containers_are_not_held_to_the_pod_limit(extra: dict[str, str]) -> None:
    """The rule loops over spec.containers only."""
    big = ctr("i", {"cpu": "10m", "memory": "10Mi"}, {"memory": "3Gi"}, **extra)
    assert errors(ctr("a", {"cpu": "10m"}), init=(big,)) == ()


def test_aggregate_requests_above_the_pod_request_are_refused() -> None:
    half = {"cpu": "600m", "memory": "100Mi"}
    assert errors(ctr("a", half), ctr("b", half)) == (
        'spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container '
        "requests of 1200m",)


@pytest.mark.parametrize(("seconds", "valid"), [(0, False), (-1, False), (1, True), (2**31 - 1, True),
                                                (2**31, False)])
def test_active_deadline_seconds_range(seconds: int, valid: bool) -> None:
    found = pod_errors(pod(ctr("c"), activeDeadlineSeconds=seconds), PROFILE)
    assert (found == ()) is valid, found
    if not valid:
        assert found == (f"spec.activeDeadlineSeconds: Invalid value: {seconds}: must be between 1 and 2147483647, "
                         "inclusive",)
