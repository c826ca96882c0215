"""Several pods watched at once (suites/toolkit/pressure.py watch_pods_hogs) on the enforced driver with a
temporary cgroup tree: one request per poll reads them all (issue 31)."""

from __future__ import annotations

import pytest

from nodeconf.manifest import Pod
from nodeconf.nodes.enforced.node import EnforcedNode
from suites.toolkit.builders import container, pod_manifest, typed_pod
from suites.toolkit.pressure import watch_pods_hogs
from tests.unit.nodes.enforced.local import count_requests, local_node

__all__ = ["local_node"]  # the enforced driver on this host (tests.unit.nodes.enforced.local)


def _pods(*names: str) -> list[Pod]:
    return [typed_pod(pod_manifest(container("c", requests={"cpu": "100m", "memory": "32Mi"}), name=n))
            for n in names]


def test_pods_watched_together_cost_one_request_per_poll(local_node: EnforcedNode,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    handles = [local_node.run(p) for p in _pods("w1", "w2", "w3")]
    for h in handles:
        h.wait_running()
    sent = count_requests(local_node, monkeypatch)
    watched = watch_pods_hogs(local_node, handles, ["c"], 0)
    assert [w.evidence.status.container("c").running for w in watched] == [True, True, True]
    assert sent == ["evidence_batch"]
