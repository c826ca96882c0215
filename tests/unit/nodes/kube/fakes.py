"""Fakes of a kube cluster for the kube driver tests: the API (FakeKube) on a fake clock, the node its reader pod
execs on (FakeNode, a temporary cgroup tree in a Layout), the recorded Node object and /configz, and a kubeconfig."""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from nodeconf.manifest import Container, Pod, Resources
from nodeconf.nodes.kube import reader as kube_reader
from nodeconf.nodes.kube.api import ExecOutput, KubeApiError
from nodeconf.nodes.kube.node import KubeNode
from nodeconf.nodes.kube.pods import HELPER_NAME
from nodeconf.nodes.kube.reader import Host
from nodeconf.nodes.kube.timeouts import Timeouts
from nodeconf.quantity import Quantity
from tests.unit.nodes.kube import kube_schema

CID_APP = "a" * 64
CID_SIDE = "b" * 64
CID_SANDBOX = "c" * 64
HELPER_CID = "d" * 64


@dataclass(frozen=True)
class Layout:
    """Where one runtime/driver combination puts kubepods, a Burstable pod and its containers.

    `sub` is crun's sub-cgroup of a systemd scope (crun cgroup-systemd.c, `run.oci.systemd.subgroup`),
    `conmon` CRI-O's monitor cgroup next to the containers (cri-o conmon_cgroup "pod"), `pause` False for a
    CRI-O pod without an infra container (drop_infra_ctr).
    """

    kubepods: str
    burstable: str
    besteffort: str
    pod: str
    leaf: str  # format string with {cid}
    sub: str = ""
    conmon: str = ""
    pause: bool = True

    def scope(self, cid: str) -> str:
        return f"{self.pod}/{self.leaf.format(cid=cid)}"

    def container(self, cid: str) -> str:
        """The cgroup holding the container's processes and OCI resources."""
        return f"{self.scope(cid)}/{self.sub}" if self.sub else self.scope(cid)


class FakeNode:
    """A /proc and a cgroup2 mount under tmp_path, filled process by process."""

    def __init__(self, root: Path) -> None:
        self.proc = root / "proc"
        self.cgroup = root / "cgroup"
        self.proc.mkdir()
        self.cgroup.mkdir()
        (self.proc / "meminfo").write_text("MemTotal:       8148820 kB\nSwapTotal:      4194300 kB\n")

    @property
    def host(self) -> Host:
        return Host(str(self.proc), str(self.cgroup))

    def cgroup_dir(self, path: str, **files: str) -> Path:
        directory = self.cgroup / path
        directory.mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            (directory / name.replace("_", ".")).write_text(value + "\n")
        return directory

    def process(self, pid: int | str, path: str, oom_score_adj: int = 0, v1_lines: str = "") -> None:
        pid_dir = self.proc / str(pid)
        pid_dir.mkdir()
        (pid_dir / "cgroup").write_text(f"{v1_lines}0::/{path}\n")
        (pid_dir / "oom_score_adj").write_text(f"{oom_score_adj}\n")
        procs = self.cgroup_dir(path) / "cgroup.procs"
        old = procs.read_text() if procs.exists() else ""
        if str(pid).isdigit():
            procs.write_text(f"{old}{pid}\n")

    def pod(self, layout: Layout) -> None:
        """A Burstable pod: pause, an app container (two processes), a sidecar; the helper pod BestEffort."""
        for level in (layout.kubepods, layout.burstable, layout.besteffort):
            self.cgroup_dir(level, cpu_weight="100", memory_min="0", cgroup_controllers="cpu memory pids")
        self.cgroup_dir(layout.pod, cpu_weight="10", memory_max="max", memory_low="0")
        if layout.sub:  # crun: the scope carries systemd's view (swap as memory+swap), the sub-cgroup the OCI one
            self.cgroup_dir(layout.scope(CID_APP), cpu_weight="35", memory_max="134217728",
                            memory_swap_max="134217728")
        self.cgroup_dir(layout.container(CID_APP), cpu_weight="35", memory_max="134217728", memory_swap_max="0")
        self.cgroup_dir(layout.container(CID_SIDE), cpu_weight="1", memory_max="max")
        if layout.pause:
            self.process(101, layout.container(CID_SANDBOX), -998)
        if layout.conmon:
            self.process(105, f"{layout.pod}/{layout.conmon.format(cid=CID_APP)}", -1000)
            self.process(106, f"{layout.pod}/{layout.conmon.format(cid=CID_SIDE)}", -1000)
        self.process(102, layout.container(CID_APP), 963)
        self.process(103, layout.container(CID_APP), 963)
        self.process(104, layout.container(CID_SIDE), 999)
        helper = f"{layout.besteffort}/{layout.leaf.format(cid=HELPER_CID)}"
        self.process(200, helper, 1000)
        self.process("self", helper)


