"""expect() with a caller's AdmittedMemo gives the answer it gives without one, across the changes an enforcer makes
between calls (a pod added, resized or gone, a new config, facts or namespace objects, the static CPU manager), and
computes again only the pods that changed (issue 31)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.manifest import LimitRange, Pod, ResourceQuota
from nodeconf.manifest_reader import object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import expect as expect_module
from nodeconf.semantics.expect import AdmittedMemo, expect
from nodeconf.semantics.profile import profile_for

NODE = NodeFacts(memory_capacity=4 << 30, swap_capacity=1 << 30, cpu_capacity_milli=4000,
                 kernel_version="6.1.0-57-amd64")


def _pod(name: str, resources: dict[str, Any], namespace: str = "default") -> Pod:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [{"name": "app", "image": "busybox:1.37", "resources": resources}]}}
    pod = object_from_dict(doc, source="test")
    assert isinstance(pod, Pod)
    return pod


def _config(**fields: Any) -> KubeletConfig:
    return kubelet_config_from_dict({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                                     **fields}, source="test")


LIMITS_ONLY = _pod("limits-only", {"limits": {"cpu": "500m", "memory": "128Mi"}})  # admission defaults its requests
BURSTABLE = _pod("burstable", {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}})
BESTEFFORT = _pod("besteffort", {}, namespace="other")
RESIZED = dataclasses.replace(BURSTABLE, containers=_pod(
    "burstable", {"requests": {"cpu": "200m", "memory": "96Mi"}, "limits": {"memory": "256Mi"}}).containers)
WHOLE_CPU = _pod("whole-cpu", {"limits": {"cpu": "1", "memory": "64Mi"}})
LIMIT_RANGE = object_from_dict({"apiVersion": "v1", "kind": "LimitRange",
                                "metadata": {"name": "lr", "namespace": "other"},
                                "spec": {"limits": [{"type": "Container", "default": {"memory": "32Mi"}}]}}, source="t")
assert isinstance(LIMIT_RANGE, LimitRange)
LIMITED_SWAP = {"failSwapOn": False, "memorySwap": {"swapBehavior": "LimitedSwap"}}
STATIC = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}
# Each call as an enforcer makes it: (pods, config fields, node, namespace objects, pods computed anew with a memo).
CALLS: list[tuple[Sequence[Pod], dict[str, Any], NodeFacts, Sequence[LimitRange | ResourceQuota], int]] = [
    ([LIMITS_ONLY, BURSTABLE], {}, NODE, [], 2),
    ([LIMITS_ONLY, BURSTABLE], {}, NODE, [], 0),
    ([LIMITS_ONLY, BURSTABLE, BESTEFFORT], {}, NODE, [], 1),
    ([LIMITS_ONLY, RESIZED, BESTEFFORT], {}, NODE, [], 1),
    ([LIMITS_ONLY, RESIZED, BESTEFFORT], {}, NODE, [LIMIT_RANGE], 1),  # the range gives BESTEFFORT a limit
    ([LIMITS_ONLY, RESIZED, BESTEFFORT], LIMITED_SWAP, NODE, [LIMIT_RANGE], 3),  # RESIZED's swap share
    ([LIMITS_ONLY, RESIZED, BESTEFFORT], LIMITED_SWAP, dataclasses.replace(NODE, memory_capacity=8 << 30),
     [LIMIT_RANGE], 3),  # RESIZED's swap share and oom_score_adj
    ([LIMITS_ONLY, WHOLE_CPU], STATIC, NODE, [], 2),
    ([LIMITS_ONLY, WHOLE_CPU], STATIC, NODE, [], 2),  # the static policy's placement depends on every pod
    ([LIMITS_ONLY], {}, NODE, [], 1),
    ([], {}, NODE, [], 0),
]


def test_the_memo_changes_no_answer_and_computes_only_changed_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[str] = []
    admitted = expect_module._admitted

    def counted(pod: Pod, *args: Any) -> Any:
        computed.append(pod.name)
        return admitted(pod, *args)

    monkeypatch.setattr(expect_module, "_admitted", counted)
    memo = AdmittedMemo()
    for step, (pods, fields, node, objects, anew) in enumerate(CALLS):
        config = _config(**fields)
        profile = profile_for("1.36", config)
        without = expect(pods, node, config, profile, objects)
        computed.clear()
        with_memo = expect(pods, node, config, profile, objects, memo=memo)
        assert with_memo == without, f"call {step}"
        assert len(computed) == anew, f"call {step}: computed {computed}"


def test_a_stale_answer_would_be_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls above tell a memo that keeps answers too long from the oracle: each change alters an answer."""
    monkeypatch.setattr(expect_module, "_same", lambda *args: True)
    monkeypatch.setattr(AdmittedMemo, "start", lambda self, *args: setattr(self, "used", {}))
    memo = AdmittedMemo()
    stale = []
    for step, (pods, fields, node, objects, _) in enumerate(CALLS):
        config = _config(**fields)
        profile = profile_for("1.36", config)
        if expect(pods, node, config, profile, objects, memo=memo) != expect(pods, node, config, profile, objects):
            stale.append(step)
    assert stale == [4, 5, 6], "the range, the swap mode and the node's memory each change an admitted pod"
