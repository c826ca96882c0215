"""The Kubernetes node driver: one node of a cluster reached through a kubeconfig (kind or real), same protocol.

Pods go through the API into a labelled namespace of this run, bound to the node; cgroup files, pids and
oom_score_adj come from a privileged reader pod on the node (one exec per request, kube_reader.py); facts
from the Node object, the reader and a cpu-weight probe pod; the kubelet's config from /configz. The
permissions this needs are in infra/kube/rbac.yaml.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeconf.enforcer import names
from nodeconf.enforcer.agent import OBSERVED_FILES
from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes import kube_reader
from nodeconf.nodes.base import (
    CgroupFiles,
    ContainerEvidence,
    ContainerState,
    ExecResult,
    Metrics,
    Node,
    NodeConditions,
    NodeError,
    NotApplicable,
    PodEvidence,
    PodHandle,
    PodStatus,
    ResizeStatus,
    parse_metrics,
)
from nodeconf.nodes.enforced import PROGRAMS, _object_to_dict
from nodeconf.nodes.kube_api import (
    ClientKubeApi,
    KubeApi,
    KubeApiError,
    dig,
    load_kube_context,
    unreachable_reason,
)
from nodeconf.nodes.kube_facts import (
    is_kind_node,
    kubelet_config_differences,
    kubelet_minor_version,
    live_kubelet_config,
    node_facts,
    node_name,
    present_fields,
)
from nodeconf.nodes.kube_kind import kind_advice
from nodeconf.nodes.kube_oom import OomLedger, oom_kill_count, with_oom_reasons
from nodeconf.nodes.kube_others import node_selector, other_pods
from nodeconf.nodes.kube_paths import CgroupFrame
from nodeconf.nodes.kube_pods import (
    HELPER_CGROUP_MOUNT,
    HELPER_NAME,
    READER_CONFIGMAP,
    READER_DIR,
    READER_FILE,
    admission,
    configmap,
    container_ids,
    container_states,
    disruption_time,
    helper_pod_manifest,
    kube_namespace,
    labels,
    namespace_manifest,
    pod_events,
    pod_manifest,
    programs_configmap,
    resize_status,
    settled_resize,
    start_failure,
)
from nodeconf.nodes.kube_refusals import infrastructure_error, is_service_account_race, rejection
from nodeconf.nodes.shield import signals_deferred
from nodeconf.resources import locate_tree
from nodeconf.semantics.cpu import measured_formula, milli_cpu_to_shares
from nodeconf.semantics.profile import SUPPORTED_VERSIONS
from nodeconf.semantics.resize import ResizeStatus as ResizeOutcome

# Short names without a registry: the node's runtime resolves them with its own registry and mirror settings
# (containerd: docker.io; CRI-O: unqualified-search-registries), so a cluster that mirrors or caches Docker
# Hub (anonymous pull limits) needs no change here; set NODECONF_KUBE_HELPER_IMAGE / _WORKLOAD_IMAGE to use
# another registry. The helper image needs python3 and `sleep` (the reader, the workload programs).
DEFAULT_HELPER_IMAGE = "python:3.12-slim"
DEFAULT_WORKLOAD_IMAGE = "busybox:1.37"
ENV_NODE = "NODECONF_KUBE_NODE"
ENV_HELPER_IMAGE = "NODECONF_KUBE_HELPER_IMAGE"
ENV_WORKLOAD_IMAGE = "NODECONF_KUBE_WORKLOAD_IMAGE"
ENV_KEEP_IMAGES = "NODECONF_KUBE_KEEP_IMAGES"
PROGRAMS_DIR = f"/opt/nodeconf/{PROGRAMS}"
READER_CONTAINER = "reader"
PROBE_NAME = "nodeconf-cpu-weight-probe"
# 250m → 256 shares: weight 35 (non-linear) vs 10 (linear), the seed article's example.
PROBE_MILLI_CPU = 250
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
OS_LABEL = "kubernetes.io/os"
# CRI-O drops the infra (pause) container of a pod without a shared PID namespace (crio.conf(5) drop_infra_ctr,
# default true since CRI-O 1.2x; OpenShift 4.7+): its pods have no pause process to compare.
CRIO_NO_PAUSE = "CRI-O runs no infra (pause) container for this pod (drop_infra_ctr)"
# Files of the pod cgroup read for OOM evidence (kube_oom.py).
OOM_FILES = ["memory.events"]


class KubeletConfigNotApplicable(NotApplicable):
    """The node's kubelet runs another configuration or version than the check needs: the check is skipped."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for the API and the kubelet; `poll` is the polling interval."""

    start: float = 300.0
    pod: float = 180.0
    delete: float = 60.0
    resize: float = 30.0
    exec: float = 60.0
    quota: float = 30.0
    start_retry: float = 90.0
    service_account: float = 30.0
    poll: float = 0.5


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


