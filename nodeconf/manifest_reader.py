"""Parsing of one Kubernetes document into the typed objects of nodeconf.manifest, refusing bad fields."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from nodeconf.errors import InputError, shown
from nodeconf.manifest import CPU, Container, LimitRange, LimitRangeItem, Pod, ResourceQuota, Resources, Workload
from nodeconf.quantity import Quantity, QuantityError, beyond_int64


class _Reader:
    """Reads typed fields out of a dict, raising InputError with the field's path."""

    def __init__(self, source: str, obj: str) -> None:
        self.source = source
        self.obj = obj

    def fail(self, path: str, problem: str) -> InputError:
        return InputError(problem, source=self.source, obj=self.obj, field=path)

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, f"expected a mapping, got {type(value).__name__}")
        return value

    def sequence(self, value: Any, path: str) -> Sequence[Any]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list, got {type(value).__name__}")
        return value

    def string(self, value: Any, path: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(path, f"expected a string, got {shown(value)}")
        return value

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        return tuple(self.string(item, f"{path}[{i}]") for i, item in enumerate(self.sequence(value, path)))

    def int32(self, value: Any, path: str) -> int | None:
        """An int32 field (core/v1 `priority`): the API server's decoder refuses anything else."""
        return self._integer(value, path, 32)

    def int64(self, value: Any, path: str) -> int | None:
        """An int64 field (core/v1 `activeDeadlineSeconds`): the API server's decoder refuses anything else."""
        return self._integer(value, path, 64)

    def _integer(self, value: Any, path: str, bits: int) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise self.fail(path, f"expected a {bits}-bit integer, got {shown(value)}")
        return value

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        """A map[string]string (labels, annotations): non-string values are refused, as the decoder does."""
        out: dict[str, str] = {}
        for key, item in self.mapping(value, path).items():
            if not isinstance(item, str):
                raise self.fail(f"{path}.{key}", f"expected a string, got {shown(item)}")
            out[str(key)] = item
        return out

    def resource_list(self, value: Any, path: str) -> dict[str, Quantity]:
        out: dict[str, Quantity] = {}
        for name, raw in self.mapping(value, path).items():
            try:
                q = Quantity.parse(raw)
            except QuantityError as err:
                raise self.fail(f"{path}.{name}", str(err)) from None
            if beyond_int64(q, milli=str(name) == CPU):
                raise self.fail(f"{path}.{name}", f"{shown(raw)} is beyond int64: the kubelet reads quantities as "
                                "int64 (resource.Quantity Value, MilliValue for cpu)")
            out[str(name)] = q
        return out

    def resources(self, value: Any, path: str) -> Resources:
        spec = self.mapping(value, path)
        return Resources(
            requests=self.resource_list(spec.get("requests"), f"{path}.requests"),
            limits=self.resource_list(spec.get("limits"), f"{path}.limits"),
        )

    def container(self, value: Any, path: str) -> Container:
        spec = self.mapping(value, path)
        name = self.string(spec.get("name"), f"{path}.name")
        if not name:
            raise self.fail(f"{path}.name", "a container needs a name")
        resize: dict[str, str] = {}
        for i, entry in enumerate(self.sequence(spec.get("resizePolicy"), f"{path}.resizePolicy")):
            item = self.mapping(entry, f"{path}.resizePolicy[{i}]")
            resource = self.string(item.get("resourceName"), f"{path}.resizePolicy[{i}].resourceName")
            policy = self.string(item.get("restartPolicy"), f"{path}.resizePolicy[{i}].restartPolicy")
            if policy not in ("NotRequired", "RestartContainer"):
                raise self.fail(f"{path}.resizePolicy[{i}].restartPolicy", f"unknown value {shown(policy)}")
            resize[resource] = policy
        restart = spec.get("restartPolicy")
        return Container(
            name=name,
            image=self.string(spec.get("image"), f"{path}.image"),
            command=self.strings(spec.get("command"), f"{path}.command"),
            args=self.strings(spec.get("args"), f"{path}.args"),
            resources=self.resources(spec.get("resources"), f"{path}.resources"),
            restart_policy=self.string(restart, f"{path}.restartPolicy") if restart is not None else None,
            resize_policy=resize,
        )

    def item_list(self, value: Any, path: str) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.mapping(v, f"{path}[{i}]") for i, v in enumerate(self.sequence(value, path)))


