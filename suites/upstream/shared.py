"""Pods built the way upstream's node e2e tables describe them, and one deployment shared by a module's checks.

Source: upstream test/e2e/common/node/pod_level_resources.go makePod / makeContainer and
test/e2e/common/node/framework/podresize MakePodWithResizableContainers (busybox `sleep`, resources per container).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import yaml

from nodeconf.fixtures.concurrency import shared_holding
from nodeconf.fixtures.evidence import attach_manifest
from nodeconf.fixtures.node import delete_all
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import Node, NodeError, PodHandle
from suites.toolkit.checks import Deployed
from suites.toolkit.kubelet import Applied, Kubelet, Oracle

# How long upstream's huge page pods (cpu limit 10m) may take to start: a runtime's `runc init` of the sandbox and
# of each container runs in the pod's cgroup, charged to its 10m CPU quota (1 ms per 100 ms period); under TCG it
# needs a second or two of CPU, so minutes of wall time (a trixie VM's containerd 1.7 took over 120 s for
# RunPodSandbox). A node that never starts the pod still fails at this bound; where the start is fast (hardware,
# the direct runtime) nothing waits longer.
QUOTA_START_S = 600.0

SLEEP = ["sleep", "infinity"]
# resizePolicy of the four containers a resize table pod holds (upstream DescribeTableSubtree entries).
POLICIES: Mapping[str, Mapping[str, str]] = {
    "no-restart": {},
    "cpu-restart": {"cpu": "RestartContainer"},
    "mem-restart": {"memory": "RestartContainer"},
    "cpu-mem-restart": {"cpu": "RestartContainer", "memory": "RestartContainer"},
}


@dataclass(frozen=True)
class Res:
    """upstream cgroups.ContainerResources: cpu/memory requests and limits, "" when not set."""

    cpu_req: str = ""
    cpu_lim: str = ""
    mem_req: str = ""
    mem_lim: str = ""

    def doc(self) -> dict[str, dict[str, str]]:
        requests = {k: v for k, v in (("cpu", self.cpu_req), ("memory", self.mem_req)) if v}
        limits = {k: v for k, v in (("cpu", self.cpu_lim), ("memory", self.mem_lim)) if v}
        return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}


def container(name: str, res: Res | None = None, policy: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One busybox container sleeping, with its resources and resizePolicy."""
    out: dict[str, Any] = {"name": name, "image": "busybox:1.37", "command": SLEEP}
    if res is not None and res.doc():
        out["resources"] = res.doc()
    if policy:
        out["resizePolicy"] = [{"resourceName": k, "restartPolicy": v} for k, v in policy.items()]
    return out


def make_pod(name: str, containers: Sequence[dict[str, Any]], pod_res: Res | None = None,
             init_containers: Sequence[dict[str, Any]] = ()) -> Pod:
    """A pod of these containers (and init containers), with pod-level `spec.resources` when given (KEP-2837)."""
    spec: dict[str, Any] = {"containers": list(containers)}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if pod_res is not None:
        spec["resources"] = pod_res.doc()
    obj = object_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
                           source="suites/upstream")
    assert isinstance(obj, Pod)
    return obj


def module_kubelet(node: Node, oracle: Oracle, base: KubeletConfig, applied: Applied) -> Kubelet:
    """The node on the session's base configuration, for a module-scoped deployment."""
    kubelet = Kubelet(node, oracle.version, base, applied)
    kubelet.use(base)
    return kubelet


@contextmanager
def shared_deployment(node: Node, oracle: Oracle, kubelet: Kubelet, pods: Sequence[Pod]) -> Iterator[Deployed]:
    """Run the pods for a whole module; every pod started is deleted afterwards, also when a check or the
    start of a later pod failed (the `deploy` fixture's guarantee, at module scope). The node is held under the
    module's concurrency rule meanwhile (nodeconf.fixtures.concurrency)."""
    handles: list[PodHandle] = []
    with shared_holding(node, ", ".join(p.name for p in pods)), _deleting(handles):
        expectation = oracle.expect(pods, kubelet.config)
        for p in pods:
            attach_manifest(yaml.safe_dump(pod_to_dict(p), sort_keys=False), f"manifest {p.ref}")
            handles.append(node.run(p))
        yield Deployed(expectation, tuple(handles))


@contextmanager
def _deleting(handles: list[PodHandle]) -> Iterator[None]:
    """Delete every pod of `handles` on the way out, pass or fail."""
    try:
        yield
    finally:
        problems = delete_all(handles)
        if problems:
            raise NodeError("pods not deleted: " + "; ".join(problems))
