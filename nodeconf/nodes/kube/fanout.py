"""Whole-cluster runs: `kube[:CONTEXT]?nodes=all|SELECTOR` becomes one `kube[:CONTEXT]?node=NAME` spec per Ready
Linux node the label selector matches, listed once by `nodeconf run` before pytest starts.

Source: issue 16 item 3; the API server filters GET /api/v1/nodes by `labelSelector` (the `kubectl get nodes -l`
syntax, apimachinery labels.Parse); Ready and the OS as in opener.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from nodeconf.errors import InputError
from nodeconf.nodes.kube.api import ClientKubeApi, KubeApi, KubeApiError, load_kube_context, unreachable_reason
from nodeconf.nodes.kube.facts import node_name
from nodeconf.nodes.kube.opener import OS_LABEL, is_linux, is_ready, node_os, virtual_reason
from nodeconf.nodes.spec import (
    MAX_FANOUT,
    MAX_OPTION,
    NAME_OPTION,
    NODE_NAME,
    NODE_OPTION,
    NODES_OPTION,
    NodeSpec,
    parse_node_spec,
)

ALL = "all"  # nodes=all: no label selector
SHOWN_DROPS = 4  # at most this many dropped nodes are named in a refusal (the line stays short)
ID_LENGTH = 63  # NODE_NAME's bound


def label_selector(spec: NodeSpec) -> str:
    """The labelSelector the spec's nodes= asks for: empty for `all`."""
    nodes = spec.option(NODES_OPTION) or ""
    return "" if nodes == ALL else nodes


def drop_reason(node: Mapping[str, Any]) -> str | None:
    """Why a listed node is not run on (not Linux, not Ready, virtual), None when it is."""
    if not is_linux(node):
        return f"not Linux ({OS_LABEL}={node_os(node)})"
    if not is_ready(node):
        return "not Ready"
    return virtual_reason(node)


def selected_nodes(nodes: Sequence[Mapping[str, Any]], spec: NodeSpec) -> list[str]:
    """The names of the Ready Linux nodes, sorted; InputError when none is left or more than max= (default
    MAX_FANOUT: one pytest worker per node, and README's measurement: one controller core drives about 20)."""
    kept, dropped = [], []
    for node in nodes:
        reason = drop_reason(node)
        if reason is None:
            kept.append(node_name(node))
        else:
            dropped.append(f"{node_name(node)} {reason}")
    if not kept:
        seen = "; ".join(dropped[:SHOWN_DROPS]) + (f"; {len(dropped) - SHOWN_DROPS} more" if
                                                    len(dropped) > SHOWN_DROPS else "")
        raise InputError(f"{spec}: no Ready Linux node matches {NODES_OPTION}={spec.option(NODES_OPTION)} "
                         f"({len(nodes)} seen{': ' + seen if seen else ''})", field="--node")
    limit = int(spec.option(MAX_OPTION) or MAX_FANOUT)
    if len(kept) > limit:
        raise InputError(f"{spec}: {len(kept)} Ready Linux nodes match, more than max={limit} (one pytest worker "
                         f"per node): narrow {NODES_OPTION}= with a label selector (e.g. "
                         f"{NODES_OPTION}=node-role.kubernetes.io/worker) or raise max=", field="--node")
    return sorted(kept)


def run_name(node: str, prefix: str | None) -> str:
    """The node's name in check ids: `PREFIX-NODE` or NODE; one too long for an id (with room for a `_`) is cut
    and given a hash of the whole, so two long names stay apart."""
    name = f"{prefix}-{node}" if prefix else node
    limit = ID_LENGTH - 1
    if NODE_NAME.fullmatch(name) and len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9].rstrip('.-')}-{digest}"


def run_names(nodes: Sequence[str], prefix: str | None) -> list[str]:
    """Each node's id name; a name that is another's prefix before `-` (`w` and `w-2`, which check ids cannot tell
    apart) gets a trailing `_`, which no node name has (DNS-1123)."""
    names = [run_name(node, prefix) for node in nodes]
    return [f"{name}_" if any(other.startswith(name + "-") for other in names) else name for name in names]


def expand_nodes(spec: NodeSpec, nodes: Sequence[Mapping[str, Any]]) -> list[NodeSpec]:
    """One `kube[:CONTEXT]?node=NAME&name=ID` spec per selected node (the spec's name= prefixes every ID)."""
    base = spec.written
    chosen = selected_nodes(nodes, spec)
    return [parse_node_spec(f"{base}?{NODE_OPTION}={quote(node)}&{NAME_OPTION}={quote(name)}")
            for node, name in zip(chosen, run_names(chosen, spec.option(NAME_OPTION)), strict=True)]


def _client_api(context: str | None) -> KubeApi:
    """The driver's API client for the context, after the same reachability probe the driver makes."""
    api_client, chosen = load_kube_context(context)
    reason = unreachable_reason(api_client)
    if reason:
        api_client.close()
        raise KubeApiError(0, f"context {chosen}: {reason}")
    return ClientKubeApi(api_client)


def expand_kube_spec(spec: NodeSpec, context: str | None) -> list[NodeSpec]:
    """The spec itself, or for nodes= the specs of the selected nodes of the context's cluster (listed once, GET
    /api/v1/nodes with the labelSelector); InputError (exit 2) when the cluster cannot be listed or nothing fits."""
    if spec.option(NODES_OPTION) is None:
        return [spec]
    try:
        api = _client_api(context)
        try:
            listed = api.list_nodes(label_selector(spec))
        finally:
            api.close()
    except KubeApiError as err:
        raise InputError(f"{spec}: cannot list the cluster's nodes: {err}", field="--node") from None
    return expand_nodes(spec, listed)
