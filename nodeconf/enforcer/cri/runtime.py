"""Containers started by the node's CRI runtime (containerd) over the CRI v1 API, in the kubelet's sequence.

The pod's pause record becomes its sandbox (RunPodSandbox in the pod cgroup the agent made, host network), each
container CreateContainer + StartContainer with the LinuxContainerResources the kubelet sends; a resize is
UpdateContainerResources; exits, codes and OOMKilled come from ContainerStatus. Container cgroups are the runtime's
(`cri-containerd-<id>.scope` under a systemd slice, `<pod>/<id>` under cgroupfs); restarts, back-off and eviction
stay the agent's. Only sandboxes and images labelled with this agent's token are ever removed.

Source: kubernetes pkg/kubelet/kuberuntime kuberuntime_sandbox.go generatePodSandboxConfig (cgroup_parent, host
network namespace), kuberuntime_container.go startContainer (CreateContainer then StartContainer; attempt = restart
count), kuberuntime_container_linux.go generateLinuxContainerResources; containerd getCgroupsPath (RUNTIME-FACTS
§1 "cgroupsPath"); CRI api.proto.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import secrets
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf.enforcer import oci_bundle
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.enforcer.cri import images
from nodeconf.enforcer.cri import messages as m
from nodeconf.enforcer.cri.client import CriClient
from nodeconf.enforcer.cri.grpc import NOT_FOUND, GrpcError
from nodeconf.enforcer.daemons import CONTAINERD_SOCKET
from nodeconf.enforcer.oci_bundle import CriResources
from nodeconf.enforcer.oci_runtime import (
    COMMAND_TIMEOUT,
    PROBE_CGROUP,
    PROBE_SHARES,
    OciRuntime,
    RuntimeCommandError,
    RuntimeProcess,
)
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu import measured_formula
from nodeconf.workloads import SLEEPER

CRI = "containerd"
logger = logging.getLogger(__name__)  # below the agent's "nodeconf.enforcer"
TOKEN_FILE = "cri-token"
WORKLOAD_IMAGE = "nodeconf.local/workload"
# Where containers see the node's programs (CRI mounts, read-only): as under the OCI runtimes, plus the agent's
# home with the workload programs; /sys/fs/cgroup writable at its own place (oci_bundle.CGROUP_TREE). containerd still
# gives each container a cgroup namespace of its own on cgroup v2, so /proc/self/cgroup reads `0::/` there
# (memhog finds its directory by its pid instead).
PROBE_NAME = "nodeconf-runtime-probe"
# The sandbox image line of `containerd config dump`: `sandbox_image = "…"` (1.x, go-toml v1), `sandbox = '…'`
# (2.x's pinned_images, go-toml v2 writes literal strings).
SANDBOX_LINE = re.compile(r"""^\s*sandbox(?:_image)?\s*=\s*["']([^"']+)["']""", re.MULTILINE)
NODE_NAMESPACES = {"network": m.NAMESPACE_NODE, "pid": m.NAMESPACE_CONTAINER, "ipc": m.NAMESPACE_POD}


def _exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


class _CriRecord(RuntimeProcess):
    """What the CRI runtime runs for the agent: its id, host pid and the cgroup the runtime put it in."""

    def __init__(self, runtime: CriRuntime, cid: str, pid: int, cgroup: str) -> None:
        super().__init__(runtime, cid, pid)
        self.cri = runtime
        self.cgroup = cgroup


class CriProcess(_CriRecord):
    """A container the CRI runtime runs."""

    def poll(self) -> int | None:
        """Once the process is gone: the exit code and OOMKilled from ContainerStatus (None while it runs)."""
        if self.returncode is None and not _exists(self.pid):
            try:
                status = self.cri.client.container_status(self.cid).get("status", {})
            except GrpcError as err:
                if err.code != NOT_FOUND:
                    return None
                status = {"state": m.CONTAINER_EXITED, "exit_code": 255}
            if status.get("state", m.CONTAINER_CREATED) == m.CONTAINER_EXITED:
                self.oom_killed = status.get("reason") == "OOMKilled"
                self.returncode = int(status.get("exit_code", 0))
        return self.returncode

    def stop(self) -> None:
        """StopContainer (SIGKILL at once, timeout 0), then RemoveContainer; the runtime removes its cgroup."""
        self.poll()
        self.cri.delete(self.cid)
        if self.returncode is None:
            self.returncode = 137


class CriSandbox(_CriRecord):
    """A pod sandbox: its id and the pause process's pid."""

    def poll(self) -> int | None:
        if self.returncode is None and not _exists(self.pid):
            self.returncode = 255
        return self.returncode

    def stop(self) -> None:
        """StopPodSandbox (stops every container of the pod) and RemovePodSandbox."""
        self.cri.remove_sandbox(self.cid)
        if self.returncode is None:
            self.returncode = 137


