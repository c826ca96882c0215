"""The kubelet configuration of a cluster node, read from /configz through the API server's node proxy and held
against the configuration a check needs (a cluster's kubelet cannot be reconfigured from here).

Source: kubelet /configz (pkg/kubelet/server/server.go); issue 12 (the kube driver split at its seams).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import NotApplicable
from nodeconf.nodes.kinds import node_kind
from nodeconf.nodes.kube.api import KubeApi, KubeApiError
from nodeconf.nodes.kube.facts import (
    is_kind_node,
    kubelet_config_differences,
    kubelet_minor_version,
    live_kubelet_config,
    present_fields,
)
from nodeconf.semantics.profile import SUPPORTED_VERSIONS


class KubeletConfigNotApplicable(NotApplicable):
    """The node's kubelet runs another configuration or version than the check needs: the check is skipped."""


def read_running_config(api: KubeApi, node_name: str) -> tuple[KubeletConfig, frozenset[str]]:
    """The kubelet configuration the node runs (its /configz, the kubelet's defaults filled in) and the fields
    /configz shows; KubeletConfigNotApplicable when it cannot be read or holds values nodeconf does not model."""
    try:
        configz = api.node_proxy(node_name, "configz")
    except KubeApiError as err:
        if err.status not in (401, 403, 404):
            raise
        raise KubeletConfigNotApplicable(
            f"the kubelet configuration of node {node_name} cannot be read ({err}); /configz needs `get` on "
            f"nodes/proxy (nodeconf/infra/kube/rbac.yaml): checks that need a kubelet configuration are skipped"
        ) from None
    try:
        return live_kubelet_config(configz, node_name), present_fields(configz)
    except InputError as err:
        raise KubeletConfigNotApplicable(
            f"node {node_name} runs a kubelet configuration nodeconf does not model ({err}): checks that "
            f"need a kubelet configuration are skipped") from None


def require_running_config(node_name: str, node: Mapping[str, Any], running: tuple[KubeletConfig, frozenset[str]],
                           config: KubeletConfig, version: str | None) -> None:
    """Accept the kubelet config the node already runs, refuse (KubeletConfigNotApplicable, naming each field
    and both values) any other. Only the fields the node's /configz shows are compared."""
    live, present = running
    kubelet = kubelet_minor_version(node)
    profile = version or (kubelet if kubelet in SUPPORTED_VERSIONS else None)
    differences = kubelet_config_differences(config, live, profile, present)
    if version is not None and kubelet != version:
        differences.insert(0, f"profile: requested {version}, node has kubelet {kubelet}")
    if differences:
        how = node_kind("kind" if is_kind_node(node) else "kube").advice(config)
        raise KubeletConfigNotApplicable(
            f"node {node_name} runs another kubelet configuration ({'; '.join(differences)}); "
            f"its kubelet cannot be reconfigured from here: {how}")