def _metadata(doc: Mapping[str, Any], source: str, kind: str) -> tuple[_Reader, str, str, Mapping[str, Any]]:
    meta = doc.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise InputError("expected a mapping", source=source, obj=kind, field="metadata")
    meta = meta or {}
    name = meta.get("name") or meta.get("generateName") or ""
    if not isinstance(name, str) or not name:
        raise InputError("every object needs a name", source=source, obj=kind, field="metadata.name")
    reader = _Reader(source, f"{kind}/{name}")
    namespace = reader.string(meta.get("namespace"), "metadata.namespace", "default")
    return reader, name, namespace, meta


def pod_from_spec(
    name: str,
    namespace: str,
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    reader: _Reader,
    prefix: str = "spec",
) -> Pod:
    """A Pod from its metadata and spec (also a workload's pod template)."""
    containers = tuple(
        reader.container(c, f"{prefix}.containers[{i}]")
        for i, c in enumerate(reader.sequence(spec.get("containers"), f"{prefix}.containers"))
    )
    if not containers:
        raise reader.fail(f"{prefix}.containers", "a pod needs at least one container")
    init = tuple(
        reader.container(c, f"{prefix}.initContainers[{i}]")
        for i, c in enumerate(reader.sequence(spec.get("initContainers"), f"{prefix}.initContainers"))
    )
    pod_resources = spec.get("resources")
    annotations = reader.string_map(meta.get("annotations"), "metadata.annotations")
    labels = reader.string_map(meta.get("labels"), "metadata.labels")
    return Pod(
        name=name,
        namespace=namespace,
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        containers=containers,
        init_containers=init,
        resources=reader.resources(pod_resources, f"{prefix}.resources") if pod_resources is not None else None,
        overhead=reader.resource_list(spec.get("overhead"), f"{prefix}.overhead"),
        priority_value=reader.int32(spec.get("priority"), f"{prefix}.priority"),
        priority_class_name=reader.string(spec.get("priorityClassName"), f"{prefix}.priorityClassName"),
        annotations=annotations,
        labels=labels,
        restart_policy=reader.string(spec.get("restartPolicy"), f"{prefix}.restartPolicy", "Always"),
        active_deadline_seconds=reader.int64(spec.get("activeDeadlineSeconds"), f"{prefix}.activeDeadlineSeconds"),
        source=reader.source,
    )


# Workload kinds whose pod template is at spec.template (apps/v1, batch/v1); CronJob nests one level deeper.
_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
OBJECT_KINDS = ("Pod", "LimitRange", "ResourceQuota", *_TEMPLATE_PATHS)


def _count(reader: _Reader, spec: Mapping[str, Any], key: str, path: str, default: int) -> int:
    value = reader.int32(spec.get(key), f"{path}.{key}")
    if value is not None and value < 0:
        raise reader.fail(f"{path}.{key}", f"must not be negative, got {value}")
    return default if value is None else value


def _job_pods(reader: _Reader, spec: Mapping[str, Any], path: str) -> tuple[int, str]:
    """Pods a Job runs at once: `parallelism` (default 1), at most `completions`; none while suspended.

    Source: batch/v1 SetDefaults_Job (parallelism 1; completions 1 when neither is set), the job controller's
    manageJob (active pods = min(parallelism, remaining completions)), `spec.suspend`.
    """
    if spec.get("suspend") is True:
        return 0, f"{path}.suspend: true"
    parallelism = _count(reader, spec, "parallelism", path, 1)
    completions = _count(reader, spec, "completions", path, parallelism)
    if completions < parallelism:
        return completions, f"{path}.completions"
    return parallelism, f"{path}.parallelism"


