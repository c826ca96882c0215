"""A pod of the Kubernetes driver: its status through the API, its evidence through the reader pod, in the
oracle's cgroup frame.

Source: issue 12 (the kube driver split at its seams); kube/node.py for the node it runs on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from nodeconf import names
from nodeconf.cgroup_files import evidence_files
from nodeconf.manifest import Pod
from nodeconf.nodes.base import (
    CgroupFiles,
    ContainerEvidence,
    ExecResult,
    NodeError,
    NotApplicable,
    PodEvidence,
    PodHandle,
    PodStatus,
    ResizeStatus,
)
from nodeconf.nodes.kube.api import KubeApi, KubeApiError, dig
from nodeconf.nodes.kube.paths import CgroupFrame
from nodeconf.nodes.kube.pods import (
    container_ids,
    container_states,
    disruption_time,
    pod_events,
    quantities,
    resize_status,
    settled_resize,
)
from nodeconf.nodes.kube.refusals import infrastructure_error, rejection
from nodeconf.nodes.kube.timeouts import Timeouts
from nodeconf.semantics.resize import ResizeStatus as ResizeOutcome


class PodHost(Protocol):
    """What a pod needs of its node (KubeNode): the API, the reader, the clock, the cgroup frame, deletion."""

    api: KubeApi
    timeouts: Timeouts
    paths: dict[str, str]
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    def read(self, op: str, **request: Any) -> dict[str, Any]: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def node_object(self) -> dict[str, Any]: ...

    def frame(self, kubepods: str) -> CgroupFrame: ...

# CRI-O drops the infra (pause) container of a pod without a shared PID namespace (crio.conf(5) drop_infra_ctr,
# default true since CRI-O 1.2x; OpenShift 4.7+): its pods have no pause process to compare.
CRIO_NO_PAUSE = "CRI-O runs no infra (pause) container for this pod (drop_infra_ctr)"


class Framed:
    """Reader answers turned into protocol values, their paths in the oracle's frame (kube/paths.py); every
    real path seen is remembered so the node's log can name it."""

    def __init__(self, frame: CgroupFrame, uids: Mapping[str, str], seen: dict[str, str]) -> None:
        self.frame = frame
        self.uids = uids
        self.seen = seen

    def cgroup(self, doc: Mapping[str, Any]) -> CgroupFiles:
        real = str(doc["path"])
        path = self.frame.canonical(real, self.uids)
        self.seen[path] = real
        return CgroupFiles(path, dict(doc.get("files") or {}))

    def container(self, name: str, doc: Mapping[str, Any]) -> ContainerEvidence:
        scope = doc.get("scope")
        return ContainerEvidence(name=name, cgroup=self.cgroup(doc), pids=tuple(doc.get("pids") or ()),
                                 oom_score_adj={int(p): adj for p, adj in (doc.get("oomScoreAdj") or {}).items()},
                                 scope=self.cgroup(scope) if scope else None)


