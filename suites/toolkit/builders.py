"""Pods written as short resource specs, for checks and tests that need no seed manifest: containers and pods as
core/v1 manifests, and as typed pods through the same parser the CLI uses.

Source: issue 12 (one pod builder instead of one per suite and test module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict

KI = 2**10
MI = 2**20
GI = 2**30
IMAGE = "busybox:1.37"


def container(name: str = "c", requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None,
              *, command: Sequence[str] | None = None, image: str = IMAGE, **extra: Any) -> dict[str, Any]:
    """One container manifest; `extra` adds fields such as restartPolicy (`Always`: a sidecar)."""
    spec: dict[str, Any] = {"name": name, "image": image, **extra}
    if command:
        spec["command"] = list(command)
    resources = {k: dict(v) for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        spec["resources"] = resources
    return spec


def pod_manifest(*containers: dict[str, Any], name: str = "p", init: Sequence[dict[str, Any]] = (),
                 resources: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None,
                 **spec: Any) -> dict[str, Any]:
    """A core/v1 Pod manifest of the containers (one default container when none is given)."""
    body: dict[str, Any] = {"containers": list(containers) or [container()], **spec}
    if init:
        body["initContainers"] = list(init)
    if resources is not None:
        body["resources"] = dict(resources)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **(meta or {})}, "spec": body}


def typed_pod(manifest: Mapping[str, Any], source: str = "test") -> Pod:
    """The Pod a manifest describes, through the parser the CLI uses."""
    found = object_from_dict(manifest, source)
    if not isinstance(found, Pod):
        raise TypeError(f"{source}: a {type(found).__name__}, not a Pod")
    return found


def pod(*containers: dict[str, Any], name: str = "p", init: Sequence[dict[str, Any]] = (),
        resources: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None, **spec: Any) -> Pod:
    """A typed Pod of the containers (pod_manifest, then the CLI's parser)."""
    return typed_pod(pod_manifest(*containers, name=name, init=init, resources=resources, meta=meta, **spec))
