"""Deploy → observe → compare, the steps every suite test takes (DESIGN.md "How checks are written").

QoS class and admission are asserted before any cgroup value (upstream's swap test ran BestEffort pods for its
whole QoS matrix without noticing); values go through the one comparison helper, suites/toolkit/compare.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import yaml

from nodeconf.fixtures.evidence import attach_manifest
from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import CgroupFiles, Node, PodEvidence, PodHandle, PodStatus
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
# How long a module's pods may take until every container runs (PodHandle.wait_running's default).
WAIT_RUNNING = 60.0
# How often a check reads again what it waits for (a workload's progress, an eviction, a restart). A read is one
# request, ~40 ms under TCG with the agent's work: at 0.1 s a change is seen ~0.05 s late on average instead of
# ~0.1-0.15 s, and the checks that wait took 0.89x the time (benchmarks/results/suites-time-breakdown.md).
POLL_S = 0.1
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


def check_qos(handle: PodHandle, expected: PodExpectation, intended: QosClass | None,
              status: PodStatus | None = None) -> None:
    """The pod is of the class the test means, and the node agrees with the oracle about it (in `status` when the
    caller read it already, else as the node reports it now)."""
    __tracebackhide__ = True
    if intended is not None:
        assert expected.qos_class is intended, (
            f"pod {expected.pod.ref}: the workload is {expected.qos_class.value}, the test needs {intended.value}"
        )
    observed = (status or handle.status()).qos_class
    assert observed == expected.qos_class.value, (
        f"pod {expected.pod.ref}: node put it in QoS class {observed}; expected {expected.qos_class.value}"
    )


SeedValues = Callable[[PodEvidence], Sequence[ComparedValue]]


def check_pod(handle: PodHandle, expected: PodExpectation, intended: QosClass | None = None,
              seed: SeedValues | None = None, start_timeout: float = 60.0) -> PodEvidence:
    """Admission, QoS class, running containers (within `start_timeout`), then every file and oom_score_adj against
    the oracle, and the values the seed states literally (`seed`), all mismatches in one failure. One evidence
    request serves the QoS class and, once the pod has settled, the values (issue 31: fewer round trips)."""
    __tracebackhide__ = True
    check_admission(handle, expected)
    first = handle.evidence()
    check_qos(handle, expected, intended, first.status)
    if is_settled(first):
        evidence = first
    else:
        handle.wait_running(start_timeout)
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
        return is_settled(found[0], running=False)

    wait_until(f"pod {handle.pod.ref}: a process in every container cgroup", settled, timeout)
    return found[0]


def is_settled(evidence: PodEvidence, running: bool = True) -> bool:
    """Every container (and the pause process) has a process in its cgroup with its oom_score_adj read, and, with
    `running`, every container runs."""
    every = [*evidence.containers.values(), *([evidence.pause] if evidence.pause else [])]
    return ((not running or all(c.running for c in evidence.status.containers.values()))
            and all(c.pids and all(v is not None for v in c.oom_score_adj.values()) for c in every))


class SettledPods:
    """The settled evidence of a module's shared pods (every container running, a process in each cgroup), read
    for all of them in one request per poll (Node.evidence_of) the first time a check asks, then kept: the pods run
    unchanged (`sleep`), so every check of the module judges the same read. A pod that did not settle within
    `timeout` is waited for again by each check that asks for it, as check_pod waits (wait_running, then
    settled_evidence), so it fails those checks only, with the same messages."""

    def __init__(self, node: Node, handles: Sequence[PodHandle], timeout: float = WAIT_RUNNING) -> None:
        self.node = node
        self.handles = tuple(h for h in handles if h.admitted)
        self.timeout = timeout
        self.read: dict[str, PodEvidence] | None = None

    def _read_all(self) -> dict[str, PodEvidence]:
        found: dict[str, PodEvidence] = {}

        def all_settled() -> bool:
            pending = [h for h in self.handles if h.pod.ref not in found or not is_settled(found[h.pod.ref])]
            found.update(zip((h.pod.ref for h in pending), self.node.evidence_of(pending), strict=True))
            return all(is_settled(e) for e in found.values())

        with contextlib.suppress(AssertionError):  # a pod that did not settle fails the checks that ask for it
            wait_until("the module's pods settled", all_settled, self.timeout)
        return found

    def of(self, handle: PodHandle) -> PodEvidence:
        """The pod's settled evidence."""
        if self.read is None:
            self.read = self._read_all()
        evidence = self.read.get(handle.pod.ref)
        if evidence is not None and is_settled(evidence):
            return evidence
        handle.wait_running()
        return settled_evidence(handle)


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


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 60.0, interval: float = POLL_S) -> None:
    """Poll a condition (never a fixed sleep); an AssertionError naming it on timeout."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:g} s")
        time.sleep(interval)
