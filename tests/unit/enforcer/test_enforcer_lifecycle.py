"""Lifecycle rules: restart policy per container kind, kubelet back-off, start order, pod phase."""

from __future__ import annotations

import pytest

from nodeconf.enforcer.lifecycle import Backoff, pod_phase, ready_to_start, restarts, restarts_for_resize
from nodeconf.enforcer.records import INIT, PAUSE, REGULAR, SIDECAR, ContainerRecord
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict


@pytest.mark.parametrize("restart_count, delay", [(0, 0), (1, 10), (2, 20), (3, 40), (5, 160), (6, 300), (9, 300)])
def test_kubelet_backoff(restart_count: int, delay: float) -> None:
    """kubelet: first restart at once, then 10 s doubling, capped at 300 s (pkg/kubelet/kubelet.go backOff)."""
    assert Backoff().delay(restart_count) == delay


@pytest.mark.parametrize("policy, kind, code, expected", [
    ("Always", REGULAR, 0, True), ("Always", REGULAR, 137, True),
    ("OnFailure", REGULAR, 0, False), ("OnFailure", REGULAR, 1, True),
    ("Never", REGULAR, 137, False),
    ("Never", INIT, 1, False), ("OnFailure", INIT, 1, True), ("Always", INIT, 0, False),
    ("Never", SIDECAR, 0, True), ("Never", PAUSE, 0, True),
], ids=lambda v: str(v))
def test_restart_policy(policy: str, kind: str, code: int, expected: bool) -> None:
    assert restarts(policy, kind, code) is expected


def record(name: str, kind: str, state: str = "waiting", exit_code: int | None = None,
           started: float | None = None) -> ContainerRecord:
    return ContainerRecord(name=name, kind=kind, cgroup="kubepods.slice/x", argv=("true",), oom_score_adj=0,
                           state=state, exit_code=exit_code, started_at=started)


def test_start_order() -> None:
    pause = record("POD", PAUSE, "running", started=1.0)
    init = record("init", INIT)
    sidecar = record("sidecar", SIDECAR)
    main = record("main", REGULAR)
    pod = [pause, init, sidecar, main]
    assert ready_to_start(pod, init) and not ready_to_start(pod, sidecar) and not ready_to_start(pod, main)
    init.state, init.exit_code = "terminated", 0
    assert ready_to_start(pod, sidecar) and not ready_to_start(pod, main)
    sidecar.started_at = 2.0
    assert ready_to_start(pod, main)


@pytest.mark.parametrize("states, phase", [
    ([("running", None)], "Running"),
    ([("terminated", 0), ("terminated", 0)], "Succeeded"),
    ([("terminated", 0), ("terminated", 1)], "Failed"),
    ([("waiting", None)], "Pending"),
    ([("terminated", 0), ("running", None)], "Running"),
], ids=["running", "succeeded", "failed", "pending", "one-done"])
def test_pod_phase(states: list[tuple[str, int | None]], phase: str) -> None:
    containers = [record(f"c{i}", REGULAR, state, code) for i, (state, code) in enumerate(states)]
    assert pod_phase(containers, "Pending") == phase


def _pod(cpu: str, memory: str, pod_cpu: str | None = None, own: bool = True) -> Pod:
    """Containers `none`, `cpu`, `mem`, `both` (which resources restart on resize), same resources each."""
    policies = {"none": {}, "cpu": {"cpu": "RestartContainer"}, "mem": {"memory": "RestartContainer"},
                "both": {"cpu": "RestartContainer", "memory": "RestartContainer"}}
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    spec: dict[str, object] = {"containers": [
        {"name": n, "image": "i", **({"resources": resources} if own else {}),
         "resizePolicy": [{"resourceName": k, "restartPolicy": v} for k, v in p.items()]}
        for n, p in policies.items()]}
    if pod_cpu is not None:
        spec["resources"] = {"requests": {"cpu": pod_cpu, "memory": "256Mi"},
                             "limits": {"cpu": pod_cpu, "memory": "256Mi"}}
    pod = object_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    assert isinstance(pod, Pod)
    return pod


@pytest.mark.parametrize(("before", "after", "restarted"), [
    # upstream e2e pod_resize.go expectRestart: RestartContainer and that resource's values changed.
    (_pod("20m", "35Mi"), _pod("25m", "35Mi"), ["cpu", "both"]),
    (_pod("20m", "35Mi"), _pod("20m", "40Mi"), ["mem", "both"]),
    (_pod("20m", "35Mi"), _pod("25m", "30Mi"), ["cpu", "mem", "both"]),
    (_pod("20m", "35Mi"), _pod("20m", "35Mi"), []),
    # pod_level_resources_resize.go: a pod-level change restarts only containers without values of their own.
    (_pod("20m", "35Mi", "100m"), _pod("20m", "35Mi", "120m"), []),
    (_pod("20m", "35Mi", "100m", own=False), _pod("20m", "35Mi", "120m", own=False), ["cpu", "both"]),
], ids=["cpu", "mem", "cpu-and-mem", "unchanged", "pod-level-own-values", "pod-level-only"])
def test_restarts_for_resize(before: Pod, after: Pod, restarted: list[str]) -> None:
    assert restarts_for_resize(before, after) == restarted
