"""A recorded NodeList of the shape `kubectl get nodes -o json` returns (trimmed to the fields the driver reads): a
kind cluster's control plane and two workers, a worker whose kubelet stopped posting (the node lifecycle controller
sets Ready to Unknown and taints it unreachable), an AKS Windows node, and a node recorded without the OS label."""

from __future__ import annotations

import copy
from typing import Any


def _node(name: str, *, os_label: str | None = "linux", os_info: str = "linux", ready: str = "True",
          roles: tuple[str, ...] = (), extra_labels: dict[str, str] | None = None) -> dict[str, Any]:
    labels = {"beta.kubernetes.io/arch": "amd64", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
              **{f"node-role.kubernetes.io/{role}": "" for role in roles}, **(extra_labels or {})}
    if os_label is not None:
        labels.update({"beta.kubernetes.io/os": os_label, "kubernetes.io/os": os_label})
    reason = {"True": "KubeletReady", "False": "KubeletNotReady", "Unknown": "NodeStatusUnknown"}[ready]
    node: dict[str, Any] = {
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "labels": labels, "uid": f"uid-{name}", "resourceVersion": "4711"},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {
            "capacity": {"cpu": "2", "memory": "3479660Ki", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": ready, "reason": reason},
            ],
            "nodeInfo": {"operatingSystem": os_info, "architecture": "amd64", "kernelVersion": "6.1.0-28-amd64",
                         "kubeletVersion": "v1.34.2", "containerRuntimeVersion": "containerd://2.1.1"},
        },
    }
    if ready == "Unknown":
        node["spec"]["taints"] = [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                                  {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]
    return node


NODES = [
    _node("kind-control-plane", roles=("control-plane",)),
    _node("kind-worker", extra_labels={"pool": "gpu"}),
    _node("kind-worker2"),
    _node("kind-worker3", ready="Unknown"),
    _node("akswin000000", os_label="windows", os_info="windows", roles=("agent",)),
    _node("legacy-1", os_label=None, os_info="linux"),
]


def node_list(*names: str) -> dict[str, Any]:
    """The NodeList with the named nodes (all when none is named), as the API server sends it."""
    items = [copy.deepcopy(node) for node in NODES if not names or node["metadata"]["name"] in names]
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "4711"}, "items": items}