def evidence_files(extra_files: Sequence[str]) -> list[str]:
    """The files read per cgroup: the observed set plus validated extras."""
    return list(dict.fromkeys((*OBSERVED_FILES, *(names.cgroup_file(f) for f in extra_files))))


def is_linux(node: Mapping[str, Any]) -> bool:
    """The kubelet labels its node with its GOOS (`kubernetes.io/os`, pkg/kubelet/kubelet_node_status.go)."""
    return str((dig(node, "metadata", "labels") or {}).get(OS_LABEL, "linux")) == "linux"


def choose_node(nodes: Sequence[Mapping[str, Any]], wanted: str | None) -> Mapping[str, Any]:
    """The named node, else the first Ready Linux one (a worker rather than a control plane when there are
    several)."""
    if wanted:
        for node in nodes:
            if node_name(node) == wanted:
                if not is_linux(node):
                    raise NodeError(f"node {wanted!r} is not a Linux node ({OS_LABEL}="
                                    f"{(dig(node, 'metadata', 'labels') or {}).get(OS_LABEL)})")
                return node
        raise NodeError(f"no node {wanted!r} in the cluster (nodes: {', '.join(node_name(n) for n in nodes)})")
    nodes = [n for n in nodes if is_linux(n)]

    def ready(node: Mapping[str, Any]) -> bool:
        conditions = (node.get("status") or {}).get("conditions") or ()
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    candidates = [n for n in nodes if ready(n)]
    if not candidates:
        raise NodeError("the cluster has no Ready node")
    workers = [n for n in candidates if CONTROL_PLANE_LABEL not in ((n.get("metadata") or {}).get("labels") or {})]
    return sorted(workers or candidates, key=node_name)[0]


class Framed:
    """Reader answers turned into protocol values, their paths in the oracle's frame (kube_paths.py); every
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
        return ContainerEvidence(name=name, cgroup=self.cgroup(doc), pids=tuple(doc.get("pids") or ()),
                                 oom_score_adj={int(p): adj for p, adj in (doc.get("oomScoreAdj") or {}).items()})


class KubePod(PodHandle):
    """A pod on the node through the API; evidence through the reader pod."""

    def __init__(self, node: KubeNode, pod: Pod, admitted: bool, errors: Sequence[str], namespace: str) -> None:
        super().__init__(pod, admitted, errors)
        self.node = node
        self.namespace = namespace
        self.name = pod.name
        self.resized = False
        self.oom = OomLedger()

    def _require_admitted(self) -> None:
        if not self.admitted:
            raise NodeError(f"pod {self.pod.ref} was rejected: {'; '.join(self.errors)}")

    def read(self) -> dict[str, Any]:
        return self.node.api.read_pod(self.namespace, self.name)

    def status(self) -> PodStatus:
        self._require_admitted()
        return self._status(self.read())

    def _status(self, obj: Mapping[str, Any]) -> PodStatus:
        status = obj.get("status") or {}
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        selector = f"involvedObject.kind=Pod,involvedObject.name={self.name}"
        events = self.node.api.list_events(self.namespace, f"{selector},involvedObject.uid={uid}" if uid else selector)
        return PodStatus(
            phase=str(status.get("phase") or ""), qos_class=str(status.get("qosClass") or ""),
            containers=self._with_oom_evidence(obj, container_states(obj)), events=pod_events(events),
            reason=str(status.get("reason") or ""),
            message=str(status.get("message") or ""),
            resize=resize_status(obj, self.resized) or ResizeStatus(ResizeOutcome.IN_PROGRESS),
            disrupted_at=disruption_time(obj),
        )

    def _with_oom_evidence(self, obj: Mapping[str, Any], states: dict[str, ContainerState]
                           ) -> dict[str, ContainerState]:
        """Container states, with an exit 137 the runtime reported as `Error` shown as OOMKilled when the
        kernel counted an OOM kill in the pod cgroup since the last such exit (kube_oom.py)."""
        if self.oom.unjudged(obj):
            uid = names.uid(str(dig(obj, "metadata", "uid") or ""))
            doc = self.node.read("podCgroup", podUid=uid, files=OOM_FILES)
            self.oom.judge(obj, oom_kill_count((doc.get("files") or {}).get("memory.events")))
        return with_oom_reasons(states, self.oom.oom_killed(obj))

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
        """PATCH the `resize` subresource, then wait until the resize is settled (kube_pods.settled_resize):
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


