"""Pods, LimitRanges and ResourceQuotas written back as the minimal core/v1 manifests they were read from (what
crosses the wire to a node agent and what the kube driver creates through the API).

Source: the Kubernetes API reference (core/v1 Pod, LimitRange, ResourceQuota).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeconf.manifest import Container, LimitRange, NamespaceObject, Pod, Resources


def pod_to_dict(pod: Pod) -> dict[str, Any]:
    """The pod as a minimal core/v1 manifest (what crosses the wire to a node agent)."""

    def res(r: Resources) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if r.requests:
            out["requests"] = {k: str(v) for k, v in r.requests.items()}
        if r.limits:
            out["limits"] = {k: str(v) for k, v in r.limits.items()}
        return out

    def ctr(c: Container) -> dict[str, Any]:
        out: dict[str, Any] = {"name": c.name, "image": c.image}
        if c.command:
            out["command"] = list(c.command)
        if c.args:
            out["args"] = list(c.args)
        if not c.resources.is_empty():
            out["resources"] = res(c.resources)
        if c.restart_policy is not None:
            out["restartPolicy"] = c.restart_policy
        if c.resize_policy:
            out["resizePolicy"] = [{"resourceName": k, "restartPolicy": v} for k, v in c.resize_policy.items()]
        return out

    spec: dict[str, Any] = {"restartPolicy": pod.restart_policy, "containers": [ctr(c) for c in pod.containers]}
    if pod.init_containers:
        spec["initContainers"] = [ctr(c) for c in pod.init_containers]
    if pod.resources is not None:
        spec["resources"] = res(pod.resources)
    if pod.overhead:
        spec["overhead"] = {k: str(v) for k, v in pod.overhead.items()}
    if pod.priority_value is not None:
        spec["priority"] = pod.priority_value
    if pod.priority_class_name:
        spec["priorityClassName"] = pod.priority_class_name
    if pod.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = pod.active_deadline_seconds
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if pod.annotations:
        meta["annotations"] = dict(pod.annotations)
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def namespace_object_to_dict(obj: NamespaceObject) -> dict[str, Any]:
    """A LimitRange or ResourceQuota as the manifest the agent parses."""
    meta = {"name": obj.name, "namespace": obj.namespace}

    def quantities(items: Mapping[str, Any]) -> dict[str, str]:
        return {k: str(v) for k, v in items.items()}

    if isinstance(obj, LimitRange):
        limits = [
            {"type": item.type, "default": quantities(item.default),
             "defaultRequest": quantities(item.default_request), "min": quantities(item.min),
             "max": quantities(item.max), "maxLimitRequestRatio": quantities(item.max_limit_request_ratio)}
            for item in obj.limits
        ]
        return {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta, "spec": {"limits": limits}}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta,
            "spec": {"hard": quantities(obj.hard), "scopes": list(obj.scopes)}}
