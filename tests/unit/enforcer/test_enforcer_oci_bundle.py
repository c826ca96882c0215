"""config.json of a container as containerd's CRI plugin builds it (RUNTIME-FACTS §1: containerd
internal/cri/opts/spec_linux_opts.go WithResources, WithOOMScoreAdj @v2.3.4; sandboxContainerSpec)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodeconf.enforcer import oci_bundle, process
from nodeconf.enforcer.oci_bundle import CriResources, cri_resources, linux_resources
from nodeconf.enforcer.oci_runtime import container_id
from nodeconf.enforcer.wire import facts_from_dict, facts_to_dict
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu import container_shares
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for

GI = 1024**3
MI = 1024**2
WORKLOADS = Path(__file__).resolve().parents[3] / "workloads"


@pytest.mark.parametrize(("cri", "swap_controller", "resources"), [
    # cpu period/quota/shares only if ≠ 0 (kubelet sends quota 0 without a cpu limit).
    pytest.param(CriResources(cpu_shares=256, cpu_period=100_000), True,
                 {"cpu": {"shares": 256, "period": 100_000}, "memory": {}}, id="no-quota"),
    pytest.param(CriResources(cpu_shares=256, cpu_quota=50_000, cpu_period=100_000), True,
                 {"cpu": {"shares": 256, "quota": 50_000, "period": 100_000}, "memory": {}}, id="quota"),
    # Swap rule: limit set, CRI swap unset (0), swap controller available → memory.swap = limit (no swap).
    pytest.param(CriResources(memory_limit_in_bytes=128 * MI), True,
                 {"cpu": {}, "memory": {"limit": 128 * MI, "swap": 128 * MI}}, id="swap-equals-limit"),
    # CRI swap set → passed through unchanged.
    pytest.param(CriResources(memory_limit_in_bytes=128 * MI, memory_swap_limit_in_bytes=256 * MI), True,
                 {"cpu": {}, "memory": {"limit": 128 * MI, "swap": 256 * MI}}, id="cri-swap"),
    # No limit, no swap → memory.swap absent.
    pytest.param(CriResources(cpu_shares=2), True, {"cpu": {"shares": 2}, "memory": {}}, id="no-limit"),
    # Swap controller missing (no memory.swap.max in containerd's cgroup) → no memory.swap at all.
    pytest.param(CriResources(memory_limit_in_bytes=128 * MI, memory_swap_limit_in_bytes=256 * MI), False,
                 {"cpu": {}, "memory": {"limit": 128 * MI}}, id="no-swap-controller"),
    # The unified map is copied key by key.
    pytest.param(CriResources(unified={"memory.oom.group": "1", "memory.swap.max": "0"}), True,
                 {"cpu": {}, "memory": {}, "unified": {"memory.oom.group": "1", "memory.swap.max": "0"}},
                 id="unified"),
    # The static CPU manager's CPUs: containerd WithResources sets linux.resources.cpu.cpus from CpusetCpus.
    pytest.param(CriResources(cpu_shares=2, cpuset_cpus="1,3"), True, {"cpu": {"shares": 2, "cpus": "1,3"},
                                                                        "memory": {}}, id="cpuset"),
])
def test_with_resources(cri: CriResources, swap_controller: bool, resources: dict[str, Any]) -> None:
    assert linux_resources(cri, swap_controller) == resources


@pytest.mark.parametrize(("files", "cri"), [
    # The article's res-demo (Memory QoS off, NoSwap on cgroup v2): the kubelet's unified map holds
    # memory.oom.group=1 (singleProcessOOMKill false) and memory.swap.max=0 (NoSwap); no memory.min/high.
    pytest.param({"cpu.max": "50000 100000", "memory.max": "134217728", "memory.oom.group": "1",
                  "memory.swap.max": "0", "memory.min": "0", "memory.low": "0", "memory.high": "max"},
                 CriResources(100_000, 50_000, 256, 128 * MI, 0, {"memory.oom.group": "1", "memory.swap.max": "0"}),
                 id="res-demo"),
    # Memory QoS: memory.min = request and memory.high below the limit go to the unified map.
    pytest.param({"cpu.max": "max 100000", "memory.max": "max", "memory.min": "67108864",
                  "memory.high": "120795136", "memory.swap.max": "max"},
                 CriResources(100_000, 0, 256, 0, 0, {"memory.min": "67108864", "memory.high": "120795136",
                                                      "memory.swap.max": "max"}), id="memory-qos"),
    # Static CPU manager: an exclusive container's CPUs, and no quota (cpu.max "max <period>").
    pytest.param({"cpu.max": "max 100000", "memory.max": "max", "cpuset.cpus": "1-2"},
                 CriResources(100_000, 0, 256, 0, 0, {}, (), "1-2"), id="cpuset"),
])
def test_cri_values_behind_the_oracles_files(files: dict[str, str], cri: CriResources) -> None:
    assert cri_resources(files, 256) == cri


def test_res_demo_from_the_oracle_to_linux_resources() -> None:
    """The whole way: the oracle's res-demo container → CRI values → containerd's linux.resources."""
    (pod,) = load_objects([WORKLOADS / "requests-limits" / "res-demo.yaml"])
    assert isinstance(pod, Pod)
    config = KubeletConfig(feature_gates={"MemoryQoS": False})
    profile = profile_for("1.38", config)
    pe = expect([pod], NodeFacts(memory_capacity=4 * GI), config, profile).pod("res-demo")
    hello = pe.container("hello")
    shares = container_shares(pe.pod, pe.pod.containers[0], profile)
    cri = cri_resources({f: e.value for f, e in hello.cgroup.files.items()}, shares)
    assert linux_resources(cri, swap_controller=True) == {
        "cpu": {"shares": 256, "quota": 50_000, "period": 100_000},
        "memory": {"limit": 128 * MI, "swap": 128 * MI},
        "unified": {"memory.oom.group": "1", "memory.swap.max": "0"},
    }


def test_sandbox_has_two_shares_and_no_limits() -> None:
    """sandboxContainerSpec: WithDefaultSandboxShares (2), pod resources only as annotations."""
    assert oci_bundle.sandbox_resources() == {"cpu": {"shares": 2}, "memory": {}}


@pytest.mark.parametrize(("cgroup", "path", "cid"), [
    # systemd driver: the scope a --systemd-cgroup runtime would create, as a cgroupfs path (no systemd here).
    ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice/cri-containerd-abc.scope",
     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice/cri-containerd-abc.scope", "abc"),
    # cgroupfs driver: containerd's filepath.Join(cgroupParent, id).
    ("kubepods/burstable/podu-1/abc", "/kubepods/burstable/podu-1/abc", "abc"),
])
def test_cgroups_path_and_container_id(cgroup: str, path: str, cid: str) -> None:
    assert (oci_bundle.cgroups_path(cgroup), container_id(cgroup)) == (path, cid)


def fake_host(tmp_path: Path) -> Path:
    """A merged-/usr host root with one real directory (lib32) besides the symlinks."""
    host = tmp_path / "host"
    for directory in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "lib32"):
        (host / directory).mkdir(parents=True)
    for name in ("bin", "sbin", "lib", "lib64"):
        (host / name).symlink_to(f"usr/{name}")
    return host


def test_config_runs_argv_in_a_read_only_view_of_the_node(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    resources = {"cpu": {"shares": 256}, "memory": {}}
    spec = oci_bundle.config(("python3", "x.py"), 982, "kubepods/p/abc", resources, "abc", ("/opt/nodeconf",),
                             host_root=host)
    assert spec["process"]["args"] == ["python3", "x.py"]
    assert spec["process"]["oomScoreAdj"] == 982  # WithOOMScoreAdj
    assert spec["root"] == {"path": "rootfs", "readonly": True}
    assert [n["type"] for n in spec["linux"]["namespaces"]] == ["pid", "mount", "ipc", "uts"]
    assert spec["linux"]["cgroupsPath"] == "/kubepods/p/abc"
    assert spec["linux"]["resources"] == resources
    read_only = {m["destination"] for m in spec["mounts"] if "ro" in m.get("options", ())}
    assert read_only == {"/usr", "/etc", "/opt/nodeconf", "/lib32"}
    assert {m["destination"]: m["type"] for m in spec["mounts"] if "ro" not in m.get("options", ())} == {
        "/proc": "proc", "/dev": "bind", "/tmp": "tmpfs", "/sys/fs/cgroup": "bind"}


def test_rootfs_has_mount_points_and_the_usr_symlinks(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    bundle = tmp_path / "bundle"
    oci_bundle.prepare_rootfs(bundle, ("/opt/nodeconf",), host_root=host)
    oci_bundle.prepare_rootfs(bundle, ("/opt/nodeconf",), host_root=host)  # a restart reuses the bundle
    rootfs = bundle / "rootfs"
    assert {p.name: str(p.readlink()) for p in rootfs.iterdir() if p.is_symlink()} == {
        "bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
    assert {p.name for p in rootfs.iterdir() if not p.is_symlink()} == {"proc", "dev", "tmp", "sys", "usr", "etc",
                                                                         "opt", "lib32"}
    assert (rootfs / "sys" / "fs" / "cgroup").is_dir()
    assert (rootfs / "opt" / "nodeconf").is_dir()


def test_facts_carry_the_runtime_over_the_wire() -> None:
    facts = NodeFacts(memory_capacity=GI, runtime="crun", runtime_version="1.8.1",
                      measured_cpu_weight_formula="linear")
    assert facts_from_dict(facts_to_dict(facts)) == facts


@pytest.mark.parametrize(("cgroup", "path"), [
    # containerd's getCgroupsPath for a `.slice` parent: `<pod slice>:cri-containerd:<id>` (slice:prefix:name).
    ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice/cri-containerd-abc.scope",
     "kubepods-burstable-podu_1.slice:cri-containerd:abc"),
    ("kubepods.slice/nodeconf-runtime-probe.scope", "kubepods.slice:nodeconf-runtime:probe"),
    # cgroupfs driver paths stay paths.
    ("kubepods/burstable/podu-1/abc", "/kubepods/burstable/podu-1/abc"),
])
def test_cgroups_path_for_a_systemd_cgroup_runtime(cgroup: str, path: str) -> None:
    assert oci_bundle.cgroups_path(cgroup, systemd=True) == path


def test_an_exec_enters_the_container_s_namespaces() -> None:
    """kubectl exec through a runtime runs in the container's namespaces: the bundle's, entered by nsenter."""
    assert oci_bundle.entering(4242) == ["nsenter", "--target=4242", "--pid", "--mount", "--ipc", "--uts", "--"]


def test_an_exec_prefix_waits_outside_the_cgroup(tmp_path: Path) -> None:
    """The prefix (nsenter) runs the trampoline as its child and stays out of the container's cgroup, as `runc
    exec` does: only the command moves in (the trampoline writes its own pid to cgroup.procs, then execs)."""
    cgroup, prefix_pid = tmp_path / "cgroup", tmp_path / "prefix.pid"
    cgroup.mkdir()
    prefix = ["sh", "-c", 'echo $$ > "$0"; "$@"; exit $?', str(prefix_pid)]  # a child, as nsenter --pid forks
    rc, out, _ = process.run_in(["sh", "-c", "echo $$"], cgroup, 0, 10, prefix)
    assert rc == 0
    assert (cgroup / "cgroup.procs").read_text().split() == out.decode().split()
    assert prefix_pid.read_text().split() != out.decode().split()
