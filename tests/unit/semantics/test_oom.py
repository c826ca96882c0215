"""oom_score_adj (seed requests-limits-qos oom table; pkg/kubelet/qos/policy.go)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.manifest import Pod
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.oom import oom_score_adj, oom_score_adj_after_resize, pause_oom_score_adj
from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.qos import pod_qos
from suites.toolkit.builders import GI, pod
from suites.toolkit.builders import container as ctr
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE_MEMORY

PROFILE = profile_for()


def adj(p: Pod, name: str, capacity: int = ARTICLE_NODE_MEMORY) -> int:
    p = with_api_defaults(p)
    container = next(c for c in p.all_containers if c.name == name)
    return int(oom_score_adj(p, container, pod_qos(p, PROFILE), capacity, PROFILE).value)


@pytest.mark.parametrize(
    ("request_", "expected"),
    [pytest.param("128Mi", 963, id="article-res-demo-128Mi"), pytest.param("64Mi", 982, id="article-eater-64Mi")],
)
def test_article_burstable_values(request_: str, expected: int) -> None:
    assert adj(pod(ctr("c", {"cpu": "50m", "memory": request_}, {"memory": "1Gi"})), "c") == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"containers": [ctr("c", None, {"cpu": "1", "memory": "1Gi"})]}, -997, id="guaranteed"),
        pytest.param({"containers": [ctr("c")]}, 1000, id="besteffort"),
        pytest.param({"containers": [ctr("c", {"memory": "4Gi"})]}, 3, id="clamped-up-to-3"),
        pytest.param({"containers": [ctr("c", {"cpu": "1"})]}, 999, id="zero-memory-request-999"),
        pytest.param({"containers": [ctr("c")], "priorityClassName": "system-node-critical"}, -997,
                     id="node-critical-besteffort"),
        pytest.param({"containers": [ctr("c")], "priorityClassName": "system-cluster-critical"}, 1000,
                     id="cluster-critical-is-not-node-critical"),
    ],
)
def test_classes_and_clamps(spec: dict[str, Any], expected: int) -> None:
    containers = spec.pop("containers")
    assert adj(pod(*containers, **spec), "c") == expected


def test_sidecar_never_above_least_protected_regular_container() -> None:
    # 8Gi node: app1 1Gi → 1000-125 = 875; app2 2Gi → 750; sidecar 0 → 1000 → capped at 875.
    p = pod(ctr("app1", {"memory": "1Gi"}), ctr("app2", {"memory": "2Gi"}),
            init=(ctr("side", {"cpu": "10m"}, restartPolicy="Always"),))
    assert [adj(p, n, 8 * GI) for n in ("app1", "app2", "side")] == [875, 750, 875]


def test_big_sidecar_keeps_its_own_score() -> None:
    p = pod(ctr("app", {"memory": "1Gi"}), init=(ctr("side", {"memory": "4Gi"}, restartPolicy="Always"),))
    assert adj(p, "side", 8 * GI) == 500


def test_pod_level_request_remainder_is_spread() -> None:
    # Pod request 4Gi, containers 1Gi + 1Gi → remainder 2Gi over 2 containers = 1Gi each:
    # 1000 - 1000*2Gi/8Gi = 750 (KEP-2837 "OOM score adjustment").
    p = pod(ctr("a", {"memory": "1Gi"}), ctr("b", {"memory": "1Gi"}), resources={"requests": {"memory": "4Gi"}})
    assert [adj(p, n, 8 * GI) for n in ("a", "b")] == [750, 750]


def test_pause() -> None:
    assert pause_oom_score_adj().value == "-998"


@pytest.mark.parametrize(("restarted", "expected"), [
    pytest.param(False, "963", id="running-keeps-its-start-value"),
    pytest.param(True, "925", id="restart-sets-the-resized-value"),
])
def test_oom_score_adj_after_an_in_place_resize(restarted: bool, expected: str) -> None:
    # 128Mi → 256Mi on the article's node: 1000 - 1000*134217728/3563171840 = 963 at start, 1000 - 75 = 925 resized.
    at_start = pod(ctr("c", {"cpu": "50m", "memory": "128Mi"}, {"memory": "1Gi"}))
    resized = pod(ctr("c", {"cpu": "50m", "memory": "256Mi"}, {"memory": "1Gi"}))
    start_value, resized_value = adj(at_start, "c"), adj(resized, "c")
    assert (start_value, resized_value) == (963, 925)
    after = oom_score_adj_after_resize(Expected(str(start_value), "start"), Expected(str(resized_value), "resized"),
                                       restarted)
    assert after.value == expected
    assert ("runc#4669" in after.rule) != restarted
