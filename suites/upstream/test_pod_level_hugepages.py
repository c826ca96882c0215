"""Pod-level huge pages (KEP-2837 "Hugepages", kubernetes#130577): the seven hugepages entries of the current
pod-level resources table, each checked in upstream's steps (QoS class, pod cgroup values, container limits).

Source: upstream test/e2e/common/node/pod_level_resources.go podLevelResourcesTests (read at cb3bc977: its table has
fourteen entries, the seven without huge pages are in test_pod_level_resources.py). Each entry's pod, QoS class and
huge page pre-allocation (its `hugepages` map) are upstream's; every cgroup value comes from the oracle. Upstream
verifies the pod cgroup's hugetlb.<size>.max and .rsvd.max (the pod-level hugepages, or the containers' where the
pod names none); nodeconf also compares the containers' hugetlb limits, where the kubelet sends a container's own
limit or 0 and kubernetes#132543's propagation of the pod's limit is accepted (node_limits.container_hugetlb).

Guarantee relied on: the kubelet writes the pod cgroup's hugetlb limits from the pod's effective hugepages requests
(pod_container_manager EnsureExists → ResourceConfigForPod HugePageLimits → cgroup_manager maybeSetHugetlb, every
size the kernel offers, 0 for a size not requested), and the kernel keeps a written hugetlb.<size>.max until it is
written again (cgroup-v2.rst HugeTLB). An entry runs where the node reserves the pages upstream pre-allocates for it
(a measured fact: the reference VM reserves eight 2 MiB pages and no 1 GiB page, so the four entries with 1Gi are
not applicable there); upstream reserves them and restarts the kubelet, which nodeconf never does on a node it did
not build.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from fixtures.node import Deploy
from nodeconf.manifest import Pod, object_from_dict
from nodeconf.nodes.base import CgroupFiles
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.hugepages import hugepage_resource
from suites.toolkit.checks import Deployed, check_pod, deploy_pods
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.upstream.shared import Res, container

FILE = "test/e2e/common/node/pod_level_resources.go"
pytestmark = [pytest.mark.runs_alone("the node's huge page pool"), pytest.mark.min_profile("1.36")]

MI2, GI1 = 2 * 2**20, 2**30
G, B = QosClass.GUARANTEED, QosClass.BURSTABLE
GUARANTEED_100 = Res("100m", "100m", "100Mi", "100Mi")
BURSTABLE_POD = Res("100m", "100m", "50Mi", "100Mi")
C1 = Res("20m", "50m")


@dataclass(frozen=True)
class Entry:
    """One hugepages entry: pod-level resources and c1's (c2 has none), each with hugepages limits by page size in
    bytes; the QoS class upstream expects; the pages upstream pre-allocates (page size → count)."""

    pod: Res
    pod_huge: Mapping[int, str]
    c1: Res | None
    c1_huge: Mapping[int, str]
    qos: QosClass
    pages: Mapping[int, int] = field(default_factory=dict)


# upstream's entries, in its order: its It text → the entry.
ENTRIES = {
    "Guaranteed QoS pod hugepages, no container resources, single page size":
        Entry(GUARANTEED_100, {MI2: "10Mi"}, None, {}, G, {MI2: 5}),
    "Burstable QoS pod hugepages, container resources, single page size":
        Entry(BURSTABLE_POD, {MI2: "10Mi"}, C1, {MI2: "4Mi"}, B, {MI2: 5}),
    "Burstable QoS pod hugepages, container resources, single page size, pod level does not specify hugepages":
        Entry(BURSTABLE_POD, {}, C1, {MI2: "4Mi"}, B, {MI2: 2}),
    "Guaranteed QoS pod hugepages, no container resources, multiple page size":
        Entry(GUARANTEED_100, {MI2: "10Mi", GI1: "1Gi"}, None, {}, G, {MI2: 5, GI1: 1}),
    "Burstable QoS pod hugepages, container resources, multiple page size":
        Entry(BURSTABLE_POD, {MI2: "10Mi", GI1: "1Gi"}, C1, {MI2: "4Mi", GI1: "1Gi"}, B, {MI2: 5, GI1: 1}),
    "Burstable QoS pod hugepages, container resources, multiple page size, pod level does not specify hugepages":
        Entry(BURSTABLE_POD, {}, C1, {MI2: "4Mi", GI1: "1Gi"}, B, {MI2: 2, GI1: 1}),
    "Burstable QoS pod hugepages, container resources, different page size between pod and container level":
        Entry(BURSTABLE_POD, {MI2: "10Mi"}, C1, {GI1: "1Gi"}, B, {MI2: 5, GI1: 1}),
}
IDS = ["guaranteed-2Mi", "burstable-2Mi", "burstable-2Mi-containers-only", "guaranteed-2Mi-1Gi",
       "burstable-2Mi-1Gi", "burstable-2Mi-1Gi-containers-only", "burstable-2Mi-pod-1Gi-container"]


def _with_huge(doc: dict[str, Any], huge: Mapping[int, str]) -> dict[str, Any]:
    """The resources document with hugepages-<size> limits added (requests default to them)."""
    limits = doc.setdefault("limits", {})
    limits.update({hugepage_resource(size): amount for size, amount in huge.items()})
    return doc


def entry_pod(name: str, entry: Entry) -> Pod:
    """Upstream's pod of the entry: c1 (with its resources and hugepages), c2 (none), and pod-level resources."""
    c1 = container("c1", entry.c1)
    if entry.c1_huge:
        c1["resources"] = _with_huge(c1.get("resources", {}), entry.c1_huge)
    spec = {"containers": [c1, container("c2")], "resources": _with_huge(entry.pod.doc(), entry.pod_huge)}
    obj = object_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
                           source="suites/upstream")
    assert isinstance(obj, Pod)
    return obj


