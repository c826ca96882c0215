"""Containers started by a real OCI runtime (runc, crun) through its command line, as containerd's shim does:
run detached, update with the whole new `linux.resources`, kill and delete; the agent waits for each container
process as the shim does, being their child subreaper.

Source: RUNTIME-FACTS §1 "Update" (containerd shim → go-runc `runc update --resources`), §3d; runc and crun
`run --detach --pid-file`, `create`, `update --resources FILE`, `kill`, `delete --force`, `list`, `--root`;
prctl(2) PR_SET_CHILD_SUBREAPER (containerd pkg/sys/reaper sets it in the shim).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeconf.enforcer import oci_bundle
from nodeconf.enforcer.cgroupfs import CgroupTree
from nodeconf.kubelet_config import DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu import measured_formula

RUNTIMES = ("runc", "crun")
DIRECT = "direct"
PR_SET_CHILD_SUBREAPER = 36
# Each runtime command's bound: the kubelet's runtimeRequestTimeout (KubeletConfiguration, default 2m0s), which
# bounds each CRI call to the runtime; the agent takes the configured one (bound_requests). Under TCG runc init's
# CPU is charged to the container's quota: `runc run` of a CPU-limited container took up to 43 s (bullseye, runc
# rc93), and a containerd StartContainer of a 10m-CPU container outlasted 120 s (trixie).
COMMAND_TIMEOUT = DEFAULT_RUNTIME_REQUEST_TIMEOUT_NS / 10**9
# The longest bound the agent keeps: Python's waits overflow near time.Duration's int64 limit (292 years), which
# a runtimeRequestTimeout may reach; a day is beyond any check's wait.
LONGEST_BOUND = 86400.0
# How long a killed container may take to be reaped.
STOP_TIMEOUT = 10.0
# A command slower than this is logged with its time: the agent holds its lock meanwhile, and every client bound
# allows only a few such commands (nodeconf/nodes/enforced/agent_client.py lock_hold).
SLOW_COMMAND = 5.0
# The probe container's request: 250m → 256 shares, weight 10 (linear) or 35 (non-linear) (seed article).
PROBE_SHARES = 256
PROBE_CGROUP = "kubepods.slice/nodeconf-runtime-probe.scope"
logger = logging.getLogger(__name__)  # below the agent's "nodeconf.enforcer"


class RuntimeCommandError(Exception):
    """A runtime command failed; the message names the command and the runtime's own words."""


def become_subreaper() -> None:
    """Make this process the child subreaper, so the containers the runtime starts are reparented to it and it
    can read their exit status (prctl(2); containerd's shim does the same)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def container_id(container_cgroup: str) -> str:
    """The runtime's container id: the id in the container's cgroup name (`cri-containerd-<id>.scope` or `<id>`)."""
    return Path(container_cgroup).name.removeprefix("cri-containerd-").removesuffix(".scope")


class RuntimeProcess:
    """A container process started by the runtime, with the part of Popen's interface the agent uses."""

    def __init__(self, runtime: OciRuntime, cid: str, pid: int) -> None:
        self.runtime = runtime
        self.cid = cid
        self.pid = pid
        self.returncode: int | None = None
        self.oom_killed = False  # the runtime said OOMKilled (CRI ContainerStatus); an OCI runtime never says

    def poll(self) -> int | None:
        """The exit status once the process has ended (negative: killed by that signal, as Popen)."""
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # not reparented to us: the status is lost, the process is gone
                if not Path(f"/proc/{self.pid}").exists():
                    self.returncode = 255
                return self.returncode
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def stop(self) -> None:
        """SIGKILL through the runtime, reap, delete the container (its cgroup goes with it)."""
        self.runtime.kill(self.cid)
        deadline = time.monotonic() + STOP_TIMEOUT
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        self.runtime.delete(self.cid)


