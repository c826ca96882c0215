"""Pod manifests for a Kubernetes node and the reading of Pod and Event objects (core/v1 JSON) into the protocol."""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nodeconf.manifest import Pod
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import ContainerState, ResizeStatus, Terminated
from nodeconf.nodes.kube import reader as kube_reader
from nodeconf.nodes.kube.api import dig
from nodeconf.quantity import Quantity, QuantityError
from nodeconf.resources import locate_tree
from nodeconf.semantics.expectation import Event
from nodeconf.semantics.resize import ResizeStatus as Outcome
from nodeconf.workloads import NODE_HOME, SLEEPER

MANAGED_BY = ("app.kubernetes.io/managed-by", "nodeconf")
RUN_LABEL = "nodeconf.io/run"
HELPER_NAME = "nodeconf-reader"
HELPER_CGROUP_MOUNT = "/host/cgroup"
READER_CONFIGMAP = "nodeconf-reader"
READER_DIR = f"{NODE_HOME}/reader"
READER_FILE = "kube_reader.py"
READER_CONTAINER = "reader"
PROGRAMS_CONFIGMAP = "nodeconf-programs"
# Waiting reasons of a container that does not start (kubelet images/types.go, kuberuntime_container.go): an
# infrastructure fault, not a node behaviour under test. The kubelet retries pulls and container creation
# with a back-off, so these are fatal only when they last (a registry hiccup, a config map not yet visible);
# the PERMANENT ones never change without a new pod spec (ImageInspectError: CRI-O >= 1.34 refusing a short
# image name in enforcing short-name mode, cri-o#9401). Each carries the runtime's or registry's message.
START_FAILURES = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                            "ImageInspectError", "CreateContainerConfigError", "CreateContainerError"})
PERMANENT_START_FAILURES = frozenset({"InvalidImageName", "ErrImageNeverPull", "ImageInspectError"})
# The reader pod's requests and limits: equal, so it is Guaranteed and its usage stays under its request (the
# kubelet evicts pods using more than they request first, pkg/kubelet/eviction/helpers.go rankMemoryPressure);
# the CPU limit is CFS quota, so it stays high enough for a python3 start and a /proc scan per exec.
HELPER_RESOURCES = {"cpu": "500m", "memory": "128Mi"}
# The kubelet stops the reader after this long even when the run that made it was killed and no `nodeconf clean`
# came (activeDeadlineSeconds, pkg/kubelet/active_deadline.go): longer than any run, 12 h.
READER_DEADLINE_SECONDS = 12 * 3600
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RUNTIME_ID = re.compile(r"^[a-z0-9-]+://(?P<id>[0-9a-f]{12,64})$")


def is_dns_label(name: str) -> bool:
    """RFC 1123 label (namespace and node-local names): lowercase alphanumerics and '-', at most 63."""
    return len(name) <= 63 and _DNS_LABEL.match(name) is not None


def kube_namespace(run_id: str, namespace: str) -> str:
    """The run's namespace standing in for a manifest namespace: `nodeconf-<run>-<ns>` (hashed when too long)."""
    name = f"nodeconf-{run_id}-{namespace}"
    if is_dns_label(name):
        return name
    return f"nodeconf-{run_id}-{hashlib.sha256(namespace.encode()).hexdigest()[:10]}"


def labels(run_id: str) -> dict[str, str]:
    return {MANAGED_BY[0]: MANAGED_BY[1], RUN_LABEL: run_id}


def namespace_manifest(name: str, run_id: str, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A run namespace (with the run's lease annotations); Pod Security admission set to privileged (the reader
    pod needs hostPID)."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "annotations": dict(annotations),
                         "labels": {**labels(run_id), "pod-security.kubernetes.io/enforce": "privileged"}}}