def _workload(reader: _Reader, kind: str, name: str, doc: Mapping[str, Any]) -> Workload:
    """How many pods of the workload one node runs when all of it lands there (the worst case for the node).

    Source: apps/v1 defaults (`replicas` 1) for Deployment, ReplicaSet, ReplicationController and StatefulSet; a
    DaemonSet runs one pod per node; a Job `parallelism` (see _job_pods); a CronJob one Job of its jobTemplate at a
    time (concurrencyPolicy Allow may overlap two; not counted), none while suspended.
    """
    spec = reader.mapping(doc.get("spec"), "spec")
    if kind == "DaemonSet":
        pods, counted = 1, "one per node"
    elif kind == "Job":
        pods, counted = _job_pods(reader, spec, "spec")
    elif kind == "CronJob":
        job_spec = reader.mapping(reader.mapping(spec.get("jobTemplate"), "spec.jobTemplate").get("spec"),
                                  "spec.jobTemplate.spec")
        pods, counted = (0, "spec.suspend: true") if spec.get("suspend") is True else _job_pods(
            reader, job_spec, "spec.jobTemplate.spec")
    else:
        pods, counted = _count(reader, spec, "replicas", "spec", 1), "spec.replicas"
    return Workload(kind, name, pods, counted)


def object_from_dict(doc: Any, source: str = "") -> Pod | LimitRange | ResourceQuota:
    """Build the typed object for one Kubernetes document; InputError for anything else."""
    if not isinstance(doc, Mapping) or "kind" not in doc:
        raise InputError("not a Kubernetes object (no kind)", source=source)
    kind = doc["kind"]
    if kind == "KubeletConfiguration":
        raise InputError("a KubeletConfiguration is not a manifest: give it with --kubelet-config", source=source)
    if kind not in OBJECT_KINDS:
        raise InputError(f"unknown kind {shown(kind)} (expected one of {', '.join(OBJECT_KINDS)})", source=source)
    reader, name, namespace, meta = _metadata(doc, source, kind)
    if kind == "Pod":
        return pod_from_spec(name, namespace, meta, reader.mapping(doc.get("spec"), "spec"), reader)
    if kind == "LimitRange":
        spec = reader.mapping(doc.get("spec"), "spec")
        items = []
        for i, item in enumerate(reader.item_list(spec.get("limits"), "spec.limits")):
            path = f"spec.limits[{i}]"
            items.append(
                LimitRangeItem(
                    type=reader.string(item.get("type"), f"{path}.type", "Container"),
                    default=reader.resource_list(item.get("default"), f"{path}.default"),
                    default_request=reader.resource_list(item.get("defaultRequest"), f"{path}.defaultRequest"),
                    min=reader.resource_list(item.get("min"), f"{path}.min"),
                    max=reader.resource_list(item.get("max"), f"{path}.max"),
                    max_limit_request_ratio=reader.resource_list(
                        item.get("maxLimitRequestRatio"), f"{path}.maxLimitRequestRatio"
                    ),
                )
            )
        return LimitRange(name=name, namespace=namespace, limits=tuple(items))
    if kind == "ResourceQuota":
        spec = reader.mapping(doc.get("spec"), "spec")
        return ResourceQuota(
            name=name,
            namespace=namespace,
            hard=reader.resource_list(spec.get("hard"), "spec.hard"),
            scopes=reader.strings(spec.get("scopes"), "spec.scopes"),
        )
    template: Any = doc
    walked: list[str] = []
    for key in _TEMPLATE_PATHS[kind]:
        template = reader.mapping(template, ".".join(walked) or kind).get(key)
        walked.append(key)
    prefix = ".".join(_TEMPLATE_PATHS[kind])
    template = reader.mapping(template, prefix)
    template_meta = reader.mapping(template.get("metadata"), f"{prefix}.metadata")
    merged_meta = {**template_meta, "uid": meta.get("uid")}
    pod = pod_from_spec(
        name, namespace, merged_meta, reader.mapping(template.get("spec"), f"{prefix}.spec"), reader,
        prefix=f"{prefix}.spec",
    )
    return replace(pod, workload=_workload(reader, kind, name, doc))
