"""A resize patch applied to a pod: the resize subresource's strategic merge on resources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeconf.errors import InputError
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.manifest_writer import pod_to_dict


def patched_pod(pod: Pod, patch: Mapping[str, Any]) -> Pod:
    """The pod after a resize patch: `spec.containers[].resources` and `spec.resources` merged by key
    (strategic merge on the resize subresource: containers by name, resource maps key by key). Any other key of a
    container entry (env, say) is dropped, as the resize subresource drops it (strategy.go dropNonResizeUpdates)."""
    doc = pod_to_dict(pod)
    spec = patch.get("spec")
    if not isinstance(spec, Mapping) or not set(spec) <= {"containers", "initContainers", "resources"}:
        raise InputError("a resize patch holds only spec.containers, spec.initContainers, spec.resources")
    for section in ("containers", "initContainers"):
        for i, change in enumerate(spec.get(section) or []):
            target = next((c for c in doc["spec"].get(section, []) if c["name"] == change.get("name")), None)
            if target is None:
                raise InputError(f"no container {change.get('name')!r}", field=f"spec.{section}[{i}].name")
            target["resources"] = _merge_resources(target.get("resources", {}), change.get("resources") or {})
    if "resources" in spec:
        doc["spec"]["resources"] = _merge_resources(doc["spec"].get("resources", {}), spec["resources"])
    obj = object_from_dict(doc, source="resize")
    assert isinstance(obj, Pod)
    return obj


def _merge_resources(current: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: dict(value) for key, value in current.items()}
    for key in ("requests", "limits"):
        if key in change:
            out[key] = {**out.get(key, {}), **change[key]}
    return out
