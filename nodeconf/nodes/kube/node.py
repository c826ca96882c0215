"""The Kubernetes node driver: one node of a cluster reached through a kubeconfig (kind or real), same protocol.

Pods go through the API into a labelled namespace of this run (leased: an expiry the run renews while it lives,
kube/lease.py), bound to the node; cgroup files, pids and
oom_score_adj come from a privileged reader pod on the node (one exec per request, kube/reader.py); facts
from the Node object, the reader and a cpu-weight probe pod; the kubelet's config from /configz. The
permissions this needs are in nodeconf/infra/kube/rbac.yaml. What it reads about the node is in kube/readings.py.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

from nodeconf import names
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.manifest_writer import namespace_object_to_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import Node, NodeError, NotApplicable
from nodeconf.nodes.kube.api import KubeApi, KubeApiError, dig
from nodeconf.nodes.kube.facts import node_facts
from nodeconf.nodes.kube.lease import RENEW_EVERY, Heartbeat, expiry_annotations
from nodeconf.nodes.kube.pod import KubePod
from nodeconf.nodes.kube.pods import (
    HELPER_NAME,
    READER_CONFIGMAP,
    READER_FILE,
    admission,
    configmap,
    container_ids,
    helper_pod_manifest,
    kube_namespace,
    labels,
    namespace_manifest,
    node_tolerations,
    pod_events,
    pod_manifest,
    programs_configmap,
    reader_source,
    start_failure,
    workload_programs,
)
from nodeconf.nodes.kube.readings import NodeReadings
from nodeconf.nodes.kube.refusals import (
    dropped_gated_field,
    infrastructure_error,
    is_service_account_race,
    reader_refusal,
    rejection,
)
from nodeconf.nodes.kube.timeouts import DEFAULT_TIMEOUTS, Timeouts
from nodeconf.nodes.shield import signals_deferred
from nodeconf.semantics.cpu import measured_formula, milli_cpu_to_shares
from nodeconf.workloads import PROGRAMS_DIR

# Fully qualified: CRI-O >= 1.34 refuses short names in enforcing short-name mode (cri-o#9401), and a short name
# means docker.io on containerd anyway. NODECONF_KUBE_MIRROR puts a mirror in docker.io's place (Docker Hub's
# anonymous pull limits; opener.py), NODECONF_KUBE_HELPER_IMAGE / _WORKLOAD_IMAGE replace an image. The helper
# image needs python3 and `sleep` (the reader, the workload programs).
DOCKER_HUB = "docker.io"
DEFAULT_HELPER_IMAGE = f"{DOCKER_HUB}/library/python:3.12-slim"
DEFAULT_WORKLOAD_IMAGE = f"{DOCKER_HUB}/library/busybox:1.37"
PROBE_NAME = "nodeconf-cpu-weight-probe"
# 250m → 256 shares: weight 35 (non-linear) vs 10 (linear), the seed article's example.
PROBE_MILLI_CPU = 250


class KubeNode(NodeReadings, Node):
    """One node of a Kubernetes cluster; `start()` prepares the run namespace and the reader pod,
    `close()` deletes every namespace of the run (and with them every pod, also after a failure)."""

    def __init__(self, api: KubeApi, node: str, *, spec: str = "", context: str = "", run_id: str | None = None,
                 helper_image: str = DEFAULT_HELPER_IMAGE, workload_image: str = DEFAULT_WORKLOAD_IMAGE,
                 keep_images: bool = False, timeouts: Timeouts = DEFAULT_TIMEOUTS,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 after_close: Sequence[Callable[[], None]] = (), renew_every: float = RENEW_EVERY) -> None:
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
        self._configz: tuple[KubeletConfig, frozenset[str]] | None = None
        self.notes: list[str] = []  # what the node shows that its /configz does not say (reported in logs())
        self.heartbeat = Heartbeat(api, lambda: self.namespaces, renew_every)

    def start(self) -> KubeNode:
        """Create the run namespace, start renewing the run's lease and start the reader pod and wait for it;
        everything is removed on failure."""
        try:
            self._ensure_namespace(self.base_namespace)
            self.heartbeat.renew()  # a refused renewal (no `patch` on namespaces) stops the run here, not later
            self.heartbeat.start()
            self.api.create_object(self.base_namespace, configmap(
                READER_CONFIGMAP, self.base_namespace, self.run_id, {READER_FILE: reader_source()}))
            manifest = helper_pod_manifest(self.base_namespace, self.node, self.run_id, self.helper_image)
            try:
                self._create_pod(self.base_namespace, manifest)
            except KubeApiError as err:
                if not 400 <= err.status < 500:
                    raise
                raise reader_refusal(err, self.node) from None
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
                self.heartbeat.stop()
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
            self.api.create_namespace(namespace_manifest(name, self.run_id, expiry_annotations(self.api.now())))
            self.namespaces.append(name)
            if name != self.base_namespace:
                self.api.create_object(name, programs_configmap(name, self.run_id, workload_programs()))
        return name

    def namespace_for(self, namespace: str) -> str:
        names.label(namespace, "namespace")
        return self._ensure_namespace(kube_namespace(self.run_id, namespace))

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
                                keep_images=self.keep_images, tolerations=node_tolerations(self.node_object()))
        try:
            dropped = dropped_gated_field(manifest, self._create_pod(namespace, manifest))
        except KubeApiError as err:
            refused = rejection(err)
            if refused is not None:
                return KubePod(self, pod, False, (refused,), namespace)
            if not 400 <= err.status < 500:
                raise
            raise infrastructure_error(err, f"pod {pod.ref}") from None
        if dropped is not None:
            self.delete_pod(namespace, pod.name)
            raise dropped
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

    def _create_pod(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the pod (the object the API server stored); while a new namespace's ServiceAccount does not
        exist yet (the serviceaccount admission plugin refuses the pod) retry for `timeouts.service_account`."""
        deadline = self.clock() + self.timeouts.service_account
        while True:
            try:
                return self.api.create_pod(namespace, manifest)
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
            manifest = namespace_object_to_dict(obj)
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
                     "tolerations": node_tolerations(self.node_object()),
                     "containers": [{"name": "probe", "image": self.helper_image, "command": ["sleep", "infinity"],
                                     "resources": {"requests": {"cpu": f"{PROBE_MILLI_CPU}m"}}}]},
        }
        self._create_pod(self.base_namespace, manifest)
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
