"""Node-pressure eviction order: pods over their memory request first, the largest excess first; Failed, Evicted.

Source: requests-limits-qos article, "Eviction under node resource pressure" (the order, phase Failed with reason
Evicted, the MemoryPressure condition); the oracle's ranking (pkg/kubelet/eviction/helpers.go rankMemoryPressure).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY
from nodeconf.nodes.base import CgroupFiles, PodHandle
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.eviction import PodMemoryUsage, rank_for_memory_pressure
from nodeconf.semantics.expectation import Expected
from suites.toolkit.checks import check_admission, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog, pod, renamed, with_container
from suites.toolkit.pressure import watch_pods_hogs

pytestmark = [pytest.mark.requests_limits, pytest.mark.disruptive]

pytestmark.append(pytest.mark.runs_alone("node memory pressure and the eviction order of every pod on the node"))

ORDER = f"{ARTICLE}: usage above request first, by priority and by the size of the excess"
EVICTED = f"{ARTICLE}: an evicted pod moves to phase Failed with reason Evicted"
HOG_MIB = 48
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
    workloads = [within, over, besteffort]
    deployed = deploy_pods(deploy, oracle, kubelet, workloads)
    for h in deployed.handles:
        check_admission(h, deployed.expected(h.pod.name))
    watch_pods_hogs(kubelet.node, deployed.handles, ["app"], HOG_MIB)
    held = {h.pod.name: e for h, e in zip(deployed.handles, kubelet.node.evidence_of(deployed.handles,
                                                                                     ["memory.stat"]), strict=True)}
    usages = [PodMemoryUsage(p, {"app": _working_set(held[p.name].container("app").cgroup)}) for p in workloads]
    oracle_order = [u.pod.name for u in rank_for_memory_pressure(usages)]

    kubelet.use(replace(kubelet.config, eviction_hard={"memory.available": ALWAYS_PRESSURE}))
    order = _eviction_order(deployed.handles, timeout=60)
    rows: list[ComparedValue] = [
        compare_value("", "", "(eviction)", "eviction order", Expected(
            "qos-besteffort, over-request, within-request", ORDER), ", ".join(order)),
        compare_value("", "", "(eviction)", "eviction order (oracle)", Expected(", ".join(oracle_order), ORDER),
                      ", ".join(order)),
        compare_value("", "", "(node)", "MemoryPressure condition", Expected("True", ORDER),
                      str(kubelet.node.conditions().memory_pressure)),
    ]
    for h in deployed.handles:
        status = h.status()
        rows.append(compare_value(h.pod.name, "", "(status)", "phase and reason", Expected("Failed/Evicted", EVICTED),
                                  f"{status.phase}/{status.reason}"))
    assert_matches("node under memory pressure", rows)


def _eviction_order(handles: tuple[PodHandle, ...], timeout: float) -> list[str]:
    """Pod names in the order the node evicted them, by each pod's disruption time (the kubelet's DisruptionTarget
    condition; the agent's eviction clock), never by when a poll happened to see them: two evictions between two
    polls stay in order."""
    statuses = {h.pod.name: h.wait_for(lambda s: s.reason == "Evicted", timeout=timeout, what="evicted")
                for h in handles}
    missing = [name for name, status in statuses.items() if status.disrupted_at is None]
    assert not missing, f"the node evicted {', '.join(missing)} without recording when (DisruptionTarget)"
    return sorted(statuses, key=lambda name: statuses[name].disrupted_at or 0.0)
