"""The kube driver against a fake Kubernetes API whose kubelet starts pods into a fake node tree read by the
real evidence reader (test_nodes_kube_reader.FakeNode)."""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from nodeconf.kubelet_config import kubelet_config_from_dict
from nodeconf.manifest import Container, LimitRange, LimitRangeItem, Pod, ResourceQuota, Resources
from nodeconf.names import UnsafeName
from nodeconf.nodes.base import NodeError, NotApplicable, ResizeStatus, Terminated
from nodeconf.nodes.kube import reader as kube_reader
from nodeconf.nodes.kube.api import ExecOutput, KubeApiError
from nodeconf.nodes.kube.configz import KubeletConfigNotApplicable
from nodeconf.nodes.kube.node import PROBE_NAME, KubeNode
from nodeconf.nodes.kube.opener import choose_node
from nodeconf.nodes.kube.pods import HELPER_NAME, PROGRAMS_CONFIGMAP, kube_namespace
from nodeconf.nodes.kube.timeouts import Timeouts
from nodeconf.quantity import Quantity
from nodeconf.semantics.cgroup_paths import pod_cgroup
from nodeconf.semantics.expectation import QosClass
from nodeconf.workloads import PROGRAMS_DIR
from tests.unit.nodes.kube import kube_schema
from tests.unit.nodes.kube.test_nodes_kube_facts import CONFIGZ, node_doc
from tests.unit.nodes.kube.test_nodes_kube_reader import FakeNode

