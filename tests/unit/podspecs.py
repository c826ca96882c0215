"""Compact pod builders for the oracle's unit tests: containers written as short resource specs."""

from __future__ import annotations

from typing import Any

from nodeconf.manifest import Pod, object_from_dict

GI = 2**30
MI = 2**20
KI = 2**10
# The article's lab node: 3479660Ki of memory, 2 cpus (requests-limits-qos "What the scheduler sees").
ARTICLE_NODE_MEMORY = 3479660 * KI


def ctr(name: str = "c", requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
        **extra: Any) -> dict[str, Any]:
    """One container spec; `extra` adds fields such as restartPolicy."""
    spec: dict[str, Any] = {"name": name, "image": "busybox", **extra}
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        spec["resources"] = resources
    return spec


def pod(*containers: dict[str, Any], name: str = "p", init: tuple[dict[str, Any], ...] = (),
        resources: dict[str, Any] | None = None, meta: dict[str, Any] | None = None, **spec: Any) -> Pod:
    """A Pod from container specs, through the same parser the CLI uses."""
    body: dict[str, Any] = {"containers": list(containers) or [ctr()], **spec}
    if init:
        body["initContainers"] = list(init)
    if resources is not None:
        body["resources"] = resources
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **(meta or {})}, "spec": body}
    result = object_from_dict(doc, "test")
    assert isinstance(result, Pod)
    return result
