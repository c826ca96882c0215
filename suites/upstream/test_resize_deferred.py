"""Opt-in (`-m resize_extended`): a resize the node cannot fit now is Deferred, its pod's cgroups keep the allocated
values, and it completes once another pod's deletion or resize frees room.

Source: upstream test/e2e/node/pod_resize.go doPodResizeRetryDeferredTests "pod-resize-retry-deferred-test-1" (pods A
of 5 and B of 3 tenths of the available CPU; B resized to 6 is deferred; A resized to 2 lets B's resize complete) and
"-test-3" (four pods of 1/4 of the available CPU and 1/5 of the memory, requests only; pod2 to cpu 1/3 and memory 1/24,
pod3 to cpu 1/24 and memory 2/3, pod4 to cpu 5/8, each deferred; deleting pod1 completes the chain pod2, pod3,
pod4). "Available" is allocatable less the requests of the pods the node already runs, as upstream's
GetNodeAllocatableAndAvailableQuantities. Every status, message and cgroup value comes from the oracle
(decide_resize with the other pods as allocated, expect).

Guarantee relied on: the kubelet admits a resize against the allocated requests of the other active pods and keeps a
deferred one pending, retrying the pending resizes when a pod is removed or another pod's resize is allocated, not
only on its 3-minute timer (pkg/kubelet/kubelet.go HandlePodRemoves → allocationManager.RetryPendingResizes
(TriggerReasonPodsRemoved), and TriggerReasonPodResized; pkg/kubelet/allocation/allocation_manager.go
retryPendingResizes → handlePodResourcesResize → canAdmitPod). Upstream's "-test-2" also asserts the order in which
pending resizes are retried (sortPendingResizes: priority, then QoS class), which the bundled enforcer does not
model; it is listed in tools/upstream_cases.yaml.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from fractions import Fraction

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import CPU, MEMORY, Pod
from nodeconf.nodes.base import PodHandle
from nodeconf.semantics.allocatable import allocatable_cpu_milli, allocatable_memory
from nodeconf.semantics.pod_resources import milli, pod_requests, whole
from suites.toolkit.builders import container, pod
from suites.toolkit.checks import deploy_pods, settled_evidence, wait_until
from suites.toolkit.compare import ComparedValue, assert_matches, compare_pod
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.resize import decision, patch, status_rows

pytestmark = [
    pytest.mark.resize_extended,
    pytest.mark.min_profile("1.35"),
    pytest.mark.runs_alone("fills the node's allocatable CPU and memory with its pods' requests"),
]

FILE = "test/e2e/node/pod_resize.go"
CASE = "Pod InPlace Resize Container (deferred-resizes) / pod-resize-retry-deferred-test-{}"
RULE = ("upstream doPodResizeRetryDeferredTests: deferred while the other pods' allocated requests leave no room, "
        "retried when a pod is removed or resized (oracle: decide_resize)")
APPLIED = "Applied"
RETRY_WAIT = 30.0  # the kubelet retries on the removal or resize itself (its periodic retry: every 3 minutes)


class Allocation:
    """The test's pods as the node last allocated them, and the oracle's decisions against them."""

    def __init__(self, oracle: Oracle, kubelet: Kubelet, pods: Sequence[Pod]) -> None:
        self.oracle, self.kubelet = oracle, kubelet
        self.allocated: dict[str, Pod] = {p.name: p for p in pods}

    def decide(self, desired: Pod) -> tuple[str, str]:
        """The oracle's status and message for resizing `desired`'s pod, beside every other allocated pod."""
        others = [*self.oracle.others(), *(p for n, p in self.allocated.items() if n != desired.name)]
        return decision(self.oracle, self.kubelet, self.allocated[desired.name], desired, others=others)

    def cgroups(self, handle: PodHandle) -> list[ComparedValue]:
        """Every cgroup value of the pod against the oracle's for its allocated spec; oom_score_adj left out: an
        in-place resize keeps the value the container started with (semantics/oom.py oom_score_adj_after_resize)."""
        expected = self.oracle.expect([self.allocated[handle.pod.name]], self.kubelet.config).pods[0]
        return [row for row in compare_pod(expected, settled_evidence(handle)) if row.file != "oom_score_adj"]

    def resize(self, handle: PodHandle, desired: Pod, body: dict[str, object], step: str) -> list[ComparedValue]:
        """Send the resize; the node's answer against the oracle's, the allocation updated when it applies."""
        status, message = self.decide(desired)
        got = handle.resize(body)
        if status == APPLIED:
            self.allocated[desired.name] = desired
        return status_rows(desired.name, got, status, message, f"{RULE} ({step})")

    def completes(self, handle: PodHandle, desired: Pod, step: str) -> list[ComparedValue]:
        """A deferred resize retried: once the oracle admits it beside the others, the node reports it applied."""
        status, message = self.decide(desired)
        if status == APPLIED:
            self.allocated[desired.name] = desired
            with contextlib.suppress(AssertionError):  # a resize still deferred fails in the rows below
                wait_until(f"pod {desired.name}: the deferred resize applied ({step})",
                           lambda: handle.status().resize.status == APPLIED, RETRY_WAIT)
        return status_rows(desired.name, handle.status().resize, status, message, f"{RULE} ({step})")


def _available(oracle: Oracle, kubelet: Kubelet) -> tuple[int, int]:
    """Allocatable cpu (millicores) and memory (bytes) less the requests of the pods the node already runs."""
    profile = oracle.profile(kubelet.config)
    used = [pod_requests(p, profile) for p in oracle.others()]
    cpu = allocatable_cpu_milli(oracle.facts, kubelet.config) - sum(milli(r.get(CPU, Fraction(0))) for r in used)
    memory = allocatable_memory(oracle.facts, kubelet.config) - sum(whole(r.get(MEMORY, Fraction(0))) for r in used)
    return cpu, memory


def _pod(name: str, cname: str, requests: Mapping[str, str], limits: Mapping[str, str] | None = None) -> Pod:
    return pod(container(cname, requests, limits), name=name)


def _cpu(millicores: int) -> dict[str, str]:
    return {"cpu": f"{millicores}m"}


@pytest.mark.upstream_e2e(file=FILE, case=CASE.format(1))
def test_deferred_resize_completes_after_another_pod_shrinks(deploy: Deploy, oracle: Oracle,
                                                             kubelet: Kubelet) -> None:
    """A of 5 and B of 3 tenths of the available CPU (request == limit); B to 6 tenths is Deferred with B's
    cgroups unchanged; A to 2 tenths applies, then B's resize completes with the new cgroup values."""
    part = _available(oracle, kubelet)[0] // 10
    if part < 1:
        pytest.skip("the node has under 10m of CPU available")
    a, b = _pod("deferred-a", "ca", _cpu(5 * part), _cpu(5 * part)), _pod("deferred-b", "cb", _cpu(3 * part),
                                                                              _cpu(3 * part))
    deployed = deploy_pods(deploy, oracle, kubelet, [a, b])
    node = Allocation(oracle, kubelet, [a, b])
    handle_a, handle_b = deployed.handle(a.name), deployed.handle(b.name)
    handle_a.wait_running()
    handle_b.wait_running()
    six, two = _cpu(6 * part), _cpu(2 * part)
    b6 = _pod(b.name, "cb", six, six)
    rows = node.resize(handle_b, b6, patch("cb", {"requests": six, "limits": six}), "B to 6 parts")
    rows += node.cgroups(handle_b)
    a2 = _pod(a.name, "ca", two, two)
    rows += node.resize(handle_a, a2, patch("ca", {"requests": two, "limits": two}), "A to 2 parts")
    rows += node.completes(handle_b, b6, "B retried after A's resize")
    rows += node.cgroups(handle_a) + node.cgroups(handle_b)
    assert_matches("a deferred resize retried after another pod's resize", rows)