def node_doc(**overrides: Any) -> dict[str, Any]:
    """A kind node as `kubectl get node -o json` shows it (trimmed)."""
    info = {"kernelVersion": "6.1.0-28-amd64", "kubeletVersion": "v1.34.2",
            "containerRuntimeVersion": "containerd://2.1.1", "swap": {"capacity": 4294967296}}
    info.update(overrides.pop("nodeInfo", {}))
    doc: dict[str, Any] = {
        "metadata": {"name": "kind-control-plane"},
        "spec": {"providerID": "kind://docker/kind/kind-control-plane"},
        "status": {"capacity": {"cpu": "2", "memory": "3479660Ki", "pods": "110"}, "nodeInfo": info},
    }
    doc["status"].update(overrides)
    return doc


# A trimmed /configz answer of a kind 1.34 kubelet (the kubelet serialises its whole, defaulted config).
CONFIGZ = {"kubeletconfig": {
    "enableServer": True, "cgroupRoot": "/kubelet", "cgroupDriver": "systemd", "cpuCFSQuota": True,
    "cpuCFSQuotaPeriod": "100ms", "evictionHard": {"imagefs.available": "0%", "nodefs.available": "0%",
                                                  "nodefs.inodesFree": "0%", "memory.available": "100Mi"},
    "featureGates": {"MemoryQoS": True}, "failSwapOn": False, "memorySwap": {"swapBehavior": "LimitedSwap"},
    "memoryThrottlingFactor": 0.9, "enforceNodeAllocatable": ["pods"], "kubeReserved": {},
    "systemReserved": {}, "singleProcessOOMKill": False,
}}


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
# A kubelet's /metrics/resource and /stats/summary, cut to one series and one pod (shapes of pkg/kubelet/metrics/
# collectors/resource_metrics.go and stats/v1alpha1 types.go; the sample's timestamp in ms).
RESOURCE = """\
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="ns",pod="p"} 8.388608e+06 1764550000000
"""
SUMMARY = {"node": {"nodeName": NODE, "startTime": "2026-12-01T00:00:00Z"},
           "pods": [{"podRef": {"name": "p", "namespace": "ns", "uid": "u"}, "startTime": "2026-12-01T00:00:00Z",
                     "containers": [], "memory": {"time": "2026-12-01T00:00:10Z", "workingSetBytes": 8388608}}]}


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
        return {"configz": json.dumps(self.configz), "metrics": METRICS, "metrics/cadvisor": CADVISOR,
                "metrics/resource": RESOURCE, "stats/summary": json.dumps(SUMMARY)}[path]

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
            # containerd < 2.3: the exit is reported before (or without) TaskOOM, so the reason is Error
            # (semantics/runtime_oom.py); the status as kubernetes/kubernetes#122256 shows it on a containerd node
            # (lastState terminated, reason Error, exit code 137, restart count 1). The pod cgroup's oom_kill count
            # tells an OOM kill from a plain SIGKILL.
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


def make_node(fake: FakeKube, clock: FakeClock) -> KubeNode:
    return KubeNode(fake, NODE, spec="kube:kind-kind", run_id=RUN, timeouts=Timeouts(
        pod=10, start=10, delete=5, resize=3, quota=5, start_retry=3, service_account=3, poll=0.5),
        sleep=clock.sleep, clock=clock)


def ctr(name: str, image: str = "busybox:1.37", command: tuple[str, ...] = ("sleep", "3600"),
        requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None) -> Container:
    return Container(name=name, image=image, command=command, resources=Resources(
        requests={k: Quantity.parse(v) for k, v in (requests or {}).items()},
        limits={k: Quantity.parse(v) for k, v in (limits or {}).items()}))


RES_DEMO = Pod(name="res-demo", containers=(ctr("hello", requests={"cpu": "250m", "memory": "128Mi"},
                                                 limits={"cpu": "500m", "memory": "128Mi"}),))


RESIZE = {"spec": {"containers": [{"name": "hello", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"},
                                                                  "limits": {"cpu": "1", "memory": "128Mi"}}}]}}


# Nothing listens on port 1: connections are refused at once.
UNREACHABLE = "https://127.0.0.1:1"


def kubeconfig(tmp_path: Path, current: str | None = "kind-a", contexts: Sequence[str] = ("kind-a", "kind-b")) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": c, "cluster": {"server": UNREACHABLE, "insecure-skip-tls-verify": True}}
                     for c in contexts],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts],
    }
    if current:
        doc["current-context"] = current
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)