class CriRuntime(OciRuntime):
    """The node's CRI runtime at its socket; facts, images and sandboxes of this agent (its token)."""

    def __init__(self, state_dir: Path, read_only: Sequence[str], systemd_cgroup: bool,
                 socket_path: str = CONTAINERD_SOCKET, client: CriClient | None = None) -> None:
        self.name = CRI
        self.client = client or CriClient(socket_path)
        self.timeout = self.client.timeout
        self.flag: float | None = None
        self.state_dir = state_dir
        self.read_only = tuple(read_only)
        self.systemd_cgroup = systemd_cgroup
        self.token = _token(state_dir)
        self.images = images.ImageStore(self.token, address=socket_path)
        self.workload_image = f"{WORKLOAD_IMAGE}:{self.token}"
        self.sandboxes: dict[str, str] = {}  # pod cgroup → sandbox id
        self.sandbox_configs: dict[str, dict[str, Any]] = {}
        self.config: dict[str, Any] = {}
        self.runtime_version = ""

    def bound_requests(self, configured: float) -> None:
        """Bound each later CRI call as the kubelet does with this runtimeRequestTimeout (cri/client.py)."""
        super().bound_requests(configured)
        self.client.timeout = self.timeout

    # The runtime and its images.

    def connect(self) -> None:
        """Version and config (Status verbose), then the workload image and, when the node lacks it, a stand-in
        for the configured sandbox image; RuntimeCommandError when the runtime does not answer or refuses."""
        try:
            version = self.client.version()
            status = self.client.status(verbose=True)
            self.config = json.loads(status.get("info", {}).get("config", "{}"))
            self.runtime_version = str(version.get("runtime_version", ""))
            self._ensure_images()
        except (GrpcError, images.ImageError, ValueError) as err:
            raise RuntimeCommandError(f"CRI runtime at {self.client.socket_path}: {err}") from None

    def sandbox_image(self) -> str:
        """The configured sandbox image: `sandboxImage` in the CRI status config (1.6, 1.7), else from
        `containerd config dump` (2.x moved it to the image plugin's `pinned_images.sandbox`)."""
        if self.config.get("sandboxImage"):
            return str(self.config["sandboxImage"])
        try:
            done = subprocess.run(["containerd", "config", "dump"], capture_output=True, timeout=COMMAND_TIMEOUT,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        found = SANDBOX_LINE.search(done.stdout.decode(errors="replace"))
        return found.group(1) if found else ""

    def _ensure_images(self) -> None:
        work = self.state_dir / "images"
        sandbox = self.sandbox_image()
        if sandbox and self.client.image_status(sandbox) is None:
            if images.node_architecture() != "amd64":
                raise images.ImageError(f"sandbox image {sandbox} is missing and nodeconf's stand-in pause is x86-64")
            archive = images.oci_archive(sandbox, images.pause_entries(), {"Entrypoint": ["/pause"]})
            self.images.import_archive(sandbox, archive, work)
        if self.client.image_status(self.workload_image) is None:
            links, real = oci_bundle.usr_links()
            points = ("proc", "dev", "tmp", oci_bundle.CGROUP_TREE, *oci_bundle.READ_ONLY, *self.read_only, *real)
            archive = images.oci_archive(self.workload_image, images.workload_entries(points, links), {},
                                         images.node_architecture())
            self.images.import_archive(self.workload_image, archive, work)

    def facts(self) -> dict[str, Any]:
        """The runtime's name and version, the OCI runtime under it, and the CRI config values that change what
        containers get (SystemdCgroup, disable_hugetlb_controller, restrict_oom_score_adj, sandbox image)."""
        runc = self.config.get("containerd", {}).get("runtimes", {}).get("runc", {})
        return {"runtime": CRI, "runtime_version": self.runtime_version,
                "oci_runtime": str(runc.get("runtimeType", "")),
                "SystemdCgroup": bool((runc.get("options") or {}).get("SystemdCgroup", False)),
                "disable_hugetlb_controller": bool(self.config.get("disableHugetlbController", False)),
                "restrict_oom_score_adj": bool(self.config.get("restrictOOMScoreAdj", False)),
                "sandbox_image": self.sandbox_image()}

    def version(self) -> str:
        return self.runtime_version

    # Sandboxes and containers.

    def live_cgroup(self, pod_cgroup: str, cid: str) -> str:
        """Where the runtime puts a container (getCgroupsPath): a scope in a `.slice` parent, else `<parent>/<id>`."""
        return f"{pod_cgroup}/cri-containerd-{cid}.scope" if pod_cgroup.endswith(".slice") else f"{pod_cgroup}/{cid}"

    def cgroup_parent(self, pod_cgroup: str) -> str:
        """The pod cgroup as the kubelet sends it: the slice's name (systemd driver), else the absolute path."""
        return pod_cgroup.rsplit("/", 1)[-1] if self.systemd_cgroup else "/" + pod_cgroup

    def run_sandbox(self, name: str, namespace: str, uid: str, pod_cgroup: str, attempt: int,
                    log_dir: Path) -> CriSandbox:
        """RunPodSandbox in the pod cgroup with the host network (no CNI), labelled with the token; no hostname,
        as the kubelet sends none for a host-network pod (runc refuses one without a private UTS namespace)."""
        config = {"metadata": {"name": name, "uid": uid, "namespace": namespace, "attempt": attempt},
                  "log_directory": str(log_dir),
                  "labels": {images.OWNER_LABEL: self.token},
                  "linux": {"cgroup_parent": self.cgroup_parent(pod_cgroup),
                            "security_context": {"namespace_options": dict(NODE_NAMESPACES)}}}
        log_dir.mkdir(parents=True, exist_ok=True)
        try:
            sandbox_id = self.client.run_pod_sandbox(config)
            pid = int(json.loads(self.client.pod_sandbox_status(sandbox_id, verbose=True)
                                 .get("info", {}).get("info", "{}")).get("pid", 0))
        except (GrpcError, ValueError) as err:
            raise RuntimeCommandError(f"RunPodSandbox for {namespace}/{name}: {err}") from None
        self.sandboxes[pod_cgroup] = sandbox_id
        self.sandbox_configs[sandbox_id] = config
        return CriSandbox(self, sandbox_id, pid, self.live_cgroup(pod_cgroup, sandbox_id))

    def run_container(self, pod_cgroup: str, name: str, attempt: int, argv: Sequence[str], oom_score_adj: int,
                      resources: Mapping[str, Any], log: Path) -> CriProcess:
        """CreateContainer + StartContainer in the pod's sandbox; the node's programs bind-mounted read-only."""
        sandbox_id = self.sandboxes.get(pod_cgroup)
        if sandbox_id is None:
            raise RuntimeCommandError(f"no sandbox runs for {pod_cgroup}")
        sandbox = self.sandbox_configs[sandbox_id]
        binds = [*oci_bundle.READ_ONLY, *self.read_only, *(f"/{d}" for d in oci_bundle.usr_links()[1])]
        mounts = [{"container_path": d, "host_path": d, "readonly": True} for d in binds]
        mounts.append({"container_path": oci_bundle.CGROUP_TREE, "host_path": oci_bundle.CGROUP_TREE})
        log_dir = Path(sandbox["log_directory"])
        relative = Path(name) / f"{attempt}.log"
        config = {"metadata": {"name": name, "attempt": attempt}, "image": {"image": self.workload_image},
                  "command": list(argv), "envs": [dict(zip(("key", "value"), e.split("=", 1)))
                                                  for e in oci_bundle.ENV],
                  "mounts": mounts, "log_path": str(relative), "labels": {images.OWNER_LABEL: self.token},
                  "linux": {"resources": {**resources, "oom_score_adj": oom_score_adj},
                            "security_context": {"namespace_options": dict(NODE_NAMESPACES)}}}
        try:
            cid = self.client.create_container(sandbox_id, config, sandbox)
            try:
                self.client.start_container(cid)
                info = self.client.container_status(cid, verbose=True).get("info", {}).get("info", "{}")
                pid = int(json.loads(info).get("pid", 0))
            except BaseException:
                self.delete(cid)
                raise
        except (GrpcError, ValueError) as err:
            raise RuntimeCommandError(f"starting container {name} in {pod_cgroup}: {err}") from None
        _link_log(log_dir / relative, log)
        return CriProcess(self, cid, pid, self.live_cgroup(pod_cgroup, cid))

    def resources_for(self, cri: CriResources, swap_controller: bool) -> dict[str, Any]:
        """The LinuxContainerResources the kubelet sends (0 = unset; oom_score_adj added at create)."""
        del swap_controller  # the runtime decides swap from its own cgroup (RUNTIME-FACTS §1)
        out: dict[str, Any] = {"cpu_period": cri.cpu_period, "cpu_quota": cri.cpu_quota,
                               "cpu_shares": cri.cpu_shares, "memory_limit_in_bytes": cri.memory_limit_in_bytes,
                               "memory_swap_limit_in_bytes": cri.memory_swap_limit_in_bytes,
                               "unified": dict(cri.unified)}
        if cri.cpuset_cpus:
            out["cpuset_cpus"] = cri.cpuset_cpus
        if cri.hugepage_limits:
            out["hugepage_limits"] = [{"page_size": size, "limit": limit} for size, limit in cri.hugepage_limits]
        return out

    def measure_weight(self, tree: CgroupTree) -> int:
        """The cpu.weight the runtime writes for PROBE_SHARES: a probe sandbox in kubepods with one container given
        those shares, read in the cgroup the runtime made, then removed."""
        parent = PROBE_CGROUP.split("/")[0]
        tree.ensure(parent)
        sandbox = self.run_sandbox(PROBE_NAME, PROBE_NAME, self.token, parent, 0, self.state_dir / "cri-logs" / "probe")
        try:
            probe = self.run_container(parent, PROBE_NAME, 0, SLEEPER, 0,
                                       {"cpu_shares": PROBE_SHARES}, self.state_dir / "cri-logs" / "probe.log")
            text = tree.read(probe.cgroup, "cpu.weight")
        finally:
            sandbox.stop()
        if text is None or not text.strip().isdigit():
            raise RuntimeCommandError(f"probe container: no cpu.weight in {probe.cgroup}")
        return int(text)

    def update(self, cid: str, resources: Mapping[str, Any]) -> None:
        """UpdateContainerResources with the whole new resources (a sandbox's are the runtime's: left alone)."""
        if cid in self.sandbox_configs:
            return
        try:
            self.client.update_container_resources(cid, resources)
        except GrpcError as err:
            raise RuntimeCommandError(f"UpdateContainerResources {cid[:12]}: {err}") from None

    def kill(self, cid: str) -> None:
        with contextlib.suppress(GrpcError):
            self.client.stop_container(cid, 0)

    def delete(self, cid: str) -> None:
        """StopContainer (timeout 0: SIGKILL) and RemoveContainer; one already gone is no error, a failure is
        logged, not raised (as OciRuntime.delete)."""
        for step in (self.client.stop_container, self.client.remove_container):
            try:
                step(cid)
            except GrpcError as err:
                if err.code != NOT_FOUND:
                    logger.warning("removing container %s: %s", cid[:12], err)
                    return

    def remove_sandbox(self, sandbox_id: str) -> None:
        """StopPodSandbox and RemovePodSandbox (with every container in it); a failure is logged, not raised."""
        for step in (self.client.stop_pod_sandbox, self.client.remove_pod_sandbox):
            try:
                step(sandbox_id)
            except GrpcError as err:
                if err.code != NOT_FOUND:
                    logger.warning("removing sandbox %s: %s", sandbox_id[:12], err)
                    return
        self.sandbox_configs.pop(sandbox_id, None)
        for pod, known in list(self.sandboxes.items()):
            if known == sandbox_id:
                del self.sandboxes[pod]

    def clear(self) -> list[str]:
        """Remove every sandbox labelled with this agent's token (left by a crashed agent), with its containers."""
        try:
            found = self.client.list_pod_sandbox({images.OWNER_LABEL: self.token})
        except GrpcError as err:
            raise RuntimeCommandError(f"ListPodSandbox: {err}") from None
        ids = [str(s["id"]) for s in found if s.get("labels", {}).get(images.OWNER_LABEL) == self.token]
        for sandbox_id in ids:
            self.remove_sandbox(sandbox_id)
        return ids

    def remove_images(self) -> list[str]:
        """Remove the images this agent imported (labelled with its token), nothing else."""
        try:
            return self.images.remove_ours()
        except images.ImageError as err:
            raise RuntimeCommandError(str(err)) from None


def cri_facts(runtime: CriRuntime, tree: CgroupTree, facts: NodeFacts) -> NodeFacts:
    """Connect (images in place), remove the sandboxes a crashed agent of this state directory left, and the
    facts with the runtime's name, version, the config values that change results (runtime_config) and the
    shares→weight formula measured on a probe container."""
    runtime.connect()
    runtime.clear()
    found = runtime.facts()
    config = tuple((key, str(value)) for key, value in found.items() if key not in ("runtime", "runtime_version"))
    try:
        formula = measured_formula(PROBE_SHARES, runtime.measure_weight(tree))
    except ValueError as err:
        raise RuntimeCommandError(f"{CRI} cpu.weight probe: {err}") from None
    return dataclasses.replace(facts, runtime=CRI, runtime_version=runtime.runtime_version,
                               runtime_config=(*config, ("oci_runtime_version", _runc_version())),
                               measured_cpu_weight_formula=formula)


def _runc_version() -> str:
    """The version of the runc under the runtime (`runc --version` first line), "" when there is none."""
    try:
        done = subprocess.run(["runc", "--version"], capture_output=True, timeout=COMMAND_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    words = done.stdout.decode(errors="replace").split()
    return words[2] if len(words) >= 3 and words[1] == "version" else ""


def _token(state_dir: Path) -> str:
    """This agent's token: kept in its (marked) state directory, so a restarted agent finds what it made."""
    path = state_dir / TOKEN_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        token = secrets.token_hex(8)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
        return token


def _link_log(runtime_log: Path, log: Path) -> None:
    """The agent's container log path names the runtime's log file (CRI log format: time stream tag text)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        log.unlink()
    log.symlink_to(runtime_log)
