"""Pod-level huge pages (KEP-2837 "Hugepages", kubernetes#130577): the hugepages entries of two upstream tables, each
pod's QoS class, cpu and memory values and the hugetlb limits of its pod and containers against the oracle.

Sources: upstream test/e2e/common/node/pod_level_resources.go podLevelResourcesTests (read at cb3bc977: the seven
hugepages entries of its fourteen; the other seven are in test_pod_level_resources.py; pods c1 + c2, its QoS class
per entry) and test/e2e_node/hugepages_test.go "Pod Level HugePages Resources" (read at 019d0547: nine contexts, one
container, pod-level cpu 10m and memory 100Mi as limits or requests only, hugepages 6Mi at pod level and/or 4Mi /
1Gi in the container). Each entry's pod and the pages upstream pre-allocates for it are upstream's; every cgroup value
comes from the oracle. Upstream verifies the pod cgroup's hugetlb.<size>.max (and .rsvd.max): the pod-level
hugepages, or the containers' where the pod names none. nodeconf also compares the containers' hugetlb limits (the
kubelet sends a container's own limit or 0; hugepages_test.go's note that pod-level values reach the containers that
set none, kubernetes#132543, is accepted: node_limits.container_hugetlb). Not mirrored: the hugepages emptyDir mount
upstream's pods carry (nodeconf's pods mount no volume).

Guarantee relied on: the kubelet writes the pod cgroup's hugetlb limits from the pod's effective hugepages requests
(pod_container_manager EnsureExists → ResourceConfigForPod HugePageLimits → cgroup_manager maybeSetHugetlb, every
size the kernel offers, 0 for a size not requested), and the kernel keeps a written hugetlb.<size>.max until it is
written again (cgroup-v2.rst HugeTLB). An entry runs where the node reserves the pages upstream pre-allocates for it
(a measured fact: the reference VM reserves eight 2 MiB pages and no 1 GiB page, so the entries with 1Gi are not
applicable there; upstream reserves pages and restarts the kubelet, which nodeconf never does). Entries run in
batches of pods deployed together, as many as the node's pool admits at once (the table is ordered so that eight
2 MiB pages take the seven 2 MiB entries in three deploys).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.nodes.base import CgroupFiles, Node
from nodeconf.quantity import Quantity
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.hugepages import hugepage_resource
from suites.toolkit.checks import Deployed, check_pod
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.upstream.shared import QUOTA_START_S, Res, container, module_kubelet, shared_deployment

PLR = "test/e2e/common/node/pod_level_resources.go"
HP = "test/e2e_node/hugepages_test.go"
pytestmark = [pytest.mark.runs_alone("the node's huge page pool"), pytest.mark.min_profile("1.36")]

MI2, GI1 = 2 * 2**20, 2**30
G, B = QosClass.GUARANTEED, QosClass.BURSTABLE
# pod_level_resources.go's pods
GUARANTEED_100 = Res("100m", "100m", "100Mi", "100Mi")
BURSTABLE_POD = Res("100m", "100m", "50Mi", "100Mi")
C1 = Res("20m", "50m")
# hugepages_test.go's pods: pod-level and container limits cpu 10m, memory 100Mi; or pod-level requests only.
HP_LIMITS = Res(cpu_lim="10m", mem_lim="100Mi")
HP_REQUESTS = Res(cpu_req="10m", mem_req="100Mi")


@dataclass(frozen=True)
class Entry:
    """One upstream entry: pod-level resources and the first container's, each with hugepages limits by page size
    in bytes, whether a second container without resources runs beside it (pod_level_resources.go's c2), the QoS
    class upstream expects (None where it asserts none), the pages upstream pre-allocates (size → count), and the
    upstream file and case it mirrors."""

    pod: Res | None
    pod_huge: Mapping[int, str]
    c1: Res | None
    c1_huge: Mapping[int, str]
    c2: bool
    qos: QosClass | None
    pages: Mapping[int, int]
    file: str
    case: str


def _plr(text: str, pod: Res, pod_huge: Mapping[int, str], c1: Res | None, c1_huge: Mapping[int, str],
         qos: QosClass, pages: Mapping[int, int]) -> Entry:
    return Entry(pod, pod_huge, c1, c1_huge, True, qos, pages, PLR, f"Pod Level Resources / {text}")


def _hp(context: str, pod: Res, pod_huge: Mapping[int, str], c1_huge: Mapping[int, str],
        pages: Mapping[int, int]) -> Entry:
    return Entry(pod, pod_huge, HP_LIMITS, c1_huge, False, None, pages, HP,
                 f"Pod Level HugePages Resources / pod level resources / {context} / should set correct hugetlb "
                 "mount and limit under the container cgroup")


TWO_MI, BOTH = {MI2: 5}, {MI2: 5, GI1: 1}
# Entry id → entry; 2 MiB-only entries first, paired so that eight pages hold each batch (10Mi + 6Mi, 4Mi × 3).
ENTRIES = {
    "plr-guaranteed-2Mi": _plr("Guaranteed QoS pod hugepages, no container resources, single page size",
                               GUARANTEED_100, {MI2: "10Mi"}, None, {}, G, TWO_MI),
    "hp-pod-2Mi": _hp("pod hugepages, no container hugepages, single page size",
                      HP_LIMITS, {MI2: "6Mi"}, {}, TWO_MI),
    "plr-burstable-2Mi": _plr("Burstable QoS pod hugepages, container resources, single page size",
                              BURSTABLE_POD, {MI2: "10Mi"}, C1, {MI2: "4Mi"}, B, TWO_MI),
    "hp-pod-and-container-2Mi": _hp("pod hugepages, container hugepages, single page size",
                                    HP_LIMITS, {MI2: "6Mi"}, {MI2: "4Mi"}, TWO_MI),
    "plr-burstable-2Mi-containers-only": _plr(
        "Burstable QoS pod hugepages, container resources, single page size, pod level does not specify hugepages",
        BURSTABLE_POD, {}, C1, {MI2: "4Mi"}, B, {MI2: 2}),
    "hp-container-2Mi": _hp("no pod hugepages, container hugepages, single page size",
                            HP_LIMITS, {}, {MI2: "4Mi"}, TWO_MI),
    "hp-requests-container-2Mi": _hp("only pod level requests no pod hugepages, container hugepages, single page size",
                                     HP_REQUESTS, {}, {MI2: "4Mi"}, TWO_MI),
    "plr-guaranteed-2Mi-1Gi": _plr("Guaranteed QoS pod hugepages, no container resources, multiple page size",
                                   GUARANTEED_100, {MI2: "10Mi", GI1: "1Gi"}, None, {}, G, BOTH),
    "plr-burstable-2Mi-1Gi": _plr("Burstable QoS pod hugepages, container resources, multiple page size",
                                  BURSTABLE_POD, {MI2: "10Mi", GI1: "1Gi"}, C1, {MI2: "4Mi", GI1: "1Gi"}, B, BOTH),
    "plr-burstable-2Mi-1Gi-containers-only": _plr(
        "Burstable QoS pod hugepages, container resources, multiple page size, pod level does not specify hugepages",
        BURSTABLE_POD, {}, C1, {MI2: "4Mi", GI1: "1Gi"}, B, {MI2: 2, GI1: 1}),
    "plr-burstable-2Mi-pod-1Gi-container": _plr(
        "Burstable QoS pod hugepages, container resources, different page size between pod and container level",
        BURSTABLE_POD, {MI2: "10Mi"}, C1, {GI1: "1Gi"}, B, BOTH),
    "hp-pod-2Mi-1Gi": _hp("pod hugepages, no container hugepages, multiple page size",
                          HP_LIMITS, {MI2: "6Mi", GI1: "1Gi"}, {}, BOTH),
    "hp-pod-and-container-2Mi-1Gi": _hp("pod hugepages, container hugepages, multiple page size",
                                        HP_LIMITS, {MI2: "6Mi", GI1: "1Gi"}, {MI2: "4Mi", GI1: "1Gi"}, BOTH),
    "hp-container-2Mi-1Gi": _hp("no pod hugepages, container hugepages, multiple page size",
                                HP_LIMITS, {}, {MI2: "4Mi", GI1: "1Gi"}, BOTH),
    "hp-requests-container-2Mi-1Gi": _hp(
        "only pod level requests no pod hugepages, container hugepages, multiple page size",
        HP_REQUESTS, {}, {MI2: "4Mi", GI1: "1Gi"}, BOTH),
    "hp-pod-2Mi-container-1Gi": _hp("pod hugepages, container hugepages, different page size between pod and "
                                    "container level", HP_LIMITS, {MI2: "6Mi"}, {GI1: "1Gi"}, BOTH),
    # hugepages_test.go "HugePages" (no pod-level resources): one container with both sizes.
    "hp-container-only-2Mi-1Gi": Entry(
        None, {}, HP_LIMITS, {MI2: "6Mi", GI1: "1Gi"}, False, None, BOTH, HP,
        "HugePages / start the pod / with the resources requests that contain multiple hugepages resources  / should "
        "set correct hugetlb mount and limit under the container cgroup"),
}


def _with_huge(res: Res | None, huge: Mapping[int, str]) -> dict[str, Any]:
    """The resources document with hugepages-<size> limits added (requests default to them)."""
    doc: dict[str, Any] = res.doc() if res is not None else {}
    if huge:
        doc.setdefault("limits", {}).update({hugepage_resource(size): amount for size, amount in huge.items()})
    return doc


def entry_pod(name: str, entry: Entry) -> Pod:
    """Upstream's pod of the entry: c1 with its resources and hugepages, c2 without (pod_level_resources.go only),
    and its pod-level resources, if any."""
    c1 = container("c1")
    if resources := _with_huge(entry.c1, entry.c1_huge):
        c1["resources"] = resources
    spec: dict[str, Any] = {"containers": [c1, *([container("c2")] if entry.c2 else [])]}
    if pod_level := _with_huge(entry.pod, entry.pod_huge):
        spec["resources"] = pod_level
    obj = object_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
                           source="suites/upstream")
    assert isinstance(obj, Pod)
    return obj


def _need(entry: Entry) -> dict[int, int]:
    """The bytes of each size the entry's pod takes from the pool: its pod-level hugepages, else its container's."""
    return {size: Quantity.parse(entry.pod_huge.get(size) or entry.c1_huge[size]).value()
            for size in {*entry.pod_huge, *entry.c1_huge}}


def pod_name(ident: str) -> str:
    return ident.lower()


def not_applicable(pools: Mapping[int, int], controllers: Sequence[str], entry: Entry) -> str:
    """Why the node cannot run the entry ("" when it can): no hugetlb controller, or fewer reserved pages of a size
    than upstream pre-allocates for it (measured: /sys/kernel/mm/hugepages nr_hugepages)."""
    if "hugetlb" not in controllers:
        return "the node's cgroup v2 root offers no hugetlb controller: the kubelet writes no hugetlb limit"
    short = [f"{count} × {hugepage_resource(size).removeprefix('hugepages-')} (the node reserves "
             f"{pools.get(size, 0) // size})" for size, count in entry.pages.items()
             if pools.get(size, 0) < count * size]
    return (f"upstream pre-allocates {', '.join(short)} for this entry; nodeconf reserves huge pages only on the VM "
            "it builds (2 MiB pages only)") if short else ""


def batches(pools: Mapping[int, int], entries: Sequence[str]) -> dict[str, int]:
    """Entry id → batch number: consecutive entries share a batch while their pages fit the node's pools together."""
    out: dict[str, int] = {}
    batch, used = 0, dict.fromkeys(pools, 0)
    for ident in entries:
        need = _need(ENTRIES[ident])
        if out and any(used.get(size, 0) + n > pools.get(size, 0) for size, n in need.items()):
            batch, used = batch + 1, dict.fromkeys(pools, 0)
        for size, n in need.items():
            used[size] = used.get(size, 0) + n
        out[ident] = batch
    return out


class Batches:
    """The entries' pods, one batch deployed at a time: asking for an entry of another batch deletes the current
    batch's pods first (the node's pool is what limits a batch)."""

    def __init__(self, deploy: Any, batch_of: Mapping[str, int]) -> None:
        self._deploy = deploy
        self._batch_of = batch_of
        self._current: tuple[int, ExitStack, Deployed] | None = None

    def deployed(self, ident: str) -> Deployed:
        batch = self._batch_of[ident]
        if self._current is None or self._current[0] != batch:
            self.close()
            stack = ExitStack()
            pods = [entry_pod(pod_name(i), ENTRIES[i]) for i, b in self._batch_of.items() if b == batch]
            self._current = (batch, stack, stack.enter_context(self._deploy(pods)))
        return self._current[2]

    def close(self) -> None:
        if self._current is not None:
            current, self._current = self._current, None
            current[1].close()


@pytest.fixture(scope="module")
def entry_batches(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Batches]:
    """The applicable entries in batches, each deployed when its first check runs; every pod deleted at the end."""
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    pools = dict(oracle.facts.hugepages)
    runnable = [i for i in ENTRIES if not not_applicable(pools, oracle.facts.cgroup_controllers, ENTRIES[i])]
    current = Batches(lambda pods: shared_deployment(node, oracle, kubelet, pods), batches(pools, runnable))
    try:
        yield current
    finally:
        current.close()


def _hugetlb(cgroup: CgroupFiles, want: Mapping[str, Any], pod: str, ctr: str) -> list[ComparedValue]:
    return [compare_value(pod, ctr, cgroup.path, name, expected, cgroup.get(name))
            for name, expected in want.items() if name.startswith("hugetlb.")]


@pytest.mark.parametrize("ident", [
    pytest.param(ident, id=ident, marks=pytest.mark.upstream_e2e(file=entry.file, case=entry.case))
    for ident, entry in ENTRIES.items()])
def test_pod_level_hugepages_entry(entry_batches: Batches, oracle: Oracle, ident: str) -> None:
    """The entry's pod runs (upstream CreateSync) in the table's QoS class with every cpu and memory value the
    oracle's (pod_level_resources.go "verifying pod cgroup values" and "verifying containers cgroup limits"), and
    the pod's and containers' hugetlb.<size>.max and .rsvd.max are the oracle's: the pod-level hugepages where the
    pod names them, else the containers' aggregate; 0 for a size neither names (hugepages_test.go
    makePodToVerifyHugePages)."""
    entry = ENTRIES[ident]
    reason = not_applicable(dict(oracle.facts.hugepages), oracle.facts.cgroup_controllers, entry)
    if reason:
        pytest.skip(reason)
    deployed = entry_batches.deployed(ident)
    handle, expected = deployed.handle(pod_name(ident)), deployed.expected(pod_name(ident))
    assert handle.admitted and expected.admitted, (
        f"pod {expected.pod.ref}: upstream runs it; node admitted={handle.admitted} errors={list(handle.errors)}; "
        f"oracle admitted={expected.admitted} errors={list(expected.errors)}")
    check_pod(handle, expected, entry.qos, start_timeout=QUOTA_START_S)
    assert expected.cgroup is not None
    limits = deployed.expectation.node_limits
    paths = (expected.cgroup.path, *(c.cgroup.path for c in expected.containers))
    evidence = handle.evidence(tuple({name for path in paths for name in limits[path] if name.startswith("hugetlb.")}))
    rows = _hugetlb(evidence.pod_cgroup, limits[expected.cgroup.path], expected.pod.name, "")
    for c in expected.containers:
        rows += _hugetlb(evidence.container(c.name).cgroup, limits[c.cgroup.path], expected.pod.name, c.name)
    assert_matches(f"pod {expected.pod.ref} hugetlb limits", rows)