class KubePod(PodHandle):
    """A pod on the node through the API; evidence through the reader pod."""

    def __init__(self, node: PodHost, pod: Pod, admitted: bool, errors: Sequence[str], namespace: str) -> None:
        super().__init__(pod, admitted, errors)
        self.node = node
        self.namespace = namespace
        self.name = pod.name
        self.resized = False

    def _require_admitted(self) -> None:
        if not self.admitted:
            raise NodeError(f"pod {self.pod.ref} was rejected: {'; '.join(self.errors)}")

    def read(self) -> dict[str, Any]:
        return self.node.api.read_pod(self.namespace, self.name)

    def status(self) -> PodStatus:
        self._require_admitted()
        return self._status(self.read())

    def _status(self, obj: Mapping[str, Any]) -> PodStatus:
        """The status as the API gives it: a termination reason is the runtime's, never rewritten from what the
        node's cgroups counted (an OOM kill containerd reported as `Error` is named by semantics/runtime_oom.py)."""
        status = obj.get("status") or {}
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        selector = f"involvedObject.kind=Pod,involvedObject.name={self.name}"
        events = self.node.api.list_events(self.namespace, f"{selector},involvedObject.uid={uid}" if uid else selector)
        return PodStatus(
            phase=str(status.get("phase") or ""), qos_class=str(status.get("qosClass") or ""),
            containers=container_states(obj), events=pod_events(events),
            reason=str(status.get("reason") or ""),
            message=str(status.get("message") or ""),
            resize=resize_status(obj, self.resized) or ResizeStatus(ResizeOutcome.IN_PROGRESS),
            disrupted_at=disruption_time(obj),
            allocated_resources=quantities(status.get("allocatedResources")),
        )

    def evidence(self, extra_files: Sequence[str] = ()) -> PodEvidence:
        self._require_admitted()
        obj = self.read()
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        doc = self.node.read("pod", podUid=names.uid(uid), containers=container_ids(obj),
                             files=evidence_files(extra_files))
        sandboxes = doc.get("sandboxes") or []
        ancestors = doc.get("ancestors") or []
        framed = Framed(self.node.frame(ancestors[0]["path"]), {uid: self.pod.uid}, self.node.paths)
        runtime = str(dig(self.node.node_object(), "status", "nodeInfo", "containerRuntimeVersion") or "")
        return PodEvidence(
            status=self._status(obj), pod_cgroup=framed.cgroup(doc["pod"]),
            containers={name: framed.container(name, c) for name, c in (doc.get("containers") or {}).items()},
            pause=framed.container("POD", sandboxes[0]) if sandboxes else None,
            ancestors={level.path: level for level in map(framed.cgroup, ancestors)},
            pause_absent=CRIO_NO_PAUSE if not sandboxes and runtime.startswith("cri-o://") else "",
        )

    def resize(self, patch: Mapping[str, Any]) -> ResizeStatus:
        """PATCH the `resize` subresource, then wait until the resize is settled (kube/pods.settled_resize):
        Infeasible, or applied with both resize conditions cleared; after `timeouts.resize` the status then
        (Deferred, or InProgress with the kubelet's message)."""
        self._require_admitted()
        try:
            self.node.api.patch_pod_resize(self.namespace, self.name, patch)
        except KubeApiError as err:
            refused = rejection(err, resize=True)
            if refused is not None:
                return ResizeStatus(ResizeOutcome.REJECTED, refused)
            if err.status == 404:
                self.read()  # the pod is there (else this raises): the API server has no resize subresource
                raise NotApplicable(f"pod {self.pod.ref}: the API server does not serve pods/resize (in-place "
                                    f"resize needs Kubernetes 1.33 or newer): {err.message}") from None
            if not 400 <= err.status < 500:
                raise
            raise infrastructure_error(err, f"resize of pod {self.pod.ref}") from None
        self.resized = True
        deadline = self.node.clock() + self.node.timeouts.resize
        while True:
            obj = self.read()
            settled = settled_resize(obj)
            if settled is not None:
                return settled
            if self.node.clock() > deadline:
                return resize_status(obj, True) or ResizeStatus(ResizeOutcome.IN_PROGRESS,
                                                                "the kubelet has not acted on the resize yet")
            self.node.sleep(self.node.timeouts.poll)

    def exec(self, container: str, argv: Sequence[str], timeout: float = 30.0) -> ExecResult:
        self._require_admitted()
        names.label(container, "container name")
        out = self.node.api.exec(self.namespace, self.name, container, list(argv), timeout)
        return ExecResult(out.rc, out.stdout, out.stderr)

    def logs(self, container: str | None = None, previous: bool = False) -> str:
        self._require_admitted()
        return self.node.api.pod_log(self.namespace, self.name, container or self.pod.containers[0].name, previous)

    def delete(self) -> None:
        if self.admitted:
            self.node.delete_pod(self.namespace, self.name)
            self.admitted = False
