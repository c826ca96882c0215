"""Facts the agent reads from its node: memory, swap, cpus, page size, kernel, cgroup controllers, and the node's
layers (Debian release, init, runtime, cgroup2 mount, swap devices, PSI, kernel config; issue 13 item 4), and the
oom_score_adj of the node's own runtime daemon and kubelet."""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

from nodeconf.enforcer.daemons import kubelets, runtime_daemons
from nodeconf.node_facts import KERNEL_CONFIG_OPTIONS, NodeFacts, meminfo_bytes
from nodeconf.semantics.eviction import PidObservation

# PID 1's comm for nodeconf's own init (nodeconf/infra/vm guest_init.sh, installed as /sbin/nodeconf-init).
MINIMAL_INIT_COMM = "nodeconf-init"


def meminfo(path: Path = Path("/proc/meminfo")) -> dict[str, int]:
    """/proc/meminfo in bytes (nodeconf.node_facts.meminfo_bytes)."""
    return meminfo_bytes(path.read_text())


def node_memory_used() -> int:
    """Memory in use on the node now: MemTotal − MemAvailable (what memory.available is measured against)."""
    info = meminfo()
    return info["MemTotal"] - info.get("MemAvailable", info.get("MemFree", 0))


def first_line(argv: list[str]) -> str:
    """The first output line of a command ("" when it is missing or fails)."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""


def debian_release(etc: Path = Path("/etc")) -> str:
    """The release codename from os-release(5); "sid" when debian_version names it (testing and sid share one)."""
    try:
        if (etc / "debian_version").read_text().strip().endswith("/sid"):
            return "sid"
        lines = (etc / "os-release").read_text().splitlines()
    except OSError:
        return ""
    values = dict(line.split("=", 1) for line in lines if "=" in line)
    return values.get("VERSION_CODENAME", "").strip('"')


def init_and_version(proc: Path = Path("/proc")) -> tuple[str, str]:
    """PID 1 and its version: systemd (`systemctl --version`), "minimal" for nodeconf's init, else its comm."""
    try:
        comm = (proc / "1" / "comm").read_text().strip()
    except OSError:
        return "", ""
    if comm == "systemd":
        return "systemd", first_line(["systemctl", "--version"])
    return ("minimal", "minimal") if comm == MINIMAL_INIT_COMM else (comm, "")


def mount_options(mountpoint: Path, mounts: Path = Path("/proc/self/mounts")) -> tuple[str, ...]:
    """The options of the cgroup2 file system mounted at mountpoint (empty when none is)."""
    for line in mounts.read_text().splitlines():
        fields_ = line.split()
        if len(fields_) >= 4 and fields_[1] == str(mountpoint) and fields_[2] == "cgroup2":
            return tuple(fields_[3].split(","))
    return ()


def swap_devices(swaps: Path = Path("/proc/swaps")) -> tuple[str, ...]:
    """Active swap areas from /proc/swaps (header line skipped)."""
    return tuple(line.split()[0] for line in swaps.read_text().splitlines()[1:] if line.strip())


def psi_available(pressure: Path = Path("/proc/pressure")) -> bool:
    """True when PSI can be read (with psi=0 the files exist but reading fails: kernel/sched/psi.c)."""
    try:
        (pressure / "memory").read_text()
    except OSError:
        return False
    return True


def hugepage_pools(sysfs: Path = Path("/sys/kernel/mm/hugepages")) -> tuple[tuple[int, int], ...]:
    """(page size, reserved bytes) per huge page size the kernel offers, smallest first: `hugepages-<N>kB/
    nr_hugepages` (Documentation/admin-guide/mm/hugetlbpage.rst); empty without hugetlbfs support."""
    pools = []
    for entry in sysfs.glob("hugepages-*kB"):
        size = entry.name.removeprefix("hugepages-").removesuffix("kB")
        try:
            count = int((entry / "nr_hugepages").read_text())
        except (OSError, ValueError):
            continue
        if size.isdigit():
            pools.append((int(size) * 1024, count * int(size) * 1024))
    return tuple(sorted(pools))


def pid_capacity(sysctl: Path = Path("/proc/sys/kernel")) -> int | None:
    """min(kernel.pid_max, kernel.threads-max), the kubelet's `pid` capacity (pkg/kubelet/stats/pidlimit Stats);
    None when either cannot be read."""
    try:
        return min(int((sysctl / "pid_max").read_text()), int((sysctl / "threads-max").read_text()))
    except (OSError, ValueError):
        return None


def running_tasks(proc: Path = Path("/proc")) -> int:
    """The tasks (threads included) that exist now: /proc/loadavg's 4th field after its slash, which the kubelet
    prefers to sysinfo(2)'s truncated count (pkg/kubelet/stats/pidlimit runningTaskCount)."""
    return int((proc / "loadavg").read_text().split()[3].partition("/")[2])


def node_pids(sysctl: Path = Path("/proc/sys/kernel"), proc: Path = Path("/proc")) -> PidObservation:
    """The pid.available observation: the task ceiling (pid_capacity) and the running tasks."""
    ceiling = pid_capacity(sysctl)
    if ceiling is None:
        raise OSError(f"cannot read pid_max and threads-max under {sysctl}")
    return PidObservation(ceiling, running_tasks(proc))


def kernel_config(release: str, boot: Path = Path("/boot"), proc: Path = Path("/proc")) -> tuple[tuple[str, str], ...]:
    """KERNEL_CONFIG_OPTIONS as y/m/n from /boot/config-RELEASE, else /proc/config.gz; empty when neither exists."""
    try:
        text = (boot / f"config-{release}").read_text()
    except OSError:
        try:
            text = gzip.decompress((proc / "config.gz").read_bytes()).decode()
        except OSError:
            return ()
    values = dict(line.split("=", 1) for line in text.splitlines() if line.startswith("CONFIG_") and "=" in line)
    return tuple((option, values.get(option, "n")) for option in KERNEL_CONFIG_OPTIONS)


def detect(cgroup_root: Path, cpu_weight_formula: str, runtime: str = "direct") -> NodeFacts:
    """The node as seen from here; the cpu-weight formula is the runtime's, which the agent emulates; runtime is
    the launcher the agent uses ("direct": its own)."""
    info = meminfo()
    controllers = _words(cgroup_root / "cgroup.controllers")
    init, init_version = init_and_version()
    return NodeFacts(
        memory_capacity=info["MemTotal"],
        swap_capacity=info.get("SwapTotal", 0),
        cpu_capacity_milli=1000 * len(os.sched_getaffinity(0)),
        page_size=os.sysconf("SC_PAGE_SIZE"),
        kernel_version=os.uname().release,
        cgroup_controllers=controllers,
        cpu_weight_formula=cpu_weight_formula,
        debian_release=debian_release(),
        init=init,
        init_version=init_version,
        runtime=runtime,
        runtime_version="direct" if runtime == "direct" else first_line([runtime, "--version"]),
        cgroup2_mount_options=mount_options(cgroup_root),
        cgroup_subtree_control=_words(cgroup_root / "cgroup.subtree_control"),
        swap_devices=swap_devices(),
        psi=psi_available(),
        kernel_config=kernel_config(os.uname().release),
        pid_capacity=pid_capacity(),
        hugepages=hugepage_pools(),
        runtime_daemon_oom_score_adj=runtime_daemons(),
        kubelet_oom_score_adj=kubelets(),
    )


def _words(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text().split()) if path.exists() else ()
