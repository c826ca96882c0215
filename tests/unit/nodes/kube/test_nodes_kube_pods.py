"""Reading core/v1 Pod and Event objects: admission, container states, resize status, start failures."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.nodes.base import ContainerState, ResizeStatus, Terminated
from nodeconf.nodes.kube.pods import (
    admission,
    container_ids,
    container_state,
    pod_events,
    resize_status,
    resources_actuated,
    settled_resize,
    start_failure,
)

CID = "4f" * 32
RESOURCES = {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}


def pod(phase: str, statuses: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "generation": 1},
            "spec": {"containers": [{"name": "app", "resources": RESOURCES}]},
            "status": {"phase": phase, **({"containerStatuses": statuses} if statuses is not None else {}),
                       **status}}


RUNNING = {"name": "app", "containerID": f"containerd://{CID}", "state": {"running": {}}, "restartCount": 0,
           "resources": RESOURCES}
CREATING = {"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}, "restartCount": 0}
CRASHED = {"name": "app", "containerID": f"containerd://{CID}", "restartCount": 3,
           "state": {"waiting": {"reason": "CrashLoopBackOff"}},
           "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
DONE = {"name": "app", "containerID": f"containerd://{CID}", "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}


@pytest.mark.parametrize(("obj", "decision"), [
    pytest.param(pod("Pending"), None, id="not-seen-yet"),
    pytest.param(pod("Pending", [CREATING]), None, id="creating"),
    pytest.param(pod("Running", [RUNNING]), (True, ()), id="running"),
    pytest.param(pod("Running", [CRASHED]), (True, ()), id="crash-looping-has-started"),
    pytest.param(pod("Succeeded", [DONE]), (True, ()), id="finished"),
    pytest.param(pod("Failed", None, reason="OutOfmemory",
                     message="Pod was rejected: Node didn't have enough resource: memory"),
                 (False, ("Pod was rejected: Node didn't have enough resource: memory",)), id="kubelet-rejects"),
    pytest.param(pod("Failed", None, reason="NodeAffinity"), (False, ("NodeAffinity",)), id="reason-only"),
    pytest.param(pod("Failed", [DONE], reason="Evicted", message="The node was low on resource: memory."),
                 (True, ()), id="evicted-after-running"),
])
def test_admission(obj: dict[str, Any], decision: tuple[bool, tuple[str, ...]] | None) -> None:
    assert admission(obj) == decision


@pytest.mark.parametrize(("status", "state"), [
    pytest.param(RUNNING, ContainerState("app", "running", resources=RESOURCES), id="running"),
    pytest.param(CRASHED, ContainerState("app", "waiting", "CrashLoopBackOff", None, 3, Terminated(137, "OOMKilled")),
                 id="oom-killed-restarting"),
    pytest.param(DONE, ContainerState("app", "terminated", "Completed", 0), id="completed"),
    pytest.param({"name": "app", "state": {}}, ContainerState("app", "waiting"), id="no-state-yet"),
    pytest.param({**RUNNING, "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "200Mi"}},
                  "allocatedResources": {"cpu": "100m"}},
                 ContainerState("app", "running", allocated_resources={"cpu": "100m"},
                                resources={"requests": {"cpu": "100m"}, "limits": {"memory": "200Mi"}}),
                 id="status-resources"),
])
def test_container_state(status: dict[str, Any], state: ContainerState) -> None:
    assert container_state(status) == state


def test_container_ids_strip_the_runtime_scheme_and_skip_odd_ones() -> None:
    obj = pod("Running", [RUNNING, {**CREATING, "name": "b"}, {**RUNNING, "name": "c", "containerID": "x://../.."}],
              initContainerStatuses=[{**DONE, "name": "init", "containerID": f"cri-o://{'ab' * 32}"}])
    assert container_ids(obj) == {"init": "ab" * 32, "app": CID}


@pytest.mark.parametrize(("waiting", "failure"), [
    # The kubelet retries pulls and container creation with a back-off: not permanent.
    pytest.param({"reason": "ErrImagePull", "message": 'failed to pull "cache:latest"'},
                 ('container app: ErrImagePull: failed to pull "cache:latest"', False), id="pull"),
    pytest.param({"reason": "CreateContainerConfigError", "message": 'configmap "x" not found'},
                 ('container app: CreateContainerConfigError: configmap "x" not found', False), id="config"),
    pytest.param({"reason": "CreateContainerError", "message": "context deadline exceeded"},
                 ("container app: CreateContainerError: context deadline exceeded", False), id="create"),
    pytest.param({"reason": "InvalidImageName", "message": 'couldn\'t parse image name "A:b"'},
                 ('container app: InvalidImageName: couldn\'t parse image name "A:b"', True), id="bad-name"),
    # CRI-O >= 1.34 refuses a short name in enforcing short-name mode (cri-o#9401): the kubelet reports
    # ImageInspectError, which no retry changes (issue 29 item 3).
    pytest.param({"reason": "ImageInspectError", "message": 'short name mode is enforcing, but image name '
                  'busybox:1.37 returns ambiguous list'},
                 ("container app: ImageInspectError: short name mode is enforcing, but image name busybox:1.37 "
                  "returns ambiguous list", True), id="short-name-refused"),
    pytest.param({"reason": "ImagePullBackOff", "message": 'Back-off pulling image "docker.io/library/busybox:1.37":'
                  " toomanyrequests: You have reached your pull rate limit"},
                 ('container app: ImagePullBackOff: Back-off pulling image "docker.io/library/busybox:1.37": '
                  "toomanyrequests: You have reached your pull rate limit", False), id="pull-limit"),
    pytest.param({"reason": "ContainerCreating"}, None, id="normal-wait"),
    pytest.param({"reason": "CrashLoopBackOff"}, None, id="crash-loop-is-behaviour"),
])
def test_start_failure(waiting: dict[str, str], failure: tuple[str, bool] | None) -> None:
    assert start_failure(pod("Pending", [{"name": "app", "state": {"waiting": waiting}}])) == failure


def test_events_oldest_first() -> None:
    items = [{"type": "Warning", "reason": "SwapNotSupported", "message": "m2",
              "lastTimestamp": "2026-01-01T00:00:02Z"},
             {"type": "Normal", "reason": "Started", "message": "m1", "eventTime": "2026-01-01T00:00:01.000000Z"}]
    assert [e.reason for e in pod_events(items)] == ["Started", "SwapNotSupported"]


def with_resize(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    obj["metadata"]["generation"] = changes.pop("generation", 2)
    obj["status"].update(changes)
    return obj


@pytest.mark.parametrize(("obj", "requested", "expected"), [
    pytest.param(pod("Running", [RUNNING]), False, ResizeStatus(""), id="never-resized"),
    pytest.param(with_resize(pod("Running", [RUNNING]), observedGeneration=1), True, None, id="not-observed-yet"),
    pytest.param(with_resize(pod("Running", [RUNNING]), observedGeneration=2), True, ResizeStatus("Applied"),
                 id="applied"),
    pytest.param(with_resize(pod("Running", [{**RUNNING, "resources": {"limits": {"cpu": "1"}}}]),
                             observedGeneration=2), True, None, id="observed-not-actuated"),
    pytest.param(with_resize(pod("Running", [RUNNING]), conditions=[
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible",
         "message": "Node didn't have enough capacity: cpu, requested: 64000, capacity: 2000"}]), True,
        ResizeStatus("Infeasible", "Node didn't have enough capacity: cpu, requested: 64000, capacity: 2000"),
        id="infeasible-condition"),
    pytest.param(with_resize(pod("Running", [RUNNING]), conditions=[
        {"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": "m"}]), True,
        ResizeStatus("Deferred", "m"), id="deferred-condition"),
    pytest.param(with_resize(pod("Running", [RUNNING]), conditions=[
        {"type": "PodResizeInProgress", "status": "True"}]), True, ResizeStatus("InProgress"), id="in-progress"),
    pytest.param(with_resize(pod("Running", [RUNNING]), conditions=[
        {"type": "PodResizePending", "status": "False", "reason": "Deferred"}]), True, ResizeStatus("Applied"),
        id="false-condition-ignored"),
    pytest.param(with_resize(pod("Running", [RUNNING]), resize="Infeasible"), True, ResizeStatus("Infeasible"),
                 id="legacy-status-resize"),
    pytest.param(with_resize(pod("Running", [RUNNING]), resize="Proposed"), True, None, id="legacy-proposed"),
])
def test_resize_status(obj: dict[str, Any], requested: bool, expected: ResizeStatus | None) -> None:
    assert resize_status(obj, requested) == expected


ACTUATED = {**RUNNING, "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                     "limits": {"cpu": "1", "memory": "128Mi"}}}


@pytest.mark.parametrize(("conditions", "statuses", "settled"), [
    # The kubelet's sequence for an accepted resize (status_manager.go): InProgress while actuating, then cleared.
    pytest.param([{"type": "PodResizeInProgress", "status": "True"}], [RUNNING], None, id="accepted"),
    pytest.param([{"type": "PodResizeInProgress", "status": "True"}], [ACTUATED], None,
                 id="actuated-condition-not-cleared-yet"),
    pytest.param([], [ACTUATED], ResizeStatus("Applied"), id="conditions-cleared"),
    pytest.param([{"type": "PodResizeInProgress", "status": "True", "reason": "Error", "message": "m"}],
                 [RUNNING], None, id="actuation-error-is-retried"),
    pytest.param([{"type": "PodResizePending", "status": "True", "reason": "Deferred"}], [RUNNING], None,
                 id="deferred-may-change"),
    pytest.param([{"type": "PodResizePending", "status": "True", "reason": "Infeasible", "message": "m"}],
                 [RUNNING], ResizeStatus("Infeasible", "m"), id="infeasible-is-terminal"),
])
def test_settled_resize_waits_until_both_conditions_clear(conditions: list[dict[str, str]],
                                                          statuses: list[dict[str, Any]],
                                                          settled: ResizeStatus | None) -> None:
    """Upstream's resize helper (test/e2e/framework/pod/resize.go WaitForPodResizeActuation)."""
    obj = with_resize(pod("Running", statuses), observedGeneration=2, conditions=conditions)
    obj["spec"]["containers"][0]["resources"] = ACTUATED["resources"]
    assert settled_resize(obj) == settled


@pytest.mark.parametrize(("actual", "same"), [
    pytest.param({"requests": {"cpu": "250m", "memory": "67108864"}, "limits": {"cpu": "0.5", "memory": "128Mi"}},
                 True, id="same-quantities-other-spelling"),
    pytest.param({"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}},
                 False, id="cpu-limit-differs"),
    pytest.param({"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "500m"}}, False,
                 id="memory-limit-missing"),
])
def test_resources_actuated(actual: dict[str, Any], same: bool) -> None:
    assert resources_actuated(pod("Running", [{**RUNNING, "resources": actual}])) is same
