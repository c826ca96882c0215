"""The OCI bundle of one container as containerd's CRI plugin builds it from the kubelet's LinuxContainerResources.

Source: containerd internal/cri/opts/spec_linux_opts.go WithResources, WithOOMScoreAdj @v2.3.4 (same logic in
pkg/cri/opts @v1.7.34); sandbox: internal/cri/server/podsandbox/sandbox_run_linux.go sandboxContainerSpec;
runtime-spec config.md and config-linux.md @v1.3.0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# containerd's sandbox (pause) container: DefaultSandboxCPUshares = 2 (internal/cri/opts/spec_opts.go).
SANDBOX_SHARES = 2
# Unified keys the kubelet sets on cgroup v2, with the value that means "not set" (kuberuntime
# generateLinuxContainerResources: memory.oom.group when singleProcessOOMKill is false, memory.swap.max from
# configureContainerSwapResources, memory.min/memory.high with MemoryQoS; memory.low from memoryReservationPolicy).
UNIFIED_KEYS: Mapping[str, str | None] = {
    "memory.oom.group": "0", "memory.swap.max": None, "memory.min": "0", "memory.high": "max", "memory.low": "0",
}
# containerd's default capabilities (pkg/oci/spec.go defaultUnixCaps), root without a user namespace.
CAPABILITIES = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
    "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",
    "CAP_AUDIT_WRITE",
)
# Top-level directories that merged-/usr systems make symlinks into /usr (each is a symlink or a bind mount).
USR_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# The node's directories every container sees read-only: programs, libraries, configuration.
READ_ONLY = ("/usr", "/etc")
# The node's cgroup tree, writable, at its own place: a workload sees its cgroup and its ancestors as under the
# direct launcher, and memhog --reclaim writes its own memory.reclaim (no cgroup namespace, as in `NAMESPACES`).
CGROUP_TREE = "/sys/fs/cgroup"
NAMESPACES = ("pid", "mount", "ipc", "uts")  # host network, as a hostNetwork pod
ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8")


@dataclass(frozen=True)
class CriResources:
    """The kubelet's LinuxContainerResources for one container (0 means unset, as in proto3)."""

    cpu_period: int = 0
    cpu_quota: int = 0
    cpu_shares: int = 0
    memory_limit_in_bytes: int = 0
    memory_swap_limit_in_bytes: int = 0
    unified: Mapping[str, str] = field(default_factory=dict)
    hugepage_limits: tuple[tuple[str, int], ...] = ()  # (page size as "2MB", bytes)
    cpuset_cpus: str = ""  # the static CPU manager's CPUs (GetCPUAffinity), "" = unset


def cri_resources(files: Mapping[str, str], shares: int) -> CriResources:
    """The CRI values behind the oracle's container cgroup files: shares as given (cpu.weight hides them),
    quota and period from cpu.max, the CPUs from cpuset.cpus (static CPU manager), the limit from memory.max, and
    the kubelet's unified keys where it sets them
    (memory.swap.max whenever the oracle has it: the kubelet never sends CRI swap on cgroup v2, RUNTIME-FACTS 2a),
    and a hugepage limit per `hugetlb.<size>.max` the files hold (GetHugepageLimitsFromResources).
    The kubelet sends the period whenever cpuCFSQuota is on; the oracle's "max <period>" keeps it."""
    quota, _, period = files.get("cpu.max", "max 0").partition(" ")
    limit = files.get("memory.max", "max")
    unified = {key: files[key] for key, unset in UNIFIED_KEYS.items() if key in files and files[key] != unset}
    hugepages = tuple((name.split(".")[1], int(value)) for name, value in sorted(files.items())
                      if name.startswith("hugetlb.") and name.count(".") == 2 and name.endswith(".max")
                      and value.isdigit())
    return CriResources(
        cpu_period=int(period) if period.isdigit() else 0,
        cpu_quota=int(quota) if quota.isdigit() else 0,
        cpu_shares=shares,
        memory_limit_in_bytes=int(limit) if limit.isdigit() else 0,
        unified=unified,
        hugepage_limits=hugepages,
        cpuset_cpus=files.get("cpuset.cpus", ""),
    )


