"""Open a `kube` node: connect with a kubeconfig context, choose a Ready Linux node, start the run.

Source: issue 12 (each scheme's opener beside its driver); the kube record (node_kind.py) opens a spec through it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.api import ClientKubeApi, KubeApiError, dig, load_kube_context, unreachable_reason
from nodeconf.nodes.kube.facts import node_name
from nodeconf.nodes.kube.node import DEFAULT_HELPER_IMAGE, DEFAULT_WORKLOAD_IMAGE, DOCKER_HUB, KubeNode

ENV_NODE = "NODECONF_KUBE_NODE"
ENV_HELPER_IMAGE = "NODECONF_KUBE_HELPER_IMAGE"
ENV_WORKLOAD_IMAGE = "NODECONF_KUBE_WORKLOAD_IMAGE"
ENV_KEEP_IMAGES = "NODECONF_KUBE_KEEP_IMAGES"
ENV_MIRROR = "NODECONF_KUBE_MIRROR"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
OS_LABEL = "kubernetes.io/os"
# Labels of nodes without a kubelet of their own: EKS Fargate (docs.aws.amazon.com/eks/latest/userguide/
# fargate-pod-configuration.html), virtual-kubelet (virtual-kubelet/virtual-kubelet node.go; AKS virtual nodes).
VIRTUAL_LABELS = (("eks.amazonaws.com/compute-type", "fargate", "EKS Fargate"),
                  ("type", "virtual-kubelet", "virtual-kubelet"))


def node_os(node: Mapping[str, Any]) -> str:
    """The node's OS: the `kubernetes.io/os` label, else `status.nodeInfo.operatingSystem` (the kubelet sets both
    from its GOOS, pkg/kubelet/kubelet_node_status.go), else linux (an object recorded without either)."""
    label = (dig(node, "metadata", "labels") or {}).get(OS_LABEL)
    return str(label or dig(node, "status", "nodeInfo", "operatingSystem") or "linux")


def is_linux(node: Mapping[str, Any]) -> bool:
    """The node runs Linux (node_os)."""
    return node_os(node) == "linux"


def is_ready(node: Mapping[str, Any]) -> bool:
    """The node's Ready condition is True (the kubelet's own heartbeat, pkg/kubelet/nodestatus/setters.go)."""
    conditions = dig(node, "status", "conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, Mapping))


def image(variable: str, default: str) -> str:
    """The image a variable names, else the default with NODECONF_KUBE_MIRROR (a registry host, optionally with
    a path: `mirror.gcr.io`, `registry.corp/dockerhub`) in place of docker.io."""
    if os.environ.get(variable):
        return os.environ[variable]
    mirror = os.environ.get(ENV_MIRROR, "").strip().rstrip("/")
    return f"{mirror}{default[len(DOCKER_HUB):]}" if mirror and default.startswith(f"{DOCKER_HUB}/") else default


def virtual_reason(node: Mapping[str, Any]) -> str | None:
    """Why the node is no machine with a kubelet of its own, or None: an EKS Fargate node
    (`eks.amazonaws.com/compute-type=fargate`), a virtual-kubelet node (`type=virtual-kubelet`: AKS virtual
    nodes, ACI, other providers). Its pods run elsewhere, so there are no cgroups to read."""
    labels = dig(node, "metadata", "labels") or {}
    for key, value, what in VIRTUAL_LABELS:
        if labels.get(key) == value:
            return f"a virtual node ({what}: {key}={value}), its pods run outside any node nodeconf can read"
    return None


def choose_node(nodes: Sequence[Mapping[str, Any]], wanted: str | None) -> Mapping[str, Any]:
    """The named node, else the first Ready Linux one that is not virtual (a worker rather than a control plane
    when there are several)."""
    if wanted:
        for node in nodes:
            if node_name(node) == wanted:
                if not is_linux(node):
                    raise NodeError(f"node {wanted!r} is not a Linux node ({OS_LABEL}={node_os(node)})")
                virtual = virtual_reason(node)
                if virtual:
                    raise NodeError(f"node {wanted!r} is {virtual}")
                return node
        raise NodeError(f"no node {wanted!r} in the cluster (nodes: {', '.join(node_name(n) for n in nodes)})")
    candidates = [n for n in nodes if is_linux(n) and is_ready(n) and not virtual_reason(n)]
    if not candidates:
        raise NodeError("the cluster has no Ready Linux node that is not virtual")
    workers = [n for n in candidates if CONTROL_PLANE_LABEL not in ((n.get("metadata") or {}).get("labels") or {})]
    return sorted(workers or candidates, key=node_name)[0]


def open_node(context: str | None = None, *, node: str | None = None, config_file: str | None = None,
              after_close: Sequence[Callable[[], None]] = ()) -> KubeNode:
    """Connect with the kubeconfig's context (the current one when None; in a pod without a kubeconfig, the pod's
    service account), pick the node and start the run; `after_close` runs when the node is closed.

    The node, the reader image and the workload image can be set with NODECONF_KUBE_NODE,
    NODECONF_KUBE_HELPER_IMAGE and NODECONF_KUBE_WORKLOAD_IMAGE (defaults: Docker Hub images by their full
    names, from NODECONF_KUBE_MIRROR instead when set); NODECONF_KUBE_KEEP_IMAGES=1 runs the manifests' own
    images instead of the workload image. Only Linux nodes are chosen.
    """
    api_client, chosen = load_kube_context(context, config_file)
    api = ClientKubeApi(api_client)
    try:
        reason = unreachable_reason(api_client)
        if reason:
            raise KubeApiError(0, f"context {chosen}: {reason}")
        api.version()
        target = choose_node(api.list_nodes(), node or os.environ.get(ENV_NODE))
        kube_node = KubeNode(api, node_name(target), spec=f"kube:{chosen}", context=chosen,
                             helper_image=image(ENV_HELPER_IMAGE, DEFAULT_HELPER_IMAGE),
                             workload_image=image(ENV_WORKLOAD_IMAGE, DEFAULT_WORKLOAD_IMAGE),
                             keep_images=os.environ.get(ENV_KEEP_IMAGES, "") not in ("", "0"),
                             after_close=after_close)
    except BaseException:
        api.close()
        raise
    return kube_node.start()