@pytest.mark.upstream_e2e(file=FILE, case=CASE.format(3))
def test_deferred_resizes_complete_in_a_chain_after_a_deletion(deploy: Deploy, oracle: Oracle,
                                                               kubelet: Kubelet) -> None:
    """Four pods of 1/4 of the available CPU and 1/5 of the memory (requests only); pod2, pod3, pod4 resized
    beyond what fits are Deferred; deleting pod1 lets pod2's resize complete, whose smaller memory lets pod3's, whose
    smaller CPU lets pod4's; every pod's cgroups as the oracle says after each step."""
    cpu, memory = _available(oracle, kubelet)
    if cpu < 24:
        pytest.skip("the node has under 24m of CPU available")

    def requests(millicores: int, nbytes: int) -> dict[str, str]:
        return {"cpu": f"{millicores}m", "memory": str(nbytes)}

    initial = requests(cpu // 4, memory // 5)
    pods = [_pod(f"deferred-{n}", "c", initial) for n in range(1, 5)]
    deployed = deploy_pods(deploy, oracle, kubelet, pods)
    node = Allocation(oracle, kubelet, pods)
    handles = [deployed.handle(p.name) for p in pods]
    for handle in handles:
        handle.wait_running()
    wanted = {2: requests(cpu // 3, memory // 24), 3: requests(cpu // 24, 2 * memory // 3),
              4: requests(cpu // 2 + cpu // 8, memory // 5)}
    desired = {n: _pod(f"deferred-{n}", "c", r) for n, r in wanted.items()}
    rows: list[ComparedValue] = []
    for n, r in wanted.items():
        rows += node.resize(handles[n - 1], desired[n], patch("c", {"requests": r}), f"pod{n} beyond what fits")
        rows += node.cgroups(handles[n - 1])
    handles[0].delete()
    del node.allocated[pods[0].name]
    for n in wanted:
        rows += node.completes(handles[n - 1], desired[n], f"pod{n} retried after pod1's deletion")
    for handle in handles[1:]:
        rows += node.cgroups(handle)
    assert_matches("a chain of deferred resizes retried after a pod's deletion", rows)