def helper_pod_manifest(namespace: str, node: str, run_id: str, image: str) -> dict[str, Any]:
    """The evidence reader's pod: on the node, host PIDs, the host's cgroup2 mount read-only, Guaranteed; the
    reader program comes from a ConfigMap (an exec's argv travels in the URL: it stays short)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": HELPER_NAME, "namespace": namespace, "labels": labels(run_id)},
        "spec": {
            "nodeName": node, "hostPID": True, "restartPolicy": "Always", "terminationGracePeriodSeconds": 0,
            "activeDeadlineSeconds": READER_DEADLINE_SECONDS,
            "automountServiceAccountToken": False, "tolerations": [{"operator": "Exists"}],
            "containers": [{
                "name": "reader", "image": image, "command": ["sleep", "infinity"],
                "securityContext": {"privileged": True},
                "resources": {"requests": dict(HELPER_RESOURCES), "limits": dict(HELPER_RESOURCES)},
                "volumeMounts": [{"name": "cgroup", "mountPath": HELPER_CGROUP_MOUNT, "readOnly": True},
                                 {"name": "reader", "mountPath": READER_DIR, "readOnly": True}],
            }],
            "volumes": [{"name": "cgroup", "hostPath": {"path": "/sys/fs/cgroup", "type": "Directory"}},
                        {"name": "reader", "configMap": {"name": READER_CONFIGMAP}}],
        },
    }


def configmap(name: str, namespace: str, run_id: str, files: Mapping[str, str]) -> dict[str, Any]:
    """A ConfigMap of text files (the reader, the workload programs), mounted read-only into pods."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels(run_id)}, "data": dict(files)}


def programs_configmap(namespace: str, run_id: str, programs: Mapping[str, str]) -> dict[str, Any]:
    """The workload programs (memhog.py, cpuburn.py), mounted where the enforcer puts them."""
    return configmap(PROGRAMS_CONFIGMAP, namespace, run_id, programs)