class KubeNode(Node):
    """One node of a Kubernetes cluster; `start()` prepares the run namespace and the reader pod,
    `close()` deletes every namespace of the run (and with them every pod, also after a failure)."""

    def __init__(self, api: KubeApi, node: str, *, spec: str = "", context: str = "", run_id: str | None = None,
                 helper_image: str = DEFAULT_HELPER_IMAGE, workload_image: str = DEFAULT_WORKLOAD_IMAGE,
                 keep_images: bool = False, timeouts: Timeouts = Timeouts(),
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 after_close: Sequence[Callable[[], None]] = ()) -> None:
        self.api = api
        self.after_close = tuple(after_close)
        self.node = node
        self.spec = spec
        self.context = context
        self.run_id = run_id or secrets.token_hex(3)
        self.helper_image = helper_image
        self.workload_image = workload_image
        self.keep_images = keep_images
        self.timeouts = timeouts
        self.sleep = sleep
        self.clock = clock
        self.base_namespace = f"nodeconf-{self.run_id}"
        self.namespaces: list[str] = []
        self.objects: list[tuple[str, str, str]] = []
        self.paths: dict[str, str] = {}
        self._facts: NodeFacts | None = None
        self._node_obj: dict[str, Any] | None = None

    def start(self) -> KubeNode:
        """Create the run namespace and the reader pod and wait for it; everything is removed on failure."""
        try:
            self._ensure_namespace(self.base_namespace)
            self.api.create_object(self.base_namespace, configmap(
                READER_CONFIGMAP, self.base_namespace, self.run_id, {READER_FILE: reader_source()}))
            manifest = helper_pod_manifest(self.base_namespace, self.node, self.run_id, self.helper_image)
            self.api.create_pod(self.base_namespace, manifest)
            self._wait_pod(self.base_namespace, HELPER_NAME, self.timeouts.start, "reader pod")
            if not self.read("check").get("cgroupV2"):
                raise NotApplicable(f"node {self.node} runs cgroup v1 (no cgroup.controllers at the root of its "
                                    f"cgroup mount): nodeconf checks cgroup v2 nodes only")
        except BaseException:
            with contextlib.suppress(NodeError):
                self.close()
            raise
        return self

    def close(self) -> None:
        """Delete the run's namespaces (their pods, quotas and config maps go with them); close the client; then
        run the `after_close` actions (e.g. delete the kind cluster), also when a namespace could not be deleted."""
        failures = []
        try:
            with signals_deferred(f"the namespaces of run {self.run_id} are deleted"):
                for namespace in reversed(self.namespaces):
                    try:
                        self.api.delete_namespace(namespace)
                    except KubeApiError as err:
                        if err.status != 404:
                            failures.append(f"{namespace}: {err}")
                self.namespaces.clear()
                self.api.close()
        finally:
            for action in self.after_close:
                action()
        if failures:
            raise NodeError(f"could not delete namespaces of run {self.run_id}: {'; '.join(failures)}")

    def _ensure_namespace(self, name: str) -> str:
        if name not in self.namespaces:
            self.api.create_namespace(namespace_manifest(name, self.run_id))
            self.namespaces.append(name)
            if name != self.base_namespace:
                self.api.create_object(name, programs_configmap(name, self.run_id, workload_programs()))
        return name

    def namespace_for(self, namespace: str) -> str:
        names.label(namespace, "namespace")
        return self._ensure_namespace(kube_namespace(self.run_id, namespace))

    def read(self, op: str, **request: Any) -> dict[str, Any]:
        """One request to the reader pod (one exec round trip); NodeError with the reader's message on failure."""
        out = self.api.exec(self.base_namespace, HELPER_NAME, READER_CONTAINER, reader_argv({"op": op, **request}),
                            self.timeouts.exec)
        try:
            doc = json.loads(out.stdout)
        except ValueError:
            raise NodeError(f"evidence reader on node {self.node} answered no JSON (exit {out.rc}): "
                            f"{(out.stderr or out.stdout).strip()[-300:]}") from None
        if not isinstance(doc, dict):
            raise NodeError(f"evidence reader on node {self.node} answered {type(doc).__name__}, not an object")
        if "error" in doc or out.rc != 0:
            raise NodeError(f"evidence reader on node {self.node}: {doc.get('error', out.stderr.strip())}")
        return doc

    def _wait_pod(self, namespace: str, name: str, timeout: float, what: str) -> dict[str, Any]:
        """Poll until the kubelet has admitted and started the pod, or refused it. A failed pull or container
        creation is retried by the kubelet: fatal when permanent or still there after `timeouts.start_retry`."""
        deadline = self.clock() + timeout
        failing_since: float | None = None
        while True:
            obj = self.api.read_pod(namespace, name)
            if admission(obj) is not None:
                return obj
            failure = start_failure(obj)
            if failure is None:
                failing_since = None
            else:
                failing_since = self.clock() if failing_since is None else failing_since
                text, permanent = failure
                if permanent or self.clock() - failing_since > self.timeouts.start_retry:
                    lasting = "" if permanent else f" (for {self.timeouts.start_retry:g} s)"
                    raise NodeError(f"{what} {namespace}/{name} on node {self.node} cannot start{lasting}: {text}")
            if self.clock() > deadline:
                status = obj.get("status") or {}
                events = pod_events(self.api.list_events(namespace, f"involvedObject.name={name}"))
                last = "; ".join(f"{e.reason}: {e.message}" for e in events[-3:])
                raise NodeError(f"{what} {namespace}/{name} not started on node {self.node} within {timeout:g} s "
                                f"(phase {status.get('phase')}; {last or 'no events'})")
            self.sleep(self.timeouts.poll)

    def run(self, pod: Pod) -> KubePod:
        """Create the pod bound to the node; admitted once the kubelet started it, rejected by the API or the
        kubelet with their messages."""
        names.pod_name(pod.name)
        namespace = self.namespace_for(pod.namespace)
        manifest = pod_manifest(pod, namespace, self.node, self.run_id, default_image=self.workload_image,
                                program_image=self.helper_image, programs_dir=PROGRAMS_DIR,
                                keep_images=self.keep_images)
        try:
            self._create_pod(namespace, manifest)
        except KubeApiError as err:
            refused = rejection(err)
            if refused is not None:
                return KubePod(self, pod, False, (refused,), namespace)
            if not 400 <= err.status < 500:
                raise
            raise infrastructure_error(err, f"pod {pod.ref}") from None
        try:
            obj = self._wait_pod(namespace, pod.name, self.timeouts.pod, "pod")
        except BaseException:
            with contextlib.suppress(NodeError):
                self.delete_pod(namespace, pod.name)
            raise
        decision = admission(obj)
        assert decision is not None
        admitted, errors = decision
        if not admitted:
            self.delete_pod(namespace, pod.name)  # a refused pod leaves nothing behind, as on a kubelet
        return KubePod(self, pod, admitted, errors, namespace)

    def _create_pod(self, namespace: str, manifest: dict[str, Any]) -> None:
        """Create the pod; while a new namespace's ServiceAccount does not exist yet (the serviceaccount
        admission plugin refuses the pod) retry for `timeouts.service_account`."""
        deadline = self.clock() + self.timeouts.service_account
        while True:
            try:
                self.api.create_pod(namespace, manifest)
                return
            except KubeApiError as err:
                if not is_service_account_race(err) or self.clock() > deadline:
                    raise
            self.sleep(self.timeouts.poll)

    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete with no grace period and wait until the node removed it.

        Grace period 0 is a force delete: the API object goes at once and the kubelet kills the containers and
        removes the pod cgroup later (pkg/registry/core/pod/strategy.go CheckGracefulDelete; kubelet
        pod_workers.go), so the wait ends only when the reader no longer finds the pod cgroup.
        """
        try:
            uid = names.uid(str(dig(self.api.read_pod(namespace, name), "metadata", "uid") or ""))
            self.api.delete_pod(namespace, name, 0)
        except KubeApiError as err:
            if err.status == 404:
                return
            raise
        deadline = self.clock() + self.timeouts.delete
        while not self._api_forgot(namespace, name) or self.read("podCgroup", podUid=uid, files=[])["path"]:
            if self.clock() > deadline:
                raise NodeError(f"pod {namespace}/{name} still on node {self.node} {self.timeouts.delete:g} s after "
                                f"deletion")
            self.sleep(self.timeouts.poll)

    def _api_forgot(self, namespace: str, name: str) -> bool:
        try:
            self.api.read_pod(namespace, name)
        except KubeApiError as err:
            if err.status == 404:
                return True
            raise
        return False

    def set_namespace_objects(self, objects: Sequence[NamespaceObject]) -> None:
        """Replace this run's LimitRanges and ResourceQuotas; wait until each quota's usage is computed."""
        for kind, namespace, name in self.objects:
            try:
                self.api.delete_object(kind, namespace, name)
            except KubeApiError as err:
                if err.status != 404:
                    raise
        self.objects.clear()
        for obj in objects:
            names.label(obj.name, "object name")
            manifest = _object_to_dict(obj)
            namespace = self.namespace_for(obj.namespace)
            manifest["metadata"] = {"name": obj.name, "namespace": namespace, "labels": labels(self.run_id)}
            self.api.create_object(namespace, manifest)
            self.objects.append((manifest["kind"], namespace, obj.name))
            if manifest["kind"] == "ResourceQuota":
                self._wait_quota(namespace, obj.name)

    def _wait_quota(self, namespace: str, name: str) -> None:
        """Quota admission refuses pods while the quota has no usage yet ("status unknown for quota")."""
        deadline = self.clock() + self.timeouts.quota
        while not ((self.api.read_object("ResourceQuota", namespace, name).get("status") or {}).get("hard")):
            if self.clock() > deadline:
                raise NodeError(f"ResourceQuota {namespace}/{name}: no usage computed within {self.timeouts.quota:g} s")
            self.sleep(self.timeouts.poll)

    def node_object(self) -> dict[str, Any]:
        if self._node_obj is None:
            self._node_obj = self.api.read_node(self.node)
        return self._node_obj

    def facts(self) -> NodeFacts:
        """Capacity, kernel and swap from the Node object; page size and controllers from the reader; the
        runtime's cpu-weight formula measured on a probe pod (reported, never the oracle's expectation)."""
        if self._facts is None:
            probe = self.read("facts")
            self._facts = node_facts(self.node_object(), probe, self._measure_cpu_weight_formula())
        return self._facts

    def _measure_cpu_weight_formula(self) -> str:
        manifest = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": PROBE_NAME, "namespace": self.base_namespace, "labels": labels(self.run_id)},
            "spec": {"nodeName": self.node, "terminationGracePeriodSeconds": 0, "restartPolicy": "Never",
                     "containers": [{"name": "probe", "image": self.helper_image, "command": ["sleep", "infinity"],
                                     "resources": {"requests": {"cpu": f"{PROBE_MILLI_CPU}m"}}}]},
        }
        self.api.create_pod(self.base_namespace, manifest)
        try:
            obj = self._wait_pod(self.base_namespace, PROBE_NAME, self.timeouts.pod, "cpu-weight probe pod")
            admitted, errors = admission(obj) or (False, ())
            if not admitted:
                raise NodeError(f"cpu-weight probe pod ({PROBE_MILLI_CPU}m cpu) refused by node {self.node}: "
                                + "; ".join(errors))
            uid = names.uid(str(obj["metadata"]["uid"]))
            doc = self.read("pod", podUid=uid, containers=container_ids(obj), files=["cpu.weight"])
            weight = int(doc["containers"]["probe"]["files"]["cpu.weight"])
            return measured_formula(milli_cpu_to_shares(PROBE_MILLI_CPU), weight)
        except (KeyError, ValueError) as err:
            raise NodeError(f"cpu-weight probe on node {self.node}: {err}") from None
        finally:
            self.delete_pod(self.base_namespace, PROBE_NAME)

    def configure(self, config: KubeletConfig, version: str | None = None) -> Sequence[str]:
        """A cluster's kubelet cannot be restarted from here: accept the config the node already runs, refuse
        (KubeletConfigNotApplicable, the check is skipped) any other, one it cannot read or one with values
        nodeconf does not model. Only the fields the node's /configz shows are compared."""
        try:
            configz = self.api.node_proxy(self.node, "configz")
        except KubeApiError as err:
            if err.status not in (401, 403, 404):
                raise
            raise KubeletConfigNotApplicable(
                f"the kubelet configuration of node {self.node} cannot be read ({err}); /configz needs `get` on "
                f"nodes/proxy (infra/kube/rbac.yaml): checks that need a kubelet configuration are skipped"
            ) from None
        try:
            live = live_kubelet_config(configz, self.node)
        except InputError as err:
            raise KubeletConfigNotApplicable(
                f"node {self.node} runs a kubelet configuration nodeconf does not model ({err}): checks that "
                f"need a kubelet configuration are skipped") from None
        node = self.node_object()
        running = kubelet_minor_version(node)
        profile = version or (running if running in SUPPORTED_VERSIONS else None)
        differences = kubelet_config_differences(config, live, profile, present_fields(configz))
        if version is not None and running != version:
            differences.insert(0, f"profile {version} requested, the node runs kubelet {running}")
        if differences:
            how = (kind_advice(config) if is_kind_node(node)
                   else "give --kubelet-config with the node's values, or point nodeconf at a node whose kubelet "
                        "runs the needed configuration")
            raise KubeletConfigNotApplicable(
                f"node {self.node} runs another kubelet configuration ({'; '.join(differences)}); "
                f"its kubelet cannot be reconfigured from here: {how}")
        return ()

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> Mapping[str, CgroupFiles]:
        doc = self.read("node", files=evidence_files(extra_files))
        framed = Framed(self.frame(doc["kubepods"]["path"]), {}, self.paths)
        levels = [framed.cgroup(level) for level in [doc["kubepods"], *(doc.get("qos") or {}).values()]]
        return {level.path: level for level in levels}

    def frame(self, kubepods: str) -> CgroupFrame:
        try:
            return CgroupFrame(kubepods)
        except ValueError as err:
            raise NodeError(f"node {self.node}: {err}") from None

    def conditions(self) -> NodeConditions:
        """The Node object's conditions now, and the node's events (the kubelet records them in `default`)."""
        node = self.api.read_node(self.node)
        conditions = {str(c.get("type")): c.get("status") == "True"
                      for c in (node.get("status") or {}).get("conditions") or ()}
        events = self.api.list_events("default", f"involvedObject.kind=Node,involvedObject.name={self.node}")
        return NodeConditions(conditions, pod_events(events))

    def metrics(self) -> Metrics:
        """The kubelet's /metrics through the API server's node proxy; NotApplicable without `get` on
        nodes/proxy."""
        try:
            return parse_metrics(self.api.node_proxy(self.node, "metrics"))
        except KubeApiError as err:
            if err.status in (401, 403):
                raise NotApplicable(f"the kubelet metrics of node {self.node} cannot be read ({err}); they need "
                                    f"`get` on nodes/proxy (infra/kube/rbac.yaml)") from None
            raise

    def other_pods(self) -> Sequence[Pod]:
        """Every active pod on the node outside the checks' namespaces (the reader pod included), read now."""
        own = [namespace for namespace in self.namespaces if namespace != self.base_namespace]
        return other_pods(self.api.list_pods(node_selector(self.node)), own)

    def logs(self) -> str:
        """The events of this run's namespaces (a cluster's kubelet log is not reachable through the API) and
        the real path of every cgroup the evidence named in the oracle's frame."""
        lines = [f"cgroup {path} is {real} on node {self.node}" for path, real in sorted(self.paths.items())
                 if path != real]
        for namespace in self.namespaces:
            for item in self.api.list_events(namespace, ""):
                involved = item.get("involvedObject") or {}
                lines.append(f"{namespace}/{involved.get('name', '?')}: {item.get('type', '')} "
                             f"{item.get('reason', '')}: {item.get('message', '')}")
        return "\n".join(lines)


def open_node(context: str | None = None, *, node: str | None = None, config_file: str | None = None,
              after_close: Sequence[Callable[[], None]] = ()) -> KubeNode:
    """Connect with the kubeconfig's context (the current one when None; in a pod without a kubeconfig, the pod's
    service account), pick the node and start the run; `after_close` runs when the node is closed.

    The node, the reader image and the workload image can be set with NODECONF_KUBE_NODE,
    NODECONF_KUBE_HELPER_IMAGE and NODECONF_KUBE_WORKLOAD_IMAGE (defaults: short names the node's runtime
    resolves, DEFAULT_HELPER_IMAGE); NODECONF_KUBE_KEEP_IMAGES=1 runs the manifests' own images instead of the
    workload image. Only Linux nodes are chosen.
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
                             helper_image=os.environ.get(ENV_HELPER_IMAGE, DEFAULT_HELPER_IMAGE),
                             workload_image=os.environ.get(ENV_WORKLOAD_IMAGE, DEFAULT_WORKLOAD_IMAGE),
                             keep_images=os.environ.get(ENV_KEEP_IMAGES, "") not in ("", "0"),
                             after_close=after_close)
    except BaseException:
        api.close()
        raise
    return kube_node.start()