class OciRuntime:
    """One runtime binary with its own state directory (`--root`), so only nodeconf's containers are seen."""

    def __init__(self, name: str, state_dir: Path, read_only: Sequence[str], systemd_cgroup: bool = False) -> None:
        binary = shutil.which(name) if name in RUNTIMES else None
        if binary is None:
            raise RuntimeCommandError(f"runtime {name!r} is not installed on this node (expected one of "
                                f"{', '.join(RUNTIMES)} on PATH)")
        self.name = name
        self.binary = binary
        self.root = state_dir / "oci" / name
        self.bundles = state_dir / "bundles"
        self.read_only = tuple(read_only)
        # containerd's SystemdCgroup=true: the global --systemd-cgroup, scopes named by `slice:prefix:name`.
        self.systemd_cgroup = systemd_cgroup
        self.timeout = COMMAND_TIMEOUT
        # The kubelet's --runtime-request-timeout in seconds (None: not given): it outweighs the configuration's
        # runtimeRequestTimeout, as kubelet flags override its config file (kubelet reference, --config).
        self.flag: float | None = None

    def take_flag(self, seconds: float) -> None:
        """Run with the kubelet flag --runtime-request-timeout: every later bound is this one."""
        self.flag = seconds
        self.bound_requests(seconds)

    def bound_requests(self, configured: float) -> None:
        """Bound each later runtime command by the configuration's runtimeRequestTimeout, or by the kubelet flag when
        given (at most LONGEST_BOUND)."""
        self.timeout = min(configured if self.flag is None else self.flag, LONGEST_BOUND)

    def remove_images(self) -> list[str]:
        """The images this agent imported into the runtime's store, removed: none for an OCI runtime (bundles)."""
        return []

    def _run(self, *args: str, output: Path | None = None, cwd: Path | None = None) -> str:
        """Run a runtime command; `output` takes its (and a started container's) stdout and stderr, which must not
        be pipes: the container keeps them open."""
        argv = [self.binary, "--root", str(self.root), *(["--systemd-cgroup"] if self.systemd_cgroup else []), *args]
        started = time.monotonic()
        try:
            if output is None:
                done = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, cwd=cwd,
                                      timeout=self.timeout, check=False)
                detail = done.stderr.decode(errors="replace")
            else:
                output.parent.mkdir(parents=True, exist_ok=True)
                start = output.stat().st_size if output.exists() else 0
                with open(output, "ab") as out:
                    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=cwd,
                                          timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired:  # killed by subprocess.run; a StartError, never an agent error
            raise RuntimeCommandError(f"`{self.name} {' '.join(args)}` did not return within "
                                      f"{self.timeout:g} s (runtimeRequestTimeout) and was killed") from None
        took = time.monotonic() - started
        if took > SLOW_COMMAND:
            logger.warning("`%s %s` took %.1f s", self.name, " ".join(args), took)
        if output is not None:
            with open(output, "rb") as written:
                written.seek(start)
                detail = written.read()[-2000:].decode(errors="replace")
        if done.returncode != 0:
            raise RuntimeCommandError(f"`{self.name} {' '.join(args)}` failed (exit {done.returncode}): "
                                      f"{detail.strip()}")
        return done.stdout.decode(errors="replace") if output is None else ""

    def version(self) -> str:
        """The runtime's version from the first line of `--version` (`runc version 1.1.5`, `crun version 1.8.1`)."""
        done = subprocess.run([self.binary, "--version"], capture_output=True, timeout=self.timeout, check=False)
        words = done.stdout.decode(errors="replace").splitlines()[0].split() if done.stdout else []
        return words[2] if len(words) >= 3 and words[1] == "version" else " ".join(words)

    def _bundle(self, cid: str, argv: Sequence[str], oom_score_adj: int, cgroup: str,
                resources: Mapping[str, Any]) -> Path:
        bundle = self.bundles / cid
        oci_bundle.prepare_rootfs(bundle, self.read_only)
        spec = oci_bundle.config(argv, oom_score_adj, cgroup, resources, cid[:63], self.read_only,
                                 systemd=self.systemd_cgroup)
        (bundle / "config.json").write_text(json.dumps(spec, indent=1))
        return bundle

    def run(self, cid: str, argv: Sequence[str], oom_score_adj: int, cgroup: str, resources: Mapping[str, Any],
            log: Path) -> RuntimeProcess:
        """`run --detach --pid-file`: the container's output goes to `log`; returns once its process runs."""
        bundle = self._bundle(cid, argv, oom_score_adj, cgroup, resources)
        pid_file = bundle / "pid"
        pid_file.unlink(missing_ok=True)
        self._run("run", "--detach", "--pid-file", str(pid_file), cid, output=log, cwd=bundle)
        return RuntimeProcess(self, cid, int(pid_file.read_text()))

    def resources_for(self, cri: oci_bundle.CriResources, swap_controller: bool) -> dict[str, Any]:
        """What this runtime is given for a container: the OCI linux.resources containerd builds from the CRI."""
        return oci_bundle.linux_resources(cri, swap_controller)

    def update(self, cid: str, resources: Mapping[str, Any]) -> None:
        """`update --resources FILE`: the whole new linux.resources (containerd's updateContainerResources)."""
        path = self.bundles / cid / "resources.json"
        path.write_text(json.dumps(resources))
        self._run("update", "--resources", str(path), cid)

    def kill(self, cid: str) -> None:
        with contextlib.suppress(RuntimeCommandError):  # already stopped
            self._run("kill", cid, "KILL")

    def delete(self, cid: str) -> None:
        """`delete --force` (kills what still runs, removes the container's cgroup and state) and its bundle. A
        failure is logged, not raised: the next `run` of the same id would fail on the container left behind."""
        try:
            self._run("delete", "--force", cid)
        except RuntimeCommandError as err:
            logger.warning("%s", err)
        shutil.rmtree(self.bundles / cid, ignore_errors=True)

    def clear(self) -> list[str]:
        """Delete every container in this runtime's state directory (left by a crashed agent); their ids."""
        if not self.root.is_dir():
            return []
        ids = [line.strip() for line in self._run("list", "--quiet").splitlines() if line.strip()]
        for cid in ids:
            self.delete(cid)
        return ids

    def measure_weight(self, tree: CgroupTree) -> int:
        """The cpu.weight the runtime writes for PROBE_SHARES: `create` a probe container (its process never
        starts) in PROBE_CGROUP, read the file where the checks read a container's (crun 0.17 writes only in its
        scope's sub-cgroup: SystemdTree.process_cgroup), delete it."""
        cid = container_id(PROBE_CGROUP)
        bundle = self._bundle(cid, ("true",), 0, PROBE_CGROUP, {"cpu": {"shares": PROBE_SHARES}, "memory": {}})
        pid_file = bundle / "pid"
        try:
            self._run("create", "--pid-file", str(pid_file), cid, output=bundle / "output", cwd=bundle)
        except RuntimeCommandError:
            self.delete(cid)
            raise
        probe = RuntimeProcess(self, cid, int(pid_file.read_text()))
        try:
            if tree.needs_process(PROBE_CGROUP):
                tree.adopt(PROBE_CGROUP)
            return int((tree.dir(tree.process_cgroup(PROBE_CGROUP)) / "cpu.weight").read_text())
        finally:
            probe.stop()


def runtime_facts(runtime: OciRuntime, tree: CgroupTree, facts: NodeFacts) -> NodeFacts:
    """The facts with the runtime's name, version and the shares→weight formula measured on a probe container
    (containers a crashed agent left in the runtime's state are deleted first)."""
    runtime.clear()
    tree.ensure(PROBE_CGROUP.rsplit("/", 1)[0] if tree.needs_process(PROBE_CGROUP) else PROBE_CGROUP)
    weight = runtime.measure_weight(tree)
    try:
        formula = measured_formula(PROBE_SHARES, weight)
    except ValueError as err:
        raise RuntimeCommandError(f"{runtime.name} cpu.weight probe: {err}") from None
    return dataclasses.replace(facts, runtime=runtime.name, runtime_version=runtime.version(),
                               measured_cpu_weight_formula=formula)
