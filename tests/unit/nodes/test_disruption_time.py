"""The eviction time a node reports: the kube driver's DisruptionTarget condition and the agent's record."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.nodes.enforced.pod import pod_status
from nodeconf.nodes.kube.pods import disruption_time


@pytest.mark.parametrize(("conditions", "expected"), [
    pytest.param([{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                   "lastTransitionTime": "2026-11-30T16:00:05Z"}], 1796054405.0, id="evicted-by-the-kubelet"),
    pytest.param([{"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-30T16:00:05Z"}], None,
                 id="no-disruption-condition"),
    pytest.param([{"type": "DisruptionTarget", "status": "False", "lastTransitionTime": "2026-11-30T16:00:05Z"}],
                 None, id="condition-false"),
    pytest.param([{"type": "DisruptionTarget", "status": "True", "lastTransitionTime": "yesterday"}], None,
                 id="unreadable-time"),
    pytest.param(None, None, id="no-conditions"),
])
def test_disruption_time_from_the_pod_conditions(conditions: list[dict[str, str]] | None,
                                                 expected: float | None) -> None:
    assert disruption_time({"status": {"conditions": conditions}}) == expected


def _agent_status(**extra: Any) -> Any:
    return {"phase": "Failed", "qosClass": "Burstable", "containers": [], "events": [], "reason": "Evicted",
            "message": "", "resize": {"status": "", "message": ""}, **extra}


def test_the_agents_eviction_time_reaches_the_pod_status() -> None:
    assert pod_status(_agent_status(disruptedAt=1795939205.25)).disrupted_at == 1795939205.25
    assert pod_status(_agent_status()).disrupted_at is None  # a state written before the field existed