def linux_resources(cri: CriResources, swap_controller: bool) -> dict[str, Any]:
    """containerd WithResources: OCI `linux.resources` from CRI values. cpu period/quota/shares and the memory
    limit only when ≠ 0; `memory.swap` (memory+swap) = the CRI swap when set, else = the limit (no swap) when
    there is one, and only when the swap controller is available (SwapControllerAvailable); unified copied."""
    cpu: dict[str, Any] = {key: value for key, value in (("shares", cri.cpu_shares), ("quota", cri.cpu_quota),
                                                         ("period", cri.cpu_period)) if value}
    if cri.cpuset_cpus:
        cpu["cpus"] = cri.cpuset_cpus
    memory: dict[str, int] = {}
    if cri.memory_limit_in_bytes:
        memory["limit"] = cri.memory_limit_in_bytes
    if swap_controller and cri.memory_swap_limit_in_bytes:
        memory["swap"] = cri.memory_swap_limit_in_bytes
    elif swap_controller and cri.memory_limit_in_bytes:
        memory["swap"] = cri.memory_limit_in_bytes
    resources: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if cri.unified:
        resources["unified"] = dict(cri.unified)
    return resources


def sandbox_resources() -> dict[str, Any]:
    """The pause container's `linux.resources`: 2 shares, no limits (WithDefaultSandboxShares; pod resources go
    only into annotations)."""
    return {"cpu": {"shares": SANDBOX_SHARES}, "memory": {}}


def cgroups_path(container_cgroup: str, systemd: bool = False) -> str:
    """`linux.cgroupsPath` as containerd's getCgroupsPath gives it: `<pod>.slice:<prefix>:<id>` for a scope in a
    `.slice` parent (`cri-containerd-<id>.scope`; a runtime with --systemd-cgroup starts that scope), else the
    cgroupfs path below the cgroup root. Without systemd the runtime gets the path that unit would expand to
    (cg systemd/common.go ExpandSlice, getUnitName)."""
    parts = container_cgroup.strip("/").split("/")
    if systemd and len(parts) > 1 and parts[-1].endswith(".scope") and parts[-2].endswith(".slice"):
        prefix, _, name = parts[-1].removesuffix(".scope").rpartition("-")
        if prefix and name:
            return f"{parts[-2]}:{prefix}:{name}"
    return "/" + "/".join(parts)


def config(argv: Sequence[str], oom_score_adj: int, container_cgroup: str, resources: Mapping[str, Any],
           hostname: str, read_only: Sequence[str], host_root: Path = Path("/"),
           systemd: bool = False) -> dict[str, Any]:
    """config.json: argv as root in an empty read-only rootfs that holds the node's /usr, /etc and the given
    directories read-only, /proc, /dev, a /tmp and the node's cgroup tree; pid, mount, ipc and uts namespaces;
    oomScoreAdj; cgroup and resources as above."""
    binds = [*READ_ONLY, *read_only, *(f"/{name}" for name in usr_links(host_root)[1])]
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "bind", "source": "/dev", "options": ["rbind", "nosuid"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
        {"destination": CGROUP_TREE, "type": "bind", "source": CGROUP_TREE, "options": ["rbind", "nosuid", "nodev"]},
        *({"destination": d, "type": "bind", "source": d, "options": ["rbind", "ro"]} for d in binds),
    ]
    caps = list(CAPABILITIES)
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": 0, "gid": 0}, "args": list(argv), "env": list(ENV), "cwd": "/",
            "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
            "oomScoreAdj": oom_score_adj,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": hostname,
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": kind} for kind in NAMESPACES],
            "cgroupsPath": cgroups_path(container_cgroup, systemd),
            "resources": dict(resources),
        },
    }


def entering(pid: int) -> list[str]:
    """The command prefix that runs what follows it in the namespaces of a container whose process is pid
    (NAMESPACES), as the runtime's `exec` runs it: it sees the container's /tmp and processes, not the node's
    (nsenter from util-linux)."""
    return ["nsenter", f"--target={pid}", *(f"--{kind}" for kind in NAMESPACES), "--"]


def usr_links(host_root: Path = Path("/")) -> tuple[dict[str, str], tuple[str, ...]]:
    """The node's top-level program and library directories: the symlinks (merged /usr: name → target) and the
    real directories (bind-mounted read-only instead)."""
    links: dict[str, str] = {}
    real: list[str] = []
    for name in USR_LINKS:
        path = host_root / name
        if path.is_symlink():
            links[name] = os.readlink(path)
        elif path.is_dir():
            real.append(name)
    return links, tuple(real)


def prepare_rootfs(bundle: Path, read_only: Sequence[str], host_root: Path = Path("/")) -> None:
    """The bundle's empty rootfs: mount points for every mount of config() and the merged-/usr symlinks."""
    rootfs = bundle / "rootfs"
    links, real = usr_links(host_root)
    points = ("proc", "dev", "tmp", CGROUP_TREE, *READ_ONLY, *read_only, *real)
    for point in (p.strip("/") for p in points):
        (rootfs / point).mkdir(parents=True, exist_ok=True)
    for name, target in links.items():
        if not (rootfs / name).is_symlink():
            (rootfs / name).symlink_to(target)
