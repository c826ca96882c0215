"""The steps of an in-place resize check on a running pod: resize, wait for the restarts the rule predicts, compare
the node's answer, restart counts and cgroup values with the oracle's; put the original resources back.

Source: upstream test/e2e/common/node/pod_resize.go doPatchAndRollback and test/e2e_node/pod_resize_test.go
patchAndVerify (patch, wait for actuation, verify cgroups, status resources and restarts); the status and every cgroup
value come from the oracle (decide_resize, expect).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from nodeconf.manifest import Pod
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import PodHandle
from nodeconf.semantics.expectation import Expected, PodExpectation
from nodeconf.semantics.oom import oom_score_adj_after_resize
from suites.toolkit.checks import settled_evidence, wait_until
from suites.toolkit.compare import ComparedValue, compare_pod, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.resize import decision, status_rows

RESTART_WAIT = 15.0


@dataclass
class Resizable:
    """A module's running pod, the oracle's expectation for its first deployment, the spec the node last applied
    (restored before a check if one left it), and per container the spec it last started with (None once a restore
    after a failed check left that unknown)."""

    handle: PodHandle
    deployed: PodExpectation
    original: Pod
    current: Pod
    kubelet: Kubelet
    started: dict[str, Pod | None] = field(default_factory=dict)

    @classmethod
    def running(cls, handle: PodHandle, deployed: PodExpectation, pod: Pod, kubelet: Kubelet) -> Resizable:
        """A pod just deployed: every container started with its spec."""
        return cls(handle, deployed, pod, pod, kubelet, {c.name: pod for c in pod.all_containers})


def _restart_counts(pod: Resizable) -> dict[str, int]:
    status = pod.handle.status()
    return {name: status.container(name).restart_count for name in pod.started}


def _oom_after_resize(oracle: Oracle, pod: Resizable, resized: PodExpectation,
                      restarted: Mapping[str, bool]) -> PodExpectation:
    """The resized pod's expectation with each container's oom_score_adj as the oracle gives it after an in-place
    resize (the value it started with unless it restarted); the started spec recorded for the restarted ones."""
    containers = []
    for want in resized.containers:
        started = pod.started.get(want.name)
        if started is not None:
            at_start = oracle.expect([started], pod.kubelet.config).pods[0].container(want.name).oom_score_adj
            want = replace(want, oom_score_adj=oom_score_adj_after_resize(at_start, want.oom_score_adj,
                                                                          restarted[want.name]))
        containers.append(want)
    for name, again in restarted.items():
        if again:
            pod.started[name] = resized.pod
    return replace(resized, containers=tuple(containers))


def expected_restart_counts(before: Mapping[str, int], restarts: Mapping[str, int],
                            status: str) -> dict[str, int]:
    """Each container's restart count after a resize the oracle answers with `status`: the test's restarts once it is
    applied, none when the kubelet refuses or holds it (nothing is actuated, kuberuntime doPodResizeAction not run)."""
    applied = status == "Applied"
    return {c: before[c] + (restarts.get(c, 0) if applied else 0) for c in before}


def resize_step(oracle: Oracle, pod: Resizable, desired: Pod, body: dict[str, object], restarts: Mapping[str, int],
            rule: str, restart_rule: str, step: str) -> list[ComparedValue]:
    """One resize: the node's answer against the oracle's, each container's restart count against the upstream
    rule (after waiting for the restarts it predicts), then every cgroup value against the oracle's pod."""
    handle, name = pod.handle, pod.original.name
    before = _restart_counts(pod)
    status, message = decision(oracle, pod.kubelet, pod.current, desired)
    got = handle.resize(body)
    if got.status == "Applied":
        pod.current = desired
    wanted = expected_restart_counts(before, restarts, status)

    def restarted() -> bool:
        counts = _restart_counts(pod)
        return all(counts[c] >= wanted[c] for c in pod.started)

    if wanted != before:
        with contextlib.suppress(AssertionError):  # the counts below name a container that did not restart
            wait_until(f"pod {name} {step}: restarts", restarted, RESTART_WAIT)
    evidence = settled_evidence(handle)
    again = {c: status == "Applied" and restarts.get(c, 0) > 0 for c in pod.started}  # the oracle's answer
    target = desired if status == "Applied" else pod.current  # an unapplied resize leaves the running values
    expected = _oom_after_resize(oracle, pod, oracle.expect([target], pod.kubelet.config).pods[0], again)
    rows = [*status_rows(name, got, status, message, f"{rule} ({step})")]
    rows += [compare_value(name, c, evidence.container(c).cgroup.path, f"restart count {step}",
                           Expected(str(wanted[c]), restart_rule), str(evidence.status.container(c).restart_count))
             for c in pod.started]
    unknown = {name for name, started in pod.started.items() if started is None}  # after a failed check only
    return rows + [row for row in compare_pod(expected, evidence)
                   if not (row.file == "oom_score_adj" and row.container in unknown)]


def restore(pod: Resizable) -> None:
    """Put back the original resources (every container's and the pod's) when an earlier check left them."""
    if pod.current != pod.original:
        spec = pod_to_dict(pod.original)["spec"]
        body = {"containers": [{"name": c["name"], "resources": c.get("resources", {})} for c in spec["containers"]]}
        if "resources" in spec:
            body["resources"] = spec["resources"]
        pod.handle.resize({"spec": body})
        pod.current = pod.original
        pod.started = dict.fromkeys(pod.started)  # which containers this restore restarts is not tracked
        wait_until(f"pod {pod.original.name} restored", lambda: pod.handle.status().resize.status in ("", "Applied"))
