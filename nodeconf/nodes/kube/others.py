"""The pods a node runs besides the ones a check sends, as oracle input: their requests count, their cgroups are
not checked.

The kubelet sizes the QoS and kubepods cgroups from every active pod on the node (pkg/kubelet/cm/
qos_container_manager_linux.go UpdateCgroups: setCPUCgroupConfig, setMemoryQoS over activePods) and admits a
pod against the requests of all of them (lifecycle/predicate.go); kindnet alone requests 100m/50Mi on every
kind node. Pods are listed with `fieldSelector=spec.nodeName=<node>` (pods of every namespace).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from nodeconf.errors import InputError
from nodeconf.manifest import CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.api import dig

# The oracle's namespace for these pods: no LimitRange or ResourceQuota of a check lives there, and their names
# (`<namespace>.<name>`) cannot equal a check's pod names.
OTHERS_NAMESPACE = "nodeconf-other-pods"
# Terminal phases: the kubelet's activePods leave these out (kubelet.go filterOutInactivePods).
TERMINAL_PHASES = ("Succeeded", "Failed")
_KEPT_ANNOTATIONS = (CONFIG_SOURCE_ANNOTATION, CONFIG_MIRROR_ANNOTATION)


def node_selector(node: str) -> str:
    return f"spec.nodeName={node}"


def _container(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Only what the oracle sums: name, resources, and the init container's restartPolicy (a sidecar)."""
    out: dict[str, Any] = {"name": str(doc.get("name") or ""), "resources": dict(doc.get("resources") or {})}
    if doc.get("restartPolicy"):
        out["restartPolicy"] = doc["restartPolicy"]
    return out


def other_pod(obj: Mapping[str, Any]) -> Pod:
    """One API pod as oracle input: its resource fields, priority and static-pod annotations, renamed into
    OTHERS_NAMESPACE; NodeError naming the pod when its resources cannot be read."""
    namespace, name = str(dig(obj, "metadata", "namespace") or ""), str(dig(obj, "metadata", "name") or "")
    spec = obj.get("spec") or {}
    annotations = dig(obj, "metadata", "annotations") or {}
    pod_spec: dict[str, Any] = {
        "containers": [_container(c) for c in spec.get("containers") or ()],
        "initContainers": [_container(c) for c in spec.get("initContainers") or ()],
        "restartPolicy": spec.get("restartPolicy") or "Always",
    }
    for key in ("resources", "overhead", "priority", "priorityClassName"):
        if spec.get(key) is not None:
            pod_spec[key] = spec[key]
    doc = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{namespace}.{name}", "namespace": OTHERS_NAMESPACE,
                     "uid": str(dig(obj, "metadata", "uid") or ""),
                     "annotations": {k: str(v) for k, v in annotations.items() if k in _KEPT_ANNOTATIONS}},
        "spec": pod_spec,
    }
    try:
        pod = object_from_dict(doc, source=f"pod {namespace}/{name}")
    except InputError as err:
        raise NodeError(f"cannot read the resources of pod {namespace}/{name} on the node: {err}") from None
    assert isinstance(pod, Pod)
    return pod


def other_pods(items: Iterable[Mapping[str, Any]], own_namespaces: Collection[str]) -> list[Pod]:
    """The active pods outside `own_namespaces` (where the checks' pods live), oldest first (the order the
    kubelet admitted them in)."""
    active = [obj for obj in items if dig(obj, "status", "phase") not in TERMINAL_PHASES
              and dig(obj, "metadata", "namespace") not in own_namespaces]
    active.sort(key=lambda obj: (str(dig(obj, "metadata", "creationTimestamp") or ""),
                                 str(dig(obj, "metadata", "namespace")), str(dig(obj, "metadata", "name"))))
    return [other_pod(obj) for obj in active]
