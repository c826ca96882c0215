"""Lifecycle rules: restart policy per container kind, kubelet back-off, start order, pod phase."""

from __future__ import annotations

import pytest

from nodeconf.enforcer.lifecycle import Backoff, pod_phase, ready_to_start, restarts
from nodeconf.enforcer.records import INIT, PAUSE, REGULAR, SIDECAR, ContainerRecord


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