def node_tolerations(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One toleration per NoSchedule or NoExecute taint of the node (any value), so the node's taints do not
    refuse or evict nodeconf's pods on a shared node (the kubelet admits a bound pod only if it tolerates the
    node's NoExecute taints, the taint controller evicts it otherwise; PreferNoSchedule refuses nothing)."""
    out = []
    for taint in dig(node, "spec", "taints") or ():
        if isinstance(taint, Mapping) and taint.get("effect") in ("NoSchedule", "NoExecute") and taint.get("key"):
            out.append({"key": str(taint["key"]), "operator": "Exists", "effect": str(taint["effect"])})
    return out


def pod_manifest(pod: Pod, namespace: str, node: str, run_id: str, *, default_image: str, program_image: str,
                 programs_dir: str, keep_images: bool = False,
                 tolerations: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The pod for the API: in the run namespace, bound to the node (the kubelet admits it, no scheduler).

    Like the enforcer, which runs a container's command + args or else a sleeper and never looks at its image
    (nodeconf/enforcer/process.py container_argv), every container runs `default_image` (a sleeper when it has
    neither command nor args): the seeds' images (`cache:latest`, `ghcr.io/example/hello:1.0`) are examples,
    not part of the semantics. `keep_images` keeps the manifests' images instead. A container whose command
    names a workload program runs `program_image` with the programs mounted at `programs_dir`. `tolerations`
    (node_tolerations) are added to the pod's own.
    """
    doc = pod_to_dict(pod)
    meta = doc["metadata"]
    meta.pop("uid", None)
    meta["namespace"] = namespace
    meta["labels"] = {**meta.get("labels", {}), **labels(run_id)}
    spec = doc["spec"]
    spec["nodeName"] = node
    spec["terminationGracePeriodSeconds"] = 0
    if tolerations:
        spec["tolerations"] = [*spec.get("tolerations", ()), *(dict(t) for t in tolerations)]
    uses_programs = False
    for container in [*spec.get("initContainers", ()), *spec["containers"]]:
        words = [*container.get("command", ()), *container.get("args", ())]
        if any(programs_dir in word for word in words):
            uses_programs = True
            container["image"] = program_image
            container["volumeMounts"] = [{"name": "programs", "mountPath": programs_dir, "readOnly": True}]
        elif not keep_images or not container.get("image"):
            container["image"] = default_image
            if not words:
                container["command"] = list(SLEEPER)
    if uses_programs:
        spec["volumes"] = [{"name": "programs", "configMap": {"name": PROGRAMS_CONFIGMAP}}]
    return doc


def _statuses(pod_obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = pod_obj.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def container_ids(pod_obj: Mapping[str, Any]) -> dict[str, str]:
    """Container name → runtime container id (`containerd://<hex>` → `<hex>`), for containers that have one."""
    out = {}
    for status in _statuses(pod_obj):
        match = _RUNTIME_ID.match(str(status.get("containerID") or ""))
        if match:
            out[str(status["name"])] = match["id"]
    return out


def container_state(status: Mapping[str, Any]) -> ContainerState:
    """A ContainerState from one core/v1 ContainerStatus."""
    state = status.get("state") or {}
    kind = next((k for k in ("running", "terminated", "waiting") if k in state), "waiting")
    detail = state.get(kind) or {}
    last = dig(status, "lastState", "terminated")
    return ContainerState(
        name=str(status["name"]), state=kind, reason=str(detail.get("reason") or ""),
        exit_code=detail.get("exitCode") if kind == "terminated" else None,
        restart_count=int(status.get("restartCount") or 0),
        last_terminated=Terminated(int(last.get("exitCode", 0)), str(last.get("reason") or "")) if last else None,
        resources=_resource_doc(status.get("resources")),
        allocated_resources=quantities(status.get("allocatedResources")),
    )


def quantities(doc: object) -> dict[str, str] | None:
    """A core/v1 ResourceList as names → quantity texts; None when absent."""
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, Mapping) else None


def _resource_doc(doc: object) -> dict[str, dict[str, str]] | None:
    """A core/v1 ResourceRequirements' requests and limits (None when the status has no resources)."""
    if not isinstance(doc, Mapping):
        return None
    return {k: q for k in ("requests", "limits") if (q := quantities(doc.get(k)))}


def container_states(pod_obj: Mapping[str, Any]) -> dict[str, ContainerState]:
    return {str(s["name"]): container_state(s) for s in _statuses(pod_obj)}


def _started(status: Mapping[str, Any]) -> bool:
    state = status.get("state") or {}
    return "running" in state or "terminated" in state or bool(dig(status, "lastState", "terminated"))


def admission(pod_obj: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]] | None:
    """(admitted, errors) once the kubelet has decided, None while it has not.

    A pod the kubelet refuses ends `Failed` before any container started, its reason (`OutOfmemory`, …)
    and message in the status (pkg/kubelet/kubelet.go rejectPod); an admitted one has every container
    started at least once, or has finished.
    """
    status = pod_obj.get("status") or {}
    phase = status.get("phase")
    statuses = list(status.get("containerStatuses") or ())
    if phase == "Failed" and not any(_started(s) for s in _statuses(pod_obj)):
        return False, (str(status.get("message") or status.get("reason") or "rejected by the kubelet"),)
    if phase in ("Succeeded", "Failed"):
        return True, ()
    expected = len(dig(pod_obj, "spec", "containers") or ())
    if phase == "Running" and len(statuses) >= expected and all(_started(s) for s in statuses):
        return True, ()
    return None


def start_failure(pod_obj: Mapping[str, Any]) -> tuple[str, bool] | None:
    """Why a container does not start (image pull, config error) and whether that is permanent, or None."""
    for status in _statuses(pod_obj):
        waiting = dig(status, "state", "waiting") or {}
        reason = waiting.get("reason")
        if reason in START_FAILURES:
            text = f"container {status['name']}: {reason}: {waiting.get('message', '')}".rstrip(": ")
            return text, reason in PERMANENT_START_FAILURES
    return None


def pod_events(items: Iterable[Mapping[str, Any]]) -> tuple[Event, ...]:
    """Events of one pod, oldest first."""

    def when(item: Mapping[str, Any]) -> str:
        return str(item.get("eventTime") or item.get("lastTimestamp") or item.get("firstTimestamp")
                   or dig(item, "metadata", "creationTimestamp") or "")

    return tuple(Event(str(e.get("type") or ""), str(e.get("reason") or ""), str(e.get("message") or ""))
                 for e in sorted(items, key=when))


def _same_quantities(want: Mapping[str, Any], have: Mapping[str, Any]) -> bool:
    try:
        return all(name in have and Quantity.parse(value) == Quantity.parse(have[name])
                   for name, value in want.items())
    except QuantityError:
        return False


def resources_actuated(pod_obj: Mapping[str, Any]) -> bool:
    """True when every container's status resources equal its spec resources (KEP-1287 status.resources)."""
    status_of = {s["name"]: s for s in (dig(pod_obj, "status", "containerStatuses") or ())}
    for container in dig(pod_obj, "spec", "containers") or ():
        actual = (status_of.get(container["name"]) or {}).get("resources")
        if actual is None:
            continue
        wanted = container.get("resources") or {}
        for kind in ("requests", "limits"):
            if not _same_quantities(wanted.get(kind) or {}, actual.get(kind) or {}):
                return False
    return True


def resize_status(pod_obj: Mapping[str, Any], requested: bool) -> ResizeStatus | None:
    """The last resize's status; None while the kubelet has not looked at it yet.

    Conditions `PodResizePending` (reason Deferred or Infeasible) and `PodResizeInProgress` (1.33+),
    the older `status.resize` string, else Applied once the status resources equal the spec.
    """
    status = pod_obj.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or () if c.get("status") == "True"}
    pending = conditions.get("PodResizePending")
    if pending is not None:
        return ResizeStatus(str(pending.get("reason") or Outcome.DEFERRED), str(pending.get("message") or ""))
    in_progress = conditions.get("PodResizeInProgress")
    if in_progress is not None:
        return ResizeStatus(Outcome.IN_PROGRESS, str(in_progress.get("message") or ""))
    legacy = status.get("resize")
    if legacy and legacy != "Proposed":
        return ResizeStatus(str(legacy))
    if not requested:
        return ResizeStatus("")
    generation, observed = dig(pod_obj, "metadata", "generation"), status.get("observedGeneration")
    if legacy == "Proposed" or (isinstance(generation, int) and isinstance(observed, int) and observed < generation):
        return None
    return ResizeStatus(Outcome.APPLIED) if resources_actuated(pod_obj) else None


