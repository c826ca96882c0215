"""The words and files the Memory QoS checks cite: the post's sections, upstream's file and Describe texts, the
kubelet configs of the two reservation policies; upstream's one-container pod."""

from __future__ import annotations

from nodeconf.manifest import Pod
from suites.toolkit.pods import pod, renamed, with_container

MI = 1024**2
POST_TABLE = "Memory QoS v1.36 post: TieredReservation table (Guaranteed memory.min, Burstable memory.low = request)"
HIERARCHY = "Memory QoS v1.36 post, Cgroup hierarchy: kubepods memory.min = G+B requests, burstable memory.low = B"
HIGH = "Memory QoS: memory.high = floor((request + factor × (limit − request)) / page) × page"
METRICS = "Memory QoS v1.36 post: kubelet_memory_qos_node_memory_{min,low}_bytes (0 under None)"
POLICIES = {"none": "memory-qos/kubelet-throttling-only.yaml", "tiered": "memory-qos/kubelet-tiered-reservation.yaml"}
MEMORY_QOS_TEST = "test/e2e_node/memory_qos_test.go"
PROTECTION = "MemoryQoS / memory protection [memoryReservationPolicy=TieredReservation] / "
THROTTLING = "MemoryQoS / memory.high throttling / "
POLICY = "MemoryQoS / memoryReservationPolicy / "
EDGES = "MemoryQoS / tiered protection edge cases / "
BEHAVIOUR = "MemoryQoS / memory.high throttling behavior / "
ROLLBACK = "MemoryQoS / feature rollback / "


def upstream_pod(name: str, requests: dict[str, str], limits: dict[str, str]) -> Pod:
    """upstream's memqosMakePod: one container `app` that sleeps, with these requests and limits."""
    return renamed(with_container(pod("memory-qos/burstable-512mi.yaml"), "app", requests=requests, limits=limits),
                   name)
