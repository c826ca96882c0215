"""Node-pressure eviction order: pods over their memory request first, the largest excess first; Failed, Evicted.

Source: requests-limits-qos article, "Eviction under node resource pressure" (the order, phase Failed with reason
Evicted, the MemoryPressure condition); the oracle's ranking (pkg/kubelet/eviction/helpers.go rankMemoryPressure).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY, Pod
from nodeconf.nodes.base import CgroupFiles
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.eviction import PodMemoryUsage, rank_for_memory_pressure
from nodeconf.semantics.expectation import Expected
from suites.toolkit.checks import check_admission, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog, pod, renamed, with_container
from suites.toolkit.pressure import eviction_order, watch_pods_hogs

pytestmark = [pytest.mark.requests_limits, pytest.mark.disruptive]

pytestmark.append(pytest.mark.runs_alone("node memory pressure and the eviction order of every pod on the node"))

ORDER = f"{ARTICLE}: usage above request first, by priority and by the size of the excess"
EVICTED = f"{ARTICLE}: an evicted pod moves to phase Failed with reason Evicted"
HOG_MIB = 48
# The high-priority hog holds more: a node ranking by usage alone would evict it first.
LARGER_HOG_MIB = 64
# A threshold no node meets: memory.available is below 99 % of capacity from the first check, so the node evicts
# pod after pod, one per pass, in its ranking order.
ALWAYS_PRESSURE = "99%"


def _working_set(files: CgroupFiles) -> int:
    """memory.current − inactive_file (the kubelet's working set)."""
    return files.number("memory.current") - files.keyed("memory.stat").get("inactive_file", 0)


def test_memory_pressure_evicts_in_the_articles_order(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """BestEffort (above its zero request) first, then Burstable above its request, Burstable within it last."""
    besteffort = with_container(pod("requests-limits/qos-classes.yaml", "qos-besteffort"), "app",
                                command=memhog(HOG_MIB))
    burstable = pod("requests-limits/qos-classes.yaml", "qos-burstable")
    over = with_container(renamed(burstable, "over-request"), "app", command=memhog(HOG_MIB),
                          requests={MEMORY: "16Mi"})
    within = with_container(renamed(burstable, "within-request"), "app", command=memhog(HOG_MIB),
                            requests={MEMORY: "128Mi"})
    _assert_eviction_order(deploy, oracle, kubelet, [within, over, besteffort],
                           ["qos-besteffort", "over-request", "within-request"], ORDER)


# upstream eviction_test.go PriorityMemoryEvictionOrdering: its high priority class's value.
HIGH_PRIORITY = 999_999_999
PRIORITY_ORDER = ("upstream eviction_test.go PriorityMemoryEvictionOrdering: the low-priority hog before the "
                  "high-priority one, the Guaranteed pod (within its request) spared while the hogs remain "
                  "(pkg/kubelet/eviction/helpers.go rankMemoryPressure: exceeds request, then priority, then usage)")


@pytest.mark.upstream_e2e(
    file="test/e2e_node/eviction_test.go",
    case="PriorityMemoryEvictionOrdering / when we run containers that should cause MemoryPressure / "
         "should eventually evict all of the correct pods")
def test_memory_pressure_spares_by_priority(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """Two BestEffort hogs, the high-priority one larger, and a Guaranteed pod within its request: the low-priority
    hog goes first though it holds less, then the high-priority one, the Guaranteed pod last (a threshold no node
    meets keeps the node evicting, where upstream's pressure ends before it)."""
    besteffort = pod("requests-limits/qos-classes.yaml", "qos-besteffort")
    low = with_container(renamed(besteffort, "memory-hog-pod"), "app", command=memhog(HOG_MIB))
    high = replace(with_container(renamed(besteffort, "high-priority-memory-hog-pod"), "app",
                                  command=memhog(LARGER_HOG_MIB)), priority_value=HIGH_PRIORITY)
    guaranteed = with_container(renamed(pod("requests-limits/qos-classes.yaml", "qos-guaranteed"), "guaranteed-pod"),
                                "app", command=memhog(HOG_MIB))
    _assert_eviction_order(deploy, oracle, kubelet, [guaranteed, high, low],
                           ["memory-hog-pod", "high-priority-memory-hog-pod", "guaranteed-pod"], PRIORITY_ORDER)


def _assert_eviction_order(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, workloads: list[Pod],
                           order: list[str], rule: str) -> None:
    """Deploy the hogs, let each hold at least HOG_MIB, then a threshold no node meets: the node evicts them one
    per pass in `order` (the rule's words) and in the oracle's ranking of the working sets read before; each pod
    ends Failed/Evicted, the node under MemoryPressure.

    Relies on the kernel charging each hog's touched anonymous pages to its cgroup (memory.current, the working
    set the ranking reads) and on the agent's ranking alone deciding the order: every pod exceeds or stays within
    its request by a margin of tens of MiB that no page cache or interpreter noise closes."""
    deployed = deploy_pods(deploy, oracle, kubelet, workloads)
    for h in deployed.handles:
        check_admission(h, deployed.expected(h.pod.name))
    watch_pods_hogs(kubelet.node, deployed.handles, ["app"], HOG_MIB)
    held = {h.pod.name: e for h, e in zip(deployed.handles, kubelet.node.evidence_of(deployed.handles,
                                                                                     ["memory.stat"]), strict=True)}
    usages = [PodMemoryUsage(p, {"app": _working_set(held[p.name].container("app").cgroup)}) for p in workloads]
    oracle_order = [u.pod.name for u in rank_for_memory_pressure(usages)]

    kubelet.use(replace(kubelet.config, eviction_hard={"memory.available": ALWAYS_PRESSURE}))
    evicted = eviction_order(deployed.handles, timeout=60)
    rows: list[ComparedValue] = [
        compare_value("", "", "(eviction)", "eviction order", Expected(", ".join(order), rule), ", ".join(evicted)),
        compare_value("", "", "(eviction)", "eviction order (oracle)", Expected(", ".join(oracle_order), rule),
                      ", ".join(evicted)),
        compare_value("", "", "(node)", "MemoryPressure condition", Expected("True", rule),
                      str(kubelet.node.conditions().memory_pressure)),
    ]
    for h in deployed.handles:
        status = h.status()
        rows.append(compare_value(h.pod.name, "", "(status)", "phase and reason", Expected("Failed/Evicted", EVICTED),
                                  f"{status.phase}/{status.reason}"))
    assert_matches("node under memory pressure", rows)