RUN = "abc123"
SERVER_TIME = datetime(2026, 12, 3, 7, 0, 0, tzinfo=UTC)
BASE_NS = f"nodeconf-{RUN}"
DEFAULT_NS = f"nodeconf-{RUN}-default"
NODE = "kind-control-plane"
KUBEPODS = "kubelet.slice/kubelet-kubepods.slice"
# What a runtime writes as cpu.weight for a 250m request: the seed article's table (new runc 35, old 10).
ARTICLE_WEIGHT_250M = {"nonlinear": "35", "linear": "10"}
METRICS = """\
# HELP kubelet_node_swap_allocated_bytes Sum of limits.swap of the pods on the node.
# TYPE kubelet_node_swap_allocated_bytes gauge
kubelet_node_swap_allocated_bytes 1.073741824e+09
kubelet_memory_qos_node_memory_min_bytes 536870912
kubelet_container_swap_usage_bytes{container="app",namespace="ns",pod="p"} 4096
"""
# A kubelet's /metrics/cadvisor series carry container, id, image, name, namespace and pod
# (pkg/kubelet/server/server.go containerPrometheusLabelsFunc).
CADVISOR = """\
# TYPE container_pressure_memory_waiting_seconds_total counter
container_pressure_memory_waiting_seconds_total{container="app",id="/kubepods.slice/x",image="busybox",\
name="abc",namespace="ns",pod="p"} 2.5 1764550000000
"""


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def qos_of(spec: Mapping[str, Any]) -> str:
    """The fake kubelet's QoS class (enough for the fake: the driver reports what the API says)."""
    resources = [c.get("resources") or {} for c in spec["containers"]]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(set(r.get("limits") or {}) >= {"cpu", "memory"}
                     and all(r.get("requests", {}).get(k, v) == v for k, v in r["limits"].items())
                     for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


class FakeKube:
    """An API server with a kubelet behind it; behaviours per pod name script what the kubelet does."""

    def __init__(self, tree: FakeNode, formula: str = "nonlinear") -> None:
        self.tree = tree
        self.formula = formula
        self.namespaces: set[str] = set()
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.behaviour: dict[str, str] = {}
        # name → KubeApiError arguments (status, message[, reason, causes]), a last "once" to refuse once only
        self.refuse: dict[str, tuple[Any, ...]] = {}
        self.resize_behaviour: dict[str, str] = {}
        self.execs: list[tuple[str, str, str, list[str]]] = []
        self.exec_answers: dict[str, ExecOutput] = {}
        self.deleted_namespaces: list[str] = []
        self.namespace_annotations: dict[str, dict[str, str]] = {}
        self.server_time = SERVER_TIME  # the API server's clock (its Date header)
        self.configz = copy.deepcopy(CONFIGZ)
        self.node = node_doc()
        self.closed = False
        self.next_pid = 1000
        self.others: list[dict[str, Any]] = []  # pods of other namespaces on the node (recorded objects)
        self.linger = 2  # reader looks before the kubelet removes a force-deleted pod's cgroup
        self.lingering: dict[str, tuple[str, list[int], int]] = {}
        self.forbidden_proxy = False
        self.pause = True  # False: a CRI-O node with drop_infra_ctr
        (tree.cgroup / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
        for level in (KUBEPODS, f"{KUBEPODS}/kubelet-kubepods-burstable.slice",
                      f"{KUBEPODS}/kubelet-kubepods-besteffort.slice"):
            tree.cgroup_dir(level, cpu_weight="100", memory_max="max", cgroup_controllers="cpu memory pids")

    # --- cluster-level -------------------------------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        return {"gitVersion": "v1.34.2"}

    def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]:
        assert not label_selector  # the driver lists every node; only a whole-cluster run selects
        return [self.node]

    def read_node(self, name: str) -> dict[str, Any]:
        if name != NODE:
            raise KubeApiError(404, f'nodes "{name}" not found')
        return copy.deepcopy(self.node)

    def node_proxy(self, node: str, path: str) -> str:
        if self.forbidden_proxy:
            raise KubeApiError(403, f'nodes "{node}" is forbidden: User "dev" cannot get resource "nodes/proxy" '
                                    'in API group "" at the cluster scope', "Forbidden")
        return {"configz": json.dumps(self.configz), "metrics": METRICS, "metrics/cadvisor": CADVISOR}[path]

    def list_pods(self, field_selector: str) -> list[dict[str, Any]]:
        assert field_selector == f"spec.nodeName={NODE}"
        return copy.deepcopy([*self.others, *self.pods.values()])

    def now(self) -> datetime:
        return self.server_time

    def list_namespaces(self, label_selector: str) -> list[dict[str, Any]]:
        raise AssertionError("the driver never lists namespaces (only `nodeconf clean` does)")

    def create_namespace(self, manifest: dict[str, Any]) -> dict[str, Any]:
        kube_schema.check(manifest)
        name = manifest["metadata"]["name"]
        if name in self.namespaces:
            raise KubeApiError(409, f'namespaces "{name}" already exists')
        self.namespaces.add(name)
        self.namespace_annotations[name] = dict(manifest["metadata"].get("annotations") or {})
        return manifest

    def patch_namespace(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        kube_schema.check(patch, "v1", "Namespace", patch=True)
        self._need_namespace(name)
        self.namespace_annotations[name].update(patch["metadata"]["annotations"])
        return {"metadata": {"name": name, "annotations": dict(self.namespace_annotations[name])}}

    def delete_namespace(self, name: str) -> None:
        if name not in self.namespaces:
            raise KubeApiError(404, f'namespaces "{name}" not found')
        self.namespaces.discard(name)
        self.deleted_namespaces.append(name)
        self.pods = {k: v for k, v in self.pods.items() if k[0] != name}
        self.objects = {k: v for k, v in self.objects.items() if k[1] != name}

    # --- objects -------------------------------------------------------------------------------------------

    def create_object(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        kube_schema.check(manifest)
        self._need_namespace(namespace)
        key = (manifest["kind"], namespace, manifest["metadata"]["name"])
        if key in self.objects:
            raise KubeApiError(409, "already exists")
        self.objects[key] = copy.deepcopy(manifest)
        return manifest

    def read_object(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        obj = self.objects[(kind, namespace, name)]
        if kind == "ResourceQuota":
            if obj.get("read"):  # the quota controller fills the status on its second look
                obj["status"] = {"hard": obj["spec"]["hard"], "used": {}}
            obj["read"] = True
        return copy.deepcopy(obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        if self.objects.pop((kind, namespace, name), None) is None:
            raise KubeApiError(404, "not found")

    # --- pods ----------------------------------------------------------------------------------------------

    def _need_namespace(self, namespace: str) -> None:
        if namespace not in self.namespaces:
            raise KubeApiError(404, f'namespaces "{namespace}" not found')

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        kube_schema.check(manifest)
        self._need_namespace(namespace)
        name = manifest["metadata"]["name"]
        if name in self.refuse:
            refusal = self.refuse[name]
            if refusal[-1] == "once":
                del self.refuse[name]
            raise KubeApiError(*refusal[:-1] if refusal[-1] == "once" else refusal)
        if (namespace, name) in self.pods:
            raise KubeApiError(409, f'pods "{name}" already exists')
        obj = copy.deepcopy(manifest)
        obj["metadata"].update(uid=str(uuid.uuid4()), generation=1,
                               creationTimestamp=f"2026-11-29T19:{len(self.pods):02d}:00Z")
        obj["status"] = {"phase": "Pending", "qosClass": qos_of(obj["spec"])}
        obj["reads"] = 0
        self.pods[(namespace, name)] = obj
        return obj

    def _container_status(self, container: Mapping[str, Any], cid: str, state: dict[str, Any]) -> dict[str, Any]:
        return {"name": container["name"], "containerID": f"containerd://{cid}", "state": state,
                "restartCount": 0, "resources": copy.deepcopy(container.get("resources") or {})}

    def _start(self, obj: dict[str, Any]) -> None:
        """The fake kubelet and runtime: cgroups and processes in the kind-nested layout, statuses Running."""
        spec, status = obj["spec"], obj["status"]
        qos = status["qosClass"]
        uid_ = obj["metadata"]["uid"].replace("-", "_")
        pod_dir = (f"{KUBEPODS}/kubelet-kubepods-pod{uid_}.slice" if qos == "Guaranteed" else
                   f"{KUBEPODS}/kubelet-kubepods-{qos.lower()}.slice/kubelet-kubepods-{qos.lower()}-pod{uid_}.slice")
        self.tree.cgroup_dir(pod_dir, cpu_weight="10", memory_max="max", memory_events="oom_kill 0")
        obj["pod_dir"] = pod_dir
        adj = {"Guaranteed": -997, "BestEffort": 1000, "Burstable": 500}[qos]
        if self.pause:
            self.tree.process(self._pid(), f"{pod_dir}/cri-containerd-{uuid.uuid4().hex * 2}.scope", -998)
        statuses = []
        for container in spec["containers"]:
            cid = uuid.uuid4().hex * 2
            requests = (container.get("resources") or {}).get("requests") or {}
            limits = (container.get("resources") or {}).get("limits") or {}
            weight = ARTICLE_WEIGHT_250M[self.formula] if requests.get("cpu") == "250m" else "100"
            memory_max = str(Quantity.parse(limits["memory"]).value()) if "memory" in limits else "max"
            path = f"{pod_dir}/cri-containerd-{cid}.scope"
            self.tree.cgroup_dir(path, cpu_weight=weight, memory_max=memory_max, memory_swap_max="0")
            if obj["metadata"]["name"] == HELPER_NAME:
                self.tree.process("self", path)
            self.tree.process(self._pid(), path, adj)
            statuses.append(self._container_status(container, cid, {"running": {"startedAt": "now"}}))
        status.update(phase="Running", containerStatuses=statuses, observedGeneration=obj["metadata"]["generation"])
        self._event(obj, "Normal", "Started", "Started container")

    def _pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def _event(self, obj: Mapping[str, Any], kind: str, reason: str, message: str) -> None:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        stamp = f"2026-11-29T19:00:{len(self.events.get(key, ())):02d}Z"
        self.events.setdefault(key, []).append({
            "type": kind, "reason": reason, "message": message, "lastTimestamp": stamp,
            "involvedObject": {"kind": "Pod", "name": key[1], "uid": obj["metadata"]["uid"]}})

    def _kubelet(self, obj: dict[str, Any]) -> None:
        """One look of the kubelet at the pod per read: nothing on the first read, then the behaviour."""
        obj["reads"] += 1
        if obj["reads"] < 2 or obj["status"]["phase"] != "Pending":
            return
        behaviour = self.behaviour.get(obj["metadata"]["name"], "run")
        status = obj["status"]
        if behaviour == "run":
            self._start(obj)
        elif behaviour == "reject":
            status.update(phase="Failed", reason="OutOfmemory",
                          message="Pod was rejected: Node didn't have enough resource: memory")
        elif behaviour in ("image", "image-once", "bad-image"):
            container = obj["spec"]["containers"][0]
            reason = "InvalidImageName" if behaviour == "bad-image" else "ErrImagePull"
            status["containerStatuses"] = [{"name": container["name"], "restartCount": 0, "state": {"waiting": {
                "reason": reason, "message": f'failed to pull image "{container["image"]}"'}}}]
            if behaviour == "image-once":  # the kubelet's retry pulls it
                self.behaviour[obj["metadata"]["name"]] = "run"
                obj["reads"] = 1
        elif behaviour in ("oom-racy", "sigkill"):
            # containerd < 2.3: the exit is reported before (or without) TaskOOM, so the reason is Error; the
            # kernel's oom_kill count in the pod cgroup tells an OOM kill from a plain SIGKILL.
            self._start(obj)
            first = status["containerStatuses"][0]
            first.update(restartCount=1, lastState={"terminated": {
                "exitCode": 137, "reason": "Error", "containerID": first["containerID"],
                "finishedAt": "2026-11-29T19:00:05Z"}})
            kills = "1" if behaviour == "oom-racy" else "0"
            (self.tree.cgroup / obj["pod_dir"] / "memory.events").write_text(
                f"low 0\nhigh 0\nmax 12\noom 1\noom_kill {kills}\noom_group_kill 0\n")
        elif behaviour == "oom":
            self._start(obj)
            first = status["containerStatuses"][0]
            first.update(restartCount=2, state={"waiting": {"reason": "CrashLoopBackOff"}},
                         lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
            self._event(obj, "Warning", "BackOff", "Back-off restarting failed container")

    def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        obj = self.pods.get((namespace, name))
        if obj is None:
            raise KubeApiError(404, f'pods "{name}" not found')
        self._kubelet(obj)
        self._resize_step(obj)
        return copy.deepcopy(obj)

    def delete_pod(self, namespace: str, name: str, grace_seconds: int) -> None:
        """A force delete (grace 0): the API object goes at once, the kubelet removes the cgroup later."""
        assert grace_seconds == 0
        obj = self.pods.pop((namespace, name), None)
        if obj is None:
            raise KubeApiError(404, f'pods "{name}" not found')
        if "pod_dir" in obj:
            pids = [int(pid) for procs in (self.tree.cgroup / obj["pod_dir"]).rglob("cgroup.procs")
                    for pid in procs.read_text().split()]
            self.lingering[obj["metadata"]["uid"]] = (obj["pod_dir"], pids, self.linger)

    def _kubelet_cleanup(self) -> None:
        """One look of the kubelet's housekeeping: a force-deleted pod's processes and cgroup go in time."""
        for uid, (pod_dir, pids, looks) in list(self.lingering.items()):
            if looks > 1:
                self.lingering[uid] = (pod_dir, pids, looks - 1)
                continue
            del self.lingering[uid]
            for pid in pids:
                shutil.rmtree(self.tree.proc / str(pid))
            shutil.rmtree(self.tree.cgroup / pod_dir)

    def list_events(self, namespace: str, field_selector: str) -> list[dict[str, Any]]:
        wanted = dict(part.split("=", 1) for part in field_selector.split(",") if part)
        out = []
        for (ns, _), items in self.events.items():
            for item in items:
                fields = {f"involvedObject.{k}": v for k, v in item["involvedObject"].items()}
                if ns == namespace and all(fields.get(k) == v for k, v in wanted.items()):
                    out.append(item)
        return list(reversed(out))  # the API does not promise an order

    def patch_pod_resize(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        kube_schema.check(patch, "v1", "Pod", patch=True)
        if (namespace, name) not in self.pods:
            raise KubeApiError(404, f'pods "{name}" not found')
        obj = self.pods[(namespace, name)]
        behaviour = self.resize_behaviour.get(name, "apply")
        if behaviour == "no-subresource":
            raise KubeApiError(404, "the server could not find the requested resource")
        if behaviour == "qos-change":
            raise KubeApiError(422, f'Pod "{name}" is invalid: spec: Invalid value: "Guaranteed": '
                                    "Pod QOS Class may not change as a result of resizing")
        for change in patch["spec"]["containers"]:
            for container in obj["spec"]["containers"]:
                if container["name"] == change["name"]:
                    container["resources"] = change["resources"]
        obj["metadata"]["generation"] += 1
        obj["resize_pending"] = behaviour
        return copy.deepcopy(obj)

    def _resize_step(self, obj: dict[str, Any]) -> None:
        behaviour = obj.pop("resize_pending", None)
        if behaviour is None:
            return
        if behaviour == "unobserved":
            obj["resize_pending"] = behaviour
            return
        obj["status"]["observedGeneration"] = obj["metadata"]["generation"]
        if behaviour == "apply":
            for container, status in zip(obj["spec"]["containers"], obj["status"]["containerStatuses"], strict=True):
                status["resources"] = copy.deepcopy(container["resources"])
        elif behaviour == "defer":
            obj["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Deferred",
                                            "message": "Node didn't have enough capacity: memory"}]
        elif behaviour == "infeasible":
            obj["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible",
                                            "message": "Node didn't have enough capacity: cpu"}]
        elif behaviour.startswith("accept"):
            # The kubelet accepts (PodResizeInProgress), actuates (status resources), then clears the condition;
            # `accept-stuck` never finishes (e.g. a memory limit below usage: reason Error).
            in_progress = {"type": "PodResizeInProgress", "status": "True"}
            if behaviour == "accept-stuck":
                in_progress.update(reason="Error", message="memory limit too low")
                obj["resize_pending"] = behaviour
            step = obj.get("resize_step", 0)
            obj["resize_step"] = step + 1
            if step == 0 or behaviour == "accept-stuck":
                obj["status"]["conditions"] = [in_progress]
            elif step == 1:
                for container, status in zip(obj["spec"]["containers"], obj["status"]["containerStatuses"],
                                             strict=True):
                    status["resources"] = copy.deepcopy(container["resources"])
            else:
                obj["status"]["conditions"] = []
            if step < 2 and behaviour != "accept-stuck":
                obj["resize_pending"] = behaviour

    def pod_log(self, namespace: str, name: str, container: str, previous: bool) -> str:
        return f"log of {namespace}/{name}/{container} previous={previous}\n"

    def exec(self, namespace: str, name: str, container: str, argv: Sequence[str], timeout: float) -> ExecOutput:
        self.execs.append((namespace, name, container, list(argv)))
        if name != HELPER_NAME:
            return self.exec_answers.get(argv[0], ExecOutput(0, "", ""))
        assert argv[:2] == ["python3", "/opt/nodeconf/reader/kube_reader.py"] and len(argv) == 3
        mounted = self.pods[(namespace, name)]["spec"]["volumes"][1]["configMap"]["name"]
        assert self.objects[("ConfigMap", namespace, mounted)]["data"] == {
            "kube_reader.py": inspect.getsource(kube_reader)}
        request = json.loads(argv[2])
        if request["op"] == "podCgroup":
            self._kubelet_cleanup()
        assert (request["proc"], request["cgroupRoot"]) == ("/proc", "/host/cgroup")
        request.update(proc=str(self.tree.proc), cgroupRoot=str(self.tree.cgroup))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = kube_reader.main([json.dumps(request)])
        return ExecOutput(rc, out.getvalue(), "")

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake(tmp_path: Path) -> FakeKube:
    return FakeKube(FakeNode(tmp_path))


def make_node(fake: FakeKube, clock: FakeClock) -> KubeNode:
    return KubeNode(fake, NODE, spec="kube:kind-kind", run_id=RUN, timeouts=Timeouts(
        pod=10, start=10, delete=5, resize=3, quota=5, start_retry=3, service_account=3, poll=0.5),
        sleep=clock.sleep, clock=clock)


@pytest.fixture
def node(fake: FakeKube, clock: FakeClock) -> Iterator[KubeNode]:
    started = make_node(fake, clock).start()
    try:
        yield started
    finally:
        started.close()


def ctr(name: str, image: str = "busybox:1.37", command: tuple[str, ...] = ("sleep", "3600"),
        requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None) -> Container:
    return Container(name=name, image=image, command=command, resources=Resources(
        requests={k: Quantity.parse(v) for k, v in (requests or {}).items()},
        limits={k: Quantity.parse(v) for k, v in (limits or {}).items()}))


RES_DEMO = Pod(name="res-demo", containers=(ctr("hello", requests={"cpu": "250m", "memory": "128Mi"},
                                                 limits={"cpu": "500m", "memory": "128Mi"}),))


# --- start and close -----------------------------------------------------------------------------------------

def test_start_creates_the_reader_pod_on_the_node(node: KubeNode, fake: FakeKube) -> None:
    helper = fake.pods[(BASE_NS, HELPER_NAME)]
    spec = helper["spec"]
    assert spec["nodeName"] == NODE and spec["hostPID"] is True
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "cgroup", "mountPath": "/host/cgroup", "readOnly": True},
        {"name": "reader", "mountPath": "/opt/nodeconf/reader", "readOnly": True}]
    assert spec["volumes"][0]["hostPath"]["path"] == "/sys/fs/cgroup"
    # Guaranteed (requests = limits, small): evicted after the suites' own Burstable and BestEffort hogs.
    resources = spec["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "500m", "memory": "128Mi"}
    assert helper["status"]["qosClass"] == "Guaranteed"
    assert helper["metadata"]["labels"]["nodeconf.io/run"] == RUN


def test_close_deletes_every_namespace_of_the_run(fake: FakeKube, clock: FakeClock) -> None:
    with make_node(fake, clock).start() as kube:
        kube.run(RES_DEMO)
    assert sorted(fake.deleted_namespaces) == [BASE_NS, DEFAULT_NS]
    assert not fake.pods and not fake.namespaces and fake.closed


def test_a_reader_pod_that_cannot_start_leaves_nothing_behind(fake: FakeKube, clock: FakeClock) -> None:
    fake.behaviour[HELPER_NAME] = "bad-image"
    with pytest.raises(NodeError, match=r"reader pod .* cannot start: container reader: InvalidImageName"):
        make_node(fake, clock).start()
    assert fake.deleted_namespaces == [BASE_NS] and fake.closed


# --- run -----------------------------------------------------------------------------------------------------

def test_run_binds_the_pod_to_the_node_in_the_run_namespace(node: KubeNode, fake: FakeKube) -> None:
    pod = Pod(name="mixed", uid="11111111-2222-3333-4444-555555555555", labels={"app": "x"},
              containers=(ctr("app"), Container(name="idle"),
                          ctr("hog", image="", command=("python3", f"{PROGRAMS_DIR}/memhog.py", "64"))))
    handle = node.run(pod)
    assert handle.admitted and handle.errors == ()
    sent = fake.pods[(DEFAULT_NS, "mixed")]
    assert sent["spec"]["nodeName"] == NODE
    assert sent["spec"]["terminationGracePeriodSeconds"] == 0
    assert sent["metadata"]["uid"] != pod.uid  # the API server assigns uids
    assert sent["metadata"]["labels"] == {"app": "x", "app.kubernetes.io/managed-by": "nodeconf",
                                          "nodeconf.io/run": RUN}
    app, idle, hog = sent["spec"]["containers"]
    # Fully qualified: CRI-O >= 1.34 refuses short names (cri-o#9401).
    assert app["image"] == "docker.io/library/busybox:1.37" and app["command"] == ["sleep", "3600"]
    assert idle["image"] == "docker.io/library/busybox:1.37" and idle["command"] == ["sleep", "infinity"]
    assert hog["image"] == "docker.io/library/python:3.12-slim"
    assert hog["volumeMounts"] == [{"name": "programs", "mountPath": PROGRAMS_DIR, "readOnly": True}]
    assert sent["spec"]["volumes"] == [{"name": "programs", "configMap": {"name": PROGRAMS_CONFIGMAP}}]
    programs = fake.objects[("ConfigMap", DEFAULT_NS, PROGRAMS_CONFIGMAP)]["data"]
    assert {"memhog.py", "cpuburn.py"} <= set(programs)


@pytest.mark.parametrize(("keep_images", "image", "command"), [
    # As the enforcer: the command runs, or a sleeper; the seed's example image is not pulled.
    pytest.param(False, "docker.io/library/busybox:1.37", ["sleep", "infinity"], id="stand-in"),
    pytest.param(True, "ghcr.io/example/hello:1.0", None, id="keep-images"),
])
def test_image_policy(fake: FakeKube, clock: FakeClock, keep_images: bool, image: str,
                      command: list[str] | None) -> None:
    kube = make_node(fake, clock)
    kube.keep_images = keep_images
    with kube.start():
        kube.run(Pod(name="hello", containers=(Container(name="hello", image="ghcr.io/example/hello:1.0"),)))
        sent = fake.pods[(DEFAULT_NS, "hello")]["spec"]["containers"][0]
        assert (sent["image"], sent.get("command")) == (image, command)


def test_status_reads_phase_qos_containers_and_events(node: KubeNode) -> None:
    status = node.run(RES_DEMO).status()
    assert (status.phase, status.qos_class) == ("Running", "Burstable")
    assert status.container("hello").running and status.container("hello").restart_count == 0
    assert [(e.type, e.reason) for e in status.events] == [("Normal", "Started")]
    assert status.resize == ResizeStatus("")


def test_kubelet_rejection_is_reported_with_its_message(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["huge"] = "reject"
    handle = node.run(Pod(name="huge", containers=(ctr("c", requests={"memory": "64Gi"}),)))
    assert not handle.admitted
    assert handle.errors == ("Pod was rejected: Node didn't have enough resource: memory",)
    assert (DEFAULT_NS, "huge") not in fake.pods  # nothing left behind; the same name can be tried again
    with pytest.raises(NodeError, match="was rejected"):
        handle.evidence()


@pytest.mark.parametrize(("status", "message"), [
    pytest.param(403, 'pods "big" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi',
                 id="limitrange"),
    pytest.param(422, 'Pod "big" is invalid: spec.containers[0].resources.requests[swap]: Invalid value: '
                      '"0": swap may only be specified in limits, not requests', id="validation"),
])
def test_api_rejection_is_reported_with_its_message(node: KubeNode, fake: FakeKube, status: int,
                                                     message: str) -> None:
    fake.refuse["big"] = (status, message)
    handle = node.run(Pod(name="big", containers=(ctr("c"),)))
    assert (handle.admitted, handle.errors) == (False, (message,))


def test_api_outage_is_an_infrastructure_error(node: KubeNode, fake: FakeKube) -> None:
    fake.refuse["p"] = (503, "the server is currently unable to handle the request")
    with pytest.raises(KubeApiError, match="503"):
        node.run(Pod(name="p", containers=(ctr("c"),)))


def test_an_image_that_cannot_be_pulled_is_an_error_and_the_pod_is_deleted(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["cache"] = "image"
    with pytest.raises(NodeError, match=r'pod .*/cache .* cannot start \(for 3 s\): container c: ErrImagePull: '
                                        r'.*busybox:1\.37"'):
        node.run(Pod(name="cache", containers=(ctr("c", image="cache:latest"),)))
    assert (DEFAULT_NS, "cache") not in fake.pods


def test_a_pod_that_never_starts_times_out_with_its_phase(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["stuck"] = "never"
    with pytest.raises(NodeError, match=r"not started on node kind-control-plane within 10 s \(phase Pending"):
        node.run(Pod(name="stuck", containers=(ctr("c"),)))


def test_oom_killed_container_state(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour["eater"] = "oom"
    eater = node.run(Pod(name="eater", containers=(ctr("eater", command=("tail", "/dev/zero"),
                                                       requests={"memory": "64Mi"}, limits={"memory": "64Mi"}),)))
    assert eater.admitted
    state = eater.status().container("eater")
    assert (state.state, state.reason, state.restart_count) == ("waiting", "CrashLoopBackOff", 2)
    assert state.last_terminated == Terminated(137, "OOMKilled")
    assert ("Warning", "BackOff") in [(e.type, e.reason) for e in eater.events()]


@pytest.mark.parametrize("name", ["../etc", "Upper", "a" * 254])
def test_bad_pod_names_never_reach_the_api(node: KubeNode, fake: FakeKube, name: str) -> None:
    with pytest.raises(UnsafeName):
        node.run(Pod(name=name, containers=(ctr("c"),)))
    assert len(fake.pods) == 1  # only the reader


def test_namespaces_map_into_the_run() -> None:
    assert kube_namespace(RUN, "default") == DEFAULT_NS
    long_name = kube_namespace(RUN, "n" * 60)
    assert len(long_name) <= 63 and long_name.startswith(f"nodeconf-{RUN}-")
    assert kube_namespace(RUN, "n" * 60) != kube_namespace(RUN, "n" * 61)


# --- evidence ------------------------------------------------------------------------------------------------

def test_reader_requests_stay_short(node: KubeNode, fake: FakeKube) -> None:
    """An exec's argv travels in the request URL (command=...): the program is mounted, only JSON is sent."""
    node.run(RES_DEMO).evidence(extra_files=["memory.swap.max"])
    assert len(urlencode([("command", word) for word in fake.execs[-1][3]])) < 4096


def test_evidence_of_a_pod_in_one_reader_round_trip(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    before = len(fake.execs)
    evidence = handle.evidence(extra_files=["memory.swap.max"])
    assert len(fake.execs) == before + 1
    # Paths in the oracle's frame: kind's kubelet- prefix gone, the manifest's uid instead of the API's.
    assert evidence.pod_cgroup.path == pod_cgroup(RES_DEMO.uid, QosClass.BURSTABLE, "systemd")
    assert set(evidence.ancestors) == {"kubepods.slice", "kubepods.slice/kubepods-burstable.slice"}
    assert evidence.cgroup("kubepods.slice/kubepods-burstable.slice")["cpu.weight"] == "100"
    hello = evidence.container("hello")
    assert hello.cgroup.path.startswith(evidence.pod_cgroup.path + "/cri-containerd-")
    real_uid = fake.pods[(DEFAULT_NS, "res-demo")]["metadata"]["uid"].replace("-", "_")
    real_pod = f"{KUBEPODS}/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod{real_uid}.slice"
    assert f"cgroup {evidence.pod_cgroup.path} is {real_pod} on node {NODE}" in node.logs()
    assert hello.cgroup["cpu.weight"] == "35"
    assert hello.cgroup.limit("memory.max") == 128 * 1024 * 1024
    assert hello.cgroup["memory.swap.max"] == "0"
    assert len(hello.pids) == 1 and hello.oom_score_adj == {hello.pids[0]: 500}
    assert evidence.pause is not None and list(evidence.pause.oom_score_adj.values()) == [-998]
    assert evidence.status.qos_class == "Burstable"
    request = json.loads(fake.execs[-1][3][2])
    assert request["op"] == "pod" and "memory.events" in request["files"] and "memory.swap.max" in request["files"]


def test_guaranteed_pod_evidence_has_kubepods_as_its_only_ancestor(node: KubeNode) -> None:
    pod = Pod(name="g", containers=(ctr("c", requests={"cpu": "1", "memory": "1Gi"},
                                        limits={"cpu": "1", "memory": "1Gi"}),))
    evidence = node.run(pod).evidence()
    assert list(evidence.ancestors) == ["kubepods.slice"]
    assert evidence.pod_cgroup.path == pod_cgroup(pod.uid, QosClass.GUARANTEED, "systemd")
    assert evidence.container("c").oom_score_adj == {evidence.container("c").pids[0]: -997}


def test_bad_extra_file_names_never_reach_the_node(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    before = len(fake.execs)
    with pytest.raises(UnsafeName):
        handle.evidence(extra_files=["../../etc/shadow"])
    assert len(fake.execs) == before


def test_reader_errors_name_the_node(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.pods[(DEFAULT_NS, "res-demo")]["metadata"]["uid"] = "99999999-9999-9999-9999-999999999999"
    with pytest.raises(NodeError, match="evidence reader on node kind-control-plane: ReaderError: no process of pod"):
        handle.evidence()


def test_node_cgroups(node: KubeNode) -> None:
    cgroups = node.node_cgroups()
    assert set(cgroups) == {"kubepods.slice", "kubepods.slice/kubepods-burstable.slice",
                            "kubepods.slice/kubepods-besteffort.slice"}
    assert cgroups["kubepods.slice"]["cpu.weight"] == "100"
    assert f"cgroup kubepods.slice is {KUBEPODS} on node {NODE}" in node.logs()


# --- resize, exec, logs, delete ------------------------------------------------------------------------------

RESIZE = {"spec": {"containers": [{"name": "hello", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"},
                                                                  "limits": {"cpu": "1", "memory": "128Mi"}}}]}}


@pytest.mark.parametrize(("behaviour", "expected"), [
    pytest.param("apply", ResizeStatus("Applied"), id="applied"),
    pytest.param("defer", ResizeStatus("Deferred", "Node didn't have enough capacity: memory"), id="deferred"),
    pytest.param("qos-change", ResizeStatus("Rejected", 'Pod "res-demo" is invalid: spec: Invalid value: '
                                            '"Guaranteed": Pod QOS Class may not change as a result of resizing'),
                 id="qos-change-refused"),
    pytest.param("unobserved", ResizeStatus("InProgress", "the kubelet has not acted on the resize yet"),
                 id="kubelet-silent"),
])
def test_resize(node: KubeNode, fake: FakeKube, behaviour: str, expected: ResizeStatus) -> None:
    handle = node.run(RES_DEMO)
    fake.resize_behaviour["res-demo"] = behaviour
    assert handle.resize(RESIZE) == expected


def test_resize_on_a_cluster_without_the_subresource_is_not_applicable(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.resize_behaviour["res-demo"] = "no-subresource"
    with pytest.raises(NotApplicable, match="does not serve pods/resize"):
        handle.resize(RESIZE)
    del fake.pods[(DEFAULT_NS, "res-demo")]
    with pytest.raises(KubeApiError, match="not found"):  # a vanished pod stays an infrastructure error
        handle.resize(RESIZE)


def test_resize_status_stays_visible_in_the_pod_status(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    handle.resize(RESIZE)
    assert handle.status().resize == ResizeStatus("Applied")


def test_exec_passes_argv_as_a_list(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    fake.exec_answers["sh"] = ExecOutput(3, "out", "err")
    argv = ["sh", "-c", "echo $HOME; exit 3"]
    assert handle.exec("hello", argv).rc == 3
    assert fake.execs[-1] == (DEFAULT_NS, "res-demo", "hello", argv)
    with pytest.raises(UnsafeName):
        handle.exec("hello; rm -rf /", ["true"])


def test_logs(node: KubeNode) -> None:
    handle = node.run(RES_DEMO)
    assert handle.logs() == f"log of {DEFAULT_NS}/res-demo/hello previous=False\n"
    assert "res-demo: Normal Started: Started container" in node.logs()


def test_delete_waits_until_the_pod_is_gone(node: KubeNode, fake: FakeKube) -> None:
    handle = node.run(RES_DEMO)
    handle.delete()
    assert (DEFAULT_NS, "res-demo") not in fake.pods
    handle.delete()  # twice is harmless


# --- facts, configure, metrics, namespace objects -----------------------------------------------------------

@pytest.mark.parametrize("formula", ["nonlinear", "linear"])
def test_facts_measure_the_cpu_weight_formula(tmp_path: Path, clock: FakeClock, formula: str) -> None:
    fake = FakeKube(FakeNode(tmp_path), formula=formula)
    with make_node(fake, clock).start() as kube:
        facts = kube.facts()
        assert facts.measured_cpu_weight_formula == formula
        assert facts.cpu_weight_formula == "nonlinear", "the measurement is reported, never expected"
        assert (facts.memory_capacity, facts.swap_capacity) == (3479660 * 1024, 4 * 1024**3)
        assert facts.cgroup_controllers == ("cpu", "memory", "pids")
        assert (BASE_NS, PROBE_NAME) not in fake.pods
        probe = [e for e in fake.execs if json.loads(e[3][2]).get("op") == "pod"]
        assert len(probe) == 1
        assert kube.facts() is facts  # cached


def test_a_refused_probe_pod_is_named(node: KubeNode, fake: FakeKube) -> None:
    fake.behaviour[PROBE_NAME] = "reject"
    with pytest.raises(NodeError, match=r"cpu-weight probe pod \(250m cpu\) refused by node kind-control-plane: "
                                        "Pod was rejected"):
        node.facts()
    assert (BASE_NS, PROBE_NAME) not in fake.pods


def test_configure_accepts_the_running_config(node: KubeNode) -> None:
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": "LimitedSwap"},
                                       "featureGates": {"MemoryQoS": True}})
    assert node.configure(config, "1.34") == ()


def test_configure_on_kind_says_how_to_create_the_cluster(node: KubeNode) -> None:
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration",
                                       "memorySwap": {"swapBehavior": "WorkloadControlledSwap"},
                                       "featureGates": {"WorkloadControlledSwap": True}})
    with pytest.raises(KubeletConfigNotApplicable) as err:
        node.configure(config)
    assert isinstance(err.value, NotApplicable)  # the suites skip the check
    text = str(err.value)
    assert "memorySwap.swapBehavior: requested WorkloadControlledSwap, node has LimitedSwap" in text
    # No config under nodeconf/infra/kind/ gives it: no released node image knows the WorkloadControlledSwap gate.
    assert "kind create cluster" not in text and "no released kind node image knows" in text


def test_configure_on_a_real_cluster_and_another_version(node: KubeNode, fake: FakeKube) -> None:
    fake.node["spec"]["providerID"] = "gce://project/zone/node-1"
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration", "memorySwap": {"swapBehavior": "LimitedSwap"}})
    with pytest.raises(KubeletConfigNotApplicable,
                       match=r"profile: requested 1\.38, node has kubelet 1\.34.*point nodeconf at a node"):
        node.configure(config, "1.38")


def test_node_conditions_are_read_fresh(node: KubeNode, fake: FakeKube) -> None:
    fake.node["status"]["conditions"] = [{"type": "Ready", "status": "True"},
                                         {"type": "MemoryPressure", "status": "False"}]
    assert not node.conditions().memory_pressure
    fake.node["status"]["conditions"][1]["status"] = "True"
    node_event = {"type": "Warning", "reason": "EvictionThresholdMet", "message": "Attempting to reclaim memory",
                  "lastTimestamp": "2026-11-29T19:01:00Z", "involvedObject": {"kind": "Node", "name": NODE}}
    fake.namespaces.add("default")
    fake.events[("default", NODE)] = [node_event]
    conditions = node.conditions()
    assert conditions.memory_pressure and conditions.conditions["Ready"]
    assert [(e.type, e.reason) for e in conditions.events] == [("Warning", "EvictionThresholdMet")]


def test_metrics(node: KubeNode) -> None:
    metrics = node.metrics()
    assert metrics.value("kubelet_node_swap_allocated_bytes") == 1073741824
    assert metrics.value("kubelet_container_swap_usage_bytes", container="app", namespace="ns", pod="p") == 4096


def test_cadvisor_metrics_come_from_the_kubelets_cadvisor_endpoint(node: KubeNode, fake: FakeKube) -> None:
    labels = {"container": "app", "id": "/kubepods.slice/x", "image": "busybox", "name": "abc", "namespace": "ns",
              "pod": "p"}
    key = ("container_pressure_memory_waiting_seconds_total", tuple(sorted(labels.items())))
    assert node.cadvisor_metrics().samples[key] == 2.5, "the sample's timestamp is not its value"
    fake.forbidden_proxy = True
    with pytest.raises(NotApplicable, match=r"metrics .* cannot be read"):
        node.cadvisor_metrics()


def test_namespace_objects_are_replaced_and_quotas_awaited(node: KubeNode, fake: FakeKube) -> None:
    limits = LimitRange(name="mem", namespace="team", limits=(LimitRangeItem(
        type="Container", max={"memory": Quantity.parse("2Gi")}),))
    quota = ResourceQuota(name="budget", namespace="team", hard={"pods": Quantity.parse("20")})
    node.set_namespace_objects([limits, quota])
    team = kube_namespace(RUN, "team")
    assert fake.objects[("LimitRange", team, "mem")]["spec"]["limits"][0]["max"] == {"memory": "2Gi"}
    assert fake.objects[("ResourceQuota", team, "budget")]["status"]["hard"] == {"pods": "20"}
    node.set_namespace_objects([quota])
    assert ("LimitRange", team, "mem") not in fake.objects


# --- node choice ---------------------------------------------------------------------------------------------

def ready(name: str, *, control_plane: bool = False, is_ready: bool = True) -> dict[str, Any]:
    labels = {"node-role.kubernetes.io/control-plane": ""} if control_plane else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True" if is_ready else "False"}]}}


@pytest.mark.parametrize(("nodes", "wanted", "chosen"), [
    pytest.param([ready("kind-control-plane", control_plane=True)], None, "kind-control-plane", id="single-kind"),
    pytest.param([ready("cp", control_plane=True), ready("w2"), ready("w1")], None, "w1", id="prefer-worker"),
    pytest.param([ready("w1", is_ready=False), ready("cp", control_plane=True)], None, "cp", id="only-ready"),
    pytest.param([ready("cp", control_plane=True), ready("w1")], "cp", "cp", id="named"),
])
def test_choose_node(nodes: list[dict[str, Any]], wanted: str | None, chosen: str) -> None:
    assert choose_node(nodes, wanted)["metadata"]["name"] == chosen


@pytest.mark.parametrize(("nodes", "wanted", "message"), [
    pytest.param([ready("w1")], "w9", "no node 'w9' in the cluster (nodes: w1)", id="unknown"),
    pytest.param([ready("w1", is_ready=False)], None, "no Ready Linux node that is not virtual", id="none-ready"),
])
def test_choose_node_errors(nodes: list[dict[str, Any]], wanted: str | None, message: str) -> None:
    with pytest.raises(NodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        choose_node(nodes, wanted)
