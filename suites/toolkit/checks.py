"""Deploy → observe → compare, the steps every suite test takes (DESIGN.md "How checks are written").

QoS class and admission are asserted before any cgroup value (upstream's swap test ran BestEffort pods for its
whole QoS matrix without noticing); values go through the one comparison helper, suites/toolkit/compare.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import yaml

from fixtures.evidence import attach_manifest
from fixtures.node import Deploy
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import CgroupFiles, Node, PodEvidence, PodHandle
from nodeconf.semantics.expectation import Expected, NodeExpectation, PodExpectation, QosClass
from suites.toolkit.compare import (
    ComparedValue,
    assert_matches,
    compare_events,
    compare_node_cgroups,
    compare_pod,
    compare_value,
    node_metrics,
)
from suites.toolkit.kubelet import Kubelet, Oracle

EVENTS_RULE = "pod events: KEP-5359 SwapNotSupported on a NoSwap node (the oracle's events)"
# Event reasons the oracle decides at admission: one it does not expect is a mismatch.
ADMISSION_EVENTS = frozenset({"SwapNotSupported"})
METRICS_RULE = "node metrics: KEP-5359 kubelet_node_swap_allocated_bytes, Memory QoS v1.36 min/low sums"


@dataclass(frozen=True)
class Deployed:
    """Pods sent to the node together, with the oracle's view of all of them."""

    expectation: NodeExpectation
    handles: tuple[PodHandle, ...]

    def handle(self, name: str) -> PodHandle:
        return next(h for h in self.handles if h.pod.name == name)

    def expected(self, name: str) -> PodExpectation:
        return next(p for p in self.expectation.pods if p.pod.name == name)


def deploy_pods(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, pods: Sequence[Pod],
                objects: Sequence[NamespaceObject] = ()) -> Deployed:
    """Send the pods in order (after the namespace's LimitRanges and quotas) and compute what the oracle expects."""
    kubelet.namespace_objects(objects)
    expectation = oracle.expect(pods, kubelet.config, objects)
    handles = []
    for pod in pods:
        attach_manifest(yaml.safe_dump(pod_to_dict(pod), sort_keys=False), f"manifest {pod.ref}")
        handles.append(deploy(pod))
    return Deployed(expectation, tuple(handles))


def check_admission(handle: PodHandle, expected: PodExpectation) -> None:
    """The node admits or refuses the pod as the oracle says, with the oracle's messages."""
    __tracebackhide__ = True
    assert (handle.admitted, tuple(handle.errors)) == (expected.admitted, expected.errors), (
        f"pod {expected.pod.ref}: node admitted={handle.admitted} errors={list(handle.errors)}; "
        f"oracle admitted={expected.admitted} errors={list(expected.errors)}"
    )


def check_qos(handle: PodHandle, expected: PodExpectation, intended: QosClass | None) -> None:
    """The pod is of the class the test means, and the node agrees with the oracle about it."""
    __tracebackhide__ = True
    if intended is not None:
        assert expected.qos_class is intended, (
            f"pod {expected.pod.ref}: the workload is {expected.qos_class.value}, the test needs {intended.value}"
        )
    observed = handle.status().qos_class
    assert observed == expected.qos_class.value, (
        f"pod {expected.pod.ref}: node put it in QoS class {observed}; expected {expected.qos_class.value}"
    )


SeedValues = Callable[[PodEvidence], Sequence[ComparedValue]]


def check_pod(handle: PodHandle, expected: PodExpectation, intended: QosClass | None = None,
              seed: SeedValues | None = None) -> PodEvidence:
    """Admission, QoS class, running containers, then every file and oom_score_adj against the oracle, and the
    values the seed states literally (`seed`), all mismatches in one failure."""
    __tracebackhide__ = True
    check_admission(handle, expected)
    check_qos(handle, expected, intended)
    handle.wait_running()
    evidence = settled_evidence(handle)
    assert_matches(f"pod {expected.pod.ref}", [
        *compare_pod(expected, evidence),
        *compare_events(expected.pod.name, expected.events, evidence.status.events, EVENTS_RULE, ADMISSION_EVENTS),
        *(seed(evidence) if seed else ()),
    ])
    return evidence


def settled_evidence(handle: PodHandle, timeout: float = 30.0) -> PodEvidence:
    """The pod's evidence once every container (and the pause process) has a process in its cgroup: a runtime
    reports a container started before a reader may see its process there."""
    found: list[PodEvidence] = []

    def settled() -> bool:
        found[:] = [handle.evidence()]
        every = [*found[0].containers.values(), *([found[0].pause] if found[0].pause else [])]
        return all(c.pids and all(v is not None for v in c.oom_score_adj.values()) for c in every)

    wait_until(f"pod {handle.pod.ref}: a process in every container cgroup", settled, timeout)
    return found[0]


def check_node(node: Node, expectation: NodeExpectation, subject: str = "node") -> None:
    """kubepods, the QoS cgroups and the node metrics against the oracle."""
    __tracebackhide__ = True
    assert_matches(subject, [*compare_node_cgroups(expectation.cgroups, node.node_cgroups()),
                             *node_metrics(expectation.metrics, node.metrics(), METRICS_RULE)])


def seed_files(pod: str, container: str, cgroup: CgroupFiles, values: Mapping[str, str],
               rule: str) -> list[ComparedValue]:
    """Values a seed document states literally for one cgroup, compared with what the kernel read back."""
    return [compare_value(pod, container, cgroup.path, file, Expected(value, rule), cgroup.get(file))
            for file, value in values.items()]


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 60.0, interval: float = 0.3) -> None:
    """Poll a condition (never a fixed sleep); an AssertionError naming it on timeout."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:g} s")
        time.sleep(interval)
