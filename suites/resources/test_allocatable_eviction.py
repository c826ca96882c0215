"""Node-pressure eviction on allocatableMemory.available: with nearly all the node's memory reserved, a memory hog
puts the pods (kubepods) under pressure while the node itself has memory to spare; the hog is evicted, the innocent
pod stays, and the pressure ends.

Source: upstream test/e2e_node/eviction_test.go MemoryAllocatableEviction (kubeReserved = capacity − 300Mi, `pods`
enforced, the node e2e's evictionHard memory.available 250Mi, so allocatable is 50Mi; a BestEffort memory hog and an
innocent pod with a 50Mi request and limit; runEvictionTest: MemoryPressure, the hog Failed with reason Evicted, the
innocent pod never, the condition gone afterwards; verifyEvictionEvents: one Evicted event naming the starved
resource memory and the hog's container as the one above its request); the oracle's rule
(pkg/kubelet/eviction/helpers.go addAllocatableThresholds, makeSignalObservations, rankMemoryPressure,
evictionMessage; semantics/eviction.py).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from fractions import Fraction

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY
from nodeconf.nodes.base import Node, PodHandle, PodStatus
from nodeconf.quantity import Quantity, format_amount
from nodeconf.semantics import hugepages
from nodeconf.semantics.allocatable import kubepods_memory_bytes
from nodeconf.semantics.cgroup_paths import kubepods
from nodeconf.semantics.eviction import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    PodMemoryUsage,
    PodsMemoryObservation,
    allocatable_memory_threshold,
    decide_memory_eviction,
)
from nodeconf.semantics.expectation import Expected
from suites.toolkit.builders import MI, container, pod
from suites.toolkit.checks import POLL_S, check_admission, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_measured, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog
from suites.toolkit.tolerance import Band

pytestmark = [pytest.mark.disruptive, pytest.mark.runs_alone(
    "reserves all but 300Mi and the huge page pool of the node's memory (kubeReserved) and evicts from kubepods")]

# Upstream's names; the hog's container is the one its eviction event must name.
HOG, HOG_CONTAINER, INNOCENT = "memory-hog-pod", "memory-hog", "innocent-pod"
# What upstream leaves the pods (kubeReserved = capacity − 300Mi, "we want Allocatable = 50Mb") and the node e2e's
# hard memory.available threshold, which addAllocatableThresholds copies to allocatableMemory.available. A node with a
# huge page pool (the reference VM's 2 MiB pages) counts it in its memory capacity (MemTotal) and takes it from
# allocatable but not from kubepods' memory.max (semantics/allocatable.py), so the pool is left out of the reserve:
# allocatable stays 50Mi, admitting the innocent pod's 50Mi request, and kubepods' memory.max is 300Mi plus the pool,
# pressure once its working set passes that less 250Mi.
PODS_MIB, THRESHOLD = 300, "250Mi"
# The hog holds 128 MiB (upstream's grows by 12Mi every 10 s up to allocatable): on the reference VM (16 MiB of huge
# pages) it leaves at most 316 − 128 = 188Mi, 62Mi below the threshold, and with the innocent pod (at most its 50Mi
# limit, in fact a sleeping process of well under 1 MiB) it stays far below kubepods' memory.max, so no OOM kill can
# come first; once it is gone the working set is far below the 66Mi that pressure needs.
HOG_MIB = 128
# What the innocent pod holds in the oracle's picture: a sleeping process, far within its 50Mi request.
INNOCENT_MIB = 1
RULE = ("upstream eviction_test.go MemoryAllocatableEviction: the memory hog is evicted under MemoryPressure, the "
        "innocent pod (within its request) never (helpers.go addAllocatableThresholds: memory.available's hard "
        "threshold copied to allocatableMemory.available when `pods` is enforced; rankMemoryPressure)")
CONDITION = ("upstream runEvictionTest: MemoryPressure while allocatableMemory.available is below the threshold "
             "(helpers.go signalToNodeCondition; nodestatus setters: event NodeHasInsufficientMemory), none once the "
             "hog is gone")
EVICTED = "upstream verifyEvictionOrdering: an evicted pod is Failed with reason Evicted (eviction.Reason)"
EVENT = ("upstream verifyEvictionEvents: one Evicted event; starved resource memory, the offending container the "
         "hog's, using more than its request (helpers.go evictionMessage)")
MET = ("helpers.go getThresholdMetInfo: the message names the met threshold and its observation, "
       "allocatableMemory.available = kubepods' memory.max − its working set, below the threshold")
SPARED = "upstream MemoryAllocatableEviction: evictionPriority 0, the innocent pod is never evicted"
CEILING = "node_container_manager_linux.go: kubepods memory.max = capacity − kubeReserved (`pods` enforced)"
LOW_ON = re.compile(r"The node was low on resource: (?P<resource>\S+)\. "
                    r"Threshold quantity: (?P<threshold>\S+), available: (?P<available>\S+)\. ")
OFFENDER = re.compile(r"Container (?P<name>\S+) was using (?P<usage>\S+), request is (?P<request>\S+), "
                      r"has larger consumption of (?P<resource>\S+)\. ")


@pytest.mark.upstream_e2e(
    file="test/e2e_node/eviction_test.go",
    case="MemoryAllocatableEviction / when we run containers that should cause MemoryPressure / "
         "should eventually evict all of the correct pods")
def test_allocatable_pressure_evicts_the_hog(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """The innocent pod, then the hog holding HOG_MIB: kubepods' working set crosses its memory.max less 250Mi while
    the node keeps more than a GiB available, so only allocatableMemory.available is met; the node evicts the hog
    (the one pod above its request) with the event upstream checks, spares the innocent pod and ends MemoryPressure.

    Relies on the kernel charging every page of kubepods' subtree to its memory.current (cgroup-v2.rst: memory.current
    is the cgroup's and its descendants' usage) and uncharging the hog's anonymous pages when it is killed, and on
    charges below memory.max never invoking the OOM killer (mm/memcontrol.c): the hog is evicted, not OOM-killed, and
    the working set falls back below that, by margins of tens of MiB that no interpreter or page cache noise closes."""
    pool = sum(hugepages.capacity(oracle.facts).values())
    config = kubelet.use(replace(
        kubelet.config, kube_reserved={MEMORY: Quantity.of(oracle.facts.memory_capacity - pool - PODS_MIB * MI)},
        enforce_node_allocatable=("pods",), eviction_hard={"memory.available": THRESHOLD}))
    innocent = pod(container("innocent-container", requests={MEMORY: "50Mi"}, limits={MEMORY: "50Mi"},
                             command=["sleep", "infinity"]), name=INNOCENT, restartPolicy="Never")
    hog = pod(container(HOG_CONTAINER, command=memhog(HOG_MIB)), name=HOG, restartPolicy="Never")
    # kubepods' memory.max as the kernel shows it, the observation's capacity; the oracle's threshold and decision
    # for the hog at HOG_MIB.
    limit = kubepods_memory_bytes(oracle.facts, config) // oracle.facts.page_size * oracle.facts.page_size
    threshold = allocatable_memory_threshold(config, limit)
    decided = decide_memory_eviction(
        [PodMemoryUsage(innocent, {"innocent-container": INNOCENT_MIB * MI}),
         PodMemoryUsage(hog, {HOG_CONTAINER: HOG_MIB * MI})], oracle.facts, config,
        pods=PodsMemoryObservation(limit, (HOG_MIB + INNOCENT_MIB) * MI))
    assert threshold is not None and decided.victim is not None and decided.signal == ALLOCATABLE_MEMORY_AVAILABLE, (
        f"the oracle does not evict on allocatableMemory.available here: {decided}")

    deployed = deploy_pods(deploy, oracle, kubelet, [innocent, hog])
    for h in deployed.handles:
        check_admission(h, deployed.expected(h.pod.name))
    innocent_handle, hog_handle = deployed.handles
    status = _evicted_or_not(hog_handle, timeout=60)
    _wait_pressure_ends(kubelet.node, timeout=30)
    conditions = kubelet.node.conditions()
    ceiling = kubelet.node.node_cgroups()[kubepods(config.cgroup_driver)]
    spared = innocent_handle.status()
    evicted = [name for name, s in ((HOG, status), (INNOCENT, spared)) if s.reason == "Evicted"]
    rows: list[ComparedValue] = [
        compare_value("", "", ceiling.path, "memory.max", Expected(str(limit), CEILING), ceiling.get("memory.max")),
        compare_value("", "", "(eviction)", "evicted pods", Expected(decided.victim.name, RULE), ", ".join(evicted)),
        compare_value("", "", "(node)", "NodeHasInsufficientMemory event", Expected("yes", CONDITION),
                      "yes" if any(e.reason == "NodeHasInsufficientMemory" for e in conditions.events) else "no"),
        compare_value("", "", "(node)", "MemoryPressure after the eviction", Expected("False", CONDITION),
                      str(conditions.memory_pressure)),
        compare_value(HOG, "", "(status)", "phase and reason", Expected("Failed/Evicted", EVICTED),
                      f"{status.phase}/{status.reason}"),
        compare_value(HOG, "", "(events)", "Evicted events", Expected("1", EVENT),
                      str(sum(e.reason == "Evicted" for e in status.events))),
        *_message_rows(status.message, threshold, limit),
        compare_value(INNOCENT, "", "(status)", "phase", Expected("Running", SPARED), spared.phase),
    ]
    assert_matches("pods under allocatable memory pressure", rows)


def _message_rows(message: str, threshold: int, limit: int) -> list[ComparedValue]:
    """The eviction message as upstream reads the event's annotations: the starved resource and the threshold met
    with its observation (below the threshold), the offending container and its usage above its request (0); both
    observations are bounded by kubepods' memory.max, which no working set below it exceeds."""
    low, offender = LOW_ON.search(message), OFFENDER.search(message)
    rows = [
        compare_value(HOG, "", "(status)", "starved resource, threshold",
                      Expected(f"memory, {format_amount(Fraction(threshold))}", EVENT),
                      f"{low['resource']}, {low['threshold']}" if low else message),
        compare_value(HOG, "", "(status)", "offending container, request, resource",
                      Expected(f"{HOG_CONTAINER}, 0, memory", EVENT),
                      f"{offender['name']}, {offender['request']}, {offender['resource']}" if offender else message),
    ]
    if low:
        rows.append(compare_measured(HOG, "", "(status)", "available at eviction", Band(
            0, threshold - 1, f"below the {format_amount(Fraction(threshold))} threshold, not below 0"),
            Quantity.parse(low["available"]).value(), MET))
    if offender:
        rows.append(compare_measured(HOG, HOG_CONTAINER, "(status)", "usage named", Band(
            1, limit, "above its request of 0, within kubepods' memory.max"),
            Quantity.parse(offender["usage"]).value(), EVENT))
    return rows


def _evicted_or_not(handle: PodHandle, timeout: float) -> PodStatus:
    """Poll until the node evicted the pod or `timeout` passes; its status then (a node that never evicts it fails
    the comparison, with every row shown, rather than the wait)."""
    deadline = time.monotonic() + timeout
    while True:
        status = handle.status()
        if status.reason == "Evicted" or time.monotonic() > deadline:
            return status
        time.sleep(POLL_S)


def _wait_pressure_ends(node: Node, timeout: float) -> None:
    """Poll until MemoryPressure clears or `timeout` passes (the node rechecks the signal after each eviction)."""
    deadline = time.monotonic() + timeout
    while node.conditions().memory_pressure and time.monotonic() < deadline:
        time.sleep(POLL_S)
