"""A table's pods in batches (suites/toolkit/batches.py) and several pods watched at once
(suites/toolkit/pressure.py), on the enforced driver with a temporary cgroup tree: what each costs in requests to
the node, and that every pod a batch started is gone when the next batch or the module ends (issue 31)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_nodes_enforced import _count_requests, local_settings

from nodeconf.enforcer.wire import Op
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.transport.local import LocalTransport
from nodeconf.semantics.expectation import QosClass
from suites.toolkit.batches import module_batches
from suites.toolkit.builders import container, pod_manifest, typed_pod
from suites.toolkit.checks import check_pod
from suites.toolkit.kubelet import Applied, Kubelet, Oracle
from suites.toolkit.pressure import watch_pods_hogs


@pytest.fixture
def local_node(tmp_path: Path) -> Iterator[EnforcedNode]:
    node = EnforcedNode(LocalTransport(), local_settings(tmp_path), spec="local").start()
    try:
        yield node
    finally:
        node.close()


def _pods(*names: str) -> list[Pod]:
    return [typed_pod(pod_manifest(container("c", requests={"cpu": "100m", "memory": "32Mi"}), name=n))
            for n in names]


def _live(node: EnforcedNode) -> set[str]:
    return {p["pod"]["metadata"]["name"] for p in node.client.call(Op.PODS)["pods"]}


def test_batches_deploy_once_per_key_and_delete_on_change_and_close(local_node: EnforcedNode,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    oracle = Oracle(local_node.facts(), "1.38")
    kubelet = Kubelet(local_node, "1.38", KubeletConfig(), Applied())
    with module_batches(local_node, oracle, kubelet) as batches:
        first = batches.batch("a", lambda k: k.use(k.base), lambda: _pods("a1", "a2"))
        assert _live(local_node) == {"a1", "a2"}
        sent = _count_requests(local_node, monkeypatch)
        assert batches.batch("a", lambda k: k.use(k.base), lambda: _pods("never")) is first
        assert sent == []  # the live batch, nothing sent
        handles = first.deployed.handles
        evidence = [first.evidence(h) for h in handles]
        assert sent == ["evidence_batch"]  # both pods settled in one read, then kept
        sent.clear()
        handle, expected = first.pod("a2")
        # The verdict is not this test's subject (the stand-in tree's pause oom_score_adj may differ here).
        with contextlib.suppress(AssertionError):
            check_pod(handle, expected, QosClass.BURSTABLE, settled=first.evidence)
        assert sent == []  # check_pod judged the batch's read
        assert evidence[1].status.qos_class == "Burstable"
        batches.batch("b", lambda k: k.use(k.base), lambda: _pods("b1"))
        assert _live(local_node) == {"b1"}
    assert _live(local_node) == set()


def test_a_batch_that_fails_half_way_leaves_nothing(local_node: EnforcedNode) -> None:
    """The second pod has the first one's name: the node refuses to run it; the first pod is deleted all the same."""
    oracle = Oracle(local_node.facts(), "1.38")
    kubelet = Kubelet(local_node, "1.38", KubeletConfig(), Applied())
    with module_batches(local_node, oracle, kubelet) as batches:
        with pytest.raises(NodeError, match="already exists"):
            batches.batch("a", lambda k: k.use(k.base), lambda: [*_pods("a1"), *_pods("a1")])
        assert _live(local_node) == set() and batches.live is None


def test_pods_watched_together_cost_one_request_per_poll(local_node: EnforcedNode,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    handles = [local_node.run(p) for p in _pods("w1", "w2", "w3")]
    for h in handles:
        h.wait_running()
    sent = _count_requests(local_node, monkeypatch)
    watched = watch_pods_hogs(local_node, handles, ["c"], 0)
    assert [w.evidence.status.container("c").running for w in watched] == [True, True, True]
    assert sent == ["evidence_batch"]