def settled_resize(pod_obj: Mapping[str, Any]) -> ResizeStatus | None:
    """The resize's final outcome, None while the kubelet may still change it.

    As upstream's resize helper waits (test/e2e/framework/pod/resize.go WaitForPodResizeActuation): Infeasible
    is terminal; otherwise the resize is done once neither PodResizePending nor PodResizeInProgress is present
    and the status resources equal the spec. The kubelet sets PodResizeInProgress when it accepts a resize and
    clears it only after actuating it (pkg/kubelet/status/status_manager.go).
    """
    status = resize_status(pod_obj, True)
    if status is not None and status.status in (Outcome.INFEASIBLE, Outcome.APPLIED):
        return status
    return None


def workload_programs() -> dict[str, str]:
    """The workload programs (file name → source) the pods of the suites may run."""
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(locate_tree().programs.glob("*.py"))}


def reader_source() -> str:
    return inspect.getsource(kube_reader)


def reader_request(request: Mapping[str, Any]) -> str:
    """One JSON request for the reader, with the helper pod's /proc and cgroup mount unless given."""
    return json.dumps({"proc": "/proc", "cgroupRoot": HELPER_CGROUP_MOUNT, **request}, sort_keys=True)


def reader_argv(request: Mapping[str, Any]) -> list[str]:
    """The reader's argv in the helper pod: the mounted program and one JSON request (no shell)."""
    return ["python3", f"{READER_DIR}/{READER_FILE}", reader_request(request)]


def disruption_time(pod_obj: Mapping[str, Any]) -> float | None:
    """When the node disrupted the pod: its DisruptionTarget condition's lastTransitionTime (RFC 3339, seconds), set
    by the kubelet's eviction manager (KEP-3329, pkg/kubelet/eviction/eviction_manager.go evictPod); None without."""
    for condition in dig(pod_obj, "status", "conditions") or ():
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            stamp = str(condition.get("lastTransitionTime") or "")
            try:
                return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
    return None