def _not_applicable(oracle: Oracle, entry: Entry) -> str:
    """Why the node cannot run the entry ("" when it can): it reserves fewer pages of a size than upstream
    pre-allocates for it (measured: /sys/kernel/mm/hugepages nr_hugepages), or has no hugetlb controller."""
    if "hugetlb" not in oracle.facts.cgroup_controllers:
        return "the node's cgroup v2 root offers no hugetlb controller: the kubelet writes no hugetlb limit"
    pools = dict(oracle.facts.hugepages)
    short = [f"{count} × {hugepage_resource(size).removeprefix('hugepages-')} (reserved: "
             f"{pools.get(size, 0) // size} pages)" for size, count in entry.pages.items()
             if pools.get(size, 0) < count * size]
    return (f"upstream pre-allocates {', '.join(short)} for this entry; nodeconf reserves huge pages only on the VM "
            "it builds (2 MiB pages only)") if short else ""


def _hugetlb(cgroup: CgroupFiles, want: Mapping[str, Any], pod: str, ctr: str) -> list[Any]:
    return [compare_value(pod, ctr, cgroup.path, name, expected, cgroup.get(name))
            for name, expected in want.items() if name.startswith("hugetlb.")]


@pytest.mark.parametrize("case", [
    pytest.param(text, id=ident, marks=pytest.mark.upstream_e2e(file=FILE, case=f"Pod Level Resources / {text}"))
    for text, ident in zip(ENTRIES, IDS, strict=True)])
def test_pod_level_hugepages_entry(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, case: str) -> None:
    """The entry's pod runs (upstream CreateSync) in the table's QoS class with every cpu and memory value the
    oracle's (upstream "verifying pod cgroup values" and "verifying containers cgroup limits"), and the pod's and
    containers' hugetlb.<size>.max and .rsvd.max are the oracle's: the pod-level hugepages where the pod names them,
    else the containers' aggregate; 0 for a size neither names."""
    entry = ENTRIES[case]
    reason = _not_applicable(oracle, entry)
    if reason:
        pytest.skip(reason)
    deployed: Deployed = deploy_pods(deploy, oracle, kubelet, [entry_pod("plr-huge", entry)])
    handle, expected = deployed.handle("plr-huge"), deployed.expected("plr-huge")
    assert handle.admitted and expected.admitted, (
        f"pod {expected.pod.ref} ({case}): upstream runs it; node admitted={handle.admitted} "
        f"errors={list(handle.errors)}; oracle admitted={expected.admitted} errors={list(expected.errors)}")
    check_pod(handle, expected, entry.qos)
    assert expected.cgroup is not None
    limits = deployed.expectation.node_limits
    names = tuple({name for c in (expected.cgroup.path, *(c.cgroup.path for c in expected.containers))
                   for name in limits[c] if name.startswith("hugetlb.")})
    evidence = handle.evidence(names)
    rows = _hugetlb(evidence.pod_cgroup, limits[expected.cgroup.path], expected.pod.name, "")
    for c in expected.containers:
        rows += _hugetlb(evidence.container(c.name).cgroup, limits[c.cgroup.path], expected.pod.name, c.name)
    assert_matches(f"pod {expected.pod.ref} ({case}) hugetlb limits", rows)
