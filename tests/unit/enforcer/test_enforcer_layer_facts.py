"""The node's layers as the agent reads them (issue 13 item 4), from files shaped like the guest's."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from nodeconf.enforcer import facts as facts_module
from nodeconf.enforcer.facts import (
    debian_release,
    hugepage_pools,
    init_and_version,
    kernel_config,
    mount_options,
    node_pids,
    pid_capacity,
    psi_available,
    running_tasks,
    swap_devices,
)
from nodeconf.enforcer.wire import LAYER_FIELDS, facts_from_dict, facts_to_dict
from nodeconf.node_facts import KERNEL_CONFIG_OPTIONS, NodeFacts

TRIXIE_OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nVERSION_ID="13"\nVERSION_CODENAME=trixie\nID=debian\n'
SID_OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux forky/sid"\nVERSION_CODENAME=forky\nID=debian\n'


@pytest.mark.parametrize(("os_release", "debian_version", "expected"), [
    (TRIXIE_OS_RELEASE, "13.2\n", "trixie"),
    (SID_OS_RELEASE, "forky/sid\n", "sid"),
])
def test_debian_release(tmp_path: Path, os_release: str, debian_version: str, expected: str) -> None:
    (tmp_path / "os-release").write_text(os_release)
    (tmp_path / "debian_version").write_text(debian_version)
    assert debian_release(tmp_path) == expected
    assert debian_release(tmp_path / "absent") == ""


@pytest.mark.parametrize(("comm", "expected"), [
    ("systemd", ("systemd", "systemd 257 (257.13-1~deb13u1)")),
    ("nodeconf-init", ("minimal", "minimal")),
    ("tini", ("tini", "")),
])
def test_init_and_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, comm: str,
                          expected: tuple[str, str]) -> None:
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "comm").write_text(comm + "\n")
    asked: list[list[str]] = []

    def first_line(argv: list[str]) -> str:
        asked.append(argv)
        return "systemd 257 (257.13-1~deb13u1)"

    monkeypatch.setattr(facts_module, "first_line", first_line)
    assert init_and_version(tmp_path) == expected
    assert asked == ([["systemctl", "--version"]] if comm == "systemd" else [])


def test_first_line_of_a_missing_command_is_empty() -> None:
    assert facts_module.first_line(["/nonexistent/runc", "--version"]) == ""


def test_cgroup2_mount_options_and_swaps(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 "
                      "rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0\n")
    assert mount_options(Path("/sys/fs/cgroup"), mounts) == (
        "rw", "nosuid", "nodev", "noexec", "relatime", "nsdelegate", "memory_recursiveprot")
    assert mount_options(Path("/elsewhere"), mounts) == ()
    swaps = tmp_path / "swaps"
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n/dev/vdb                                partition"
                     "\t1048572\t0\t-2\n")
    assert swap_devices(swaps) == ("/dev/vdb",)


def test_psi_needs_a_readable_pressure_file(tmp_path: Path) -> None:
    assert not psi_available(tmp_path)
    (tmp_path / "memory").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    assert psi_available(tmp_path)


def test_kernel_config_from_boot_else_proc(tmp_path: Path) -> None:
    config = "CONFIG_MEMCG=y\n# CONFIG_PSI_DEFAULT_DISABLED is not set\nCONFIG_ZSWAP=y\nCONFIG_PSI=y\n"
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "config.gz").write_bytes(gzip.compress(config.encode()))
    found = dict(kernel_config("6.12.1", tmp_path / "boot", tmp_path / "proc"))
    assert list(found) == list(KERNEL_CONFIG_OPTIONS)
    assert (found["CONFIG_MEMCG"], found["CONFIG_PSI"], found["CONFIG_PSI_DEFAULT_DISABLED"]) == ("y", "y", "n")
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "config-6.12.1").write_text("CONFIG_MEMCG=m\n")
    assert dict(kernel_config("6.12.1", tmp_path / "boot", tmp_path / "proc"))["CONFIG_MEMCG"] == "m"
    assert kernel_config("6.12.1", tmp_path / "none", tmp_path / "none") == ()


def test_hugepage_pools_and_pid_capacity(tmp_path: Path) -> None:
    """hugepages-<N>kB/nr_hugepages → (size, reserved bytes), smallest first; pid capacity min(pid_max, threads)."""
    for name, count in (("hugepages-1048576kB", "0\n"), ("hugepages-2048kB", "8\n"), ("hugepages-64kB", "x")):
        (tmp_path / "mm" / name).mkdir(parents=True)
        (tmp_path / "mm" / name / "nr_hugepages").write_text(count)
    assert hugepage_pools(tmp_path / "mm") == ((2 << 20, 16 << 20), (1 << 30, 0))
    assert hugepage_pools(tmp_path / "none") == ()
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "pid_max").write_text("4194304\n")
    assert pid_capacity(tmp_path / "sys") is None
    (tmp_path / "sys" / "threads-max").write_text("15703\n")
    assert pid_capacity(tmp_path / "sys") == 15703


def test_node_pids_is_the_ceiling_and_loadavgs_task_count(tmp_path: Path) -> None:
    """pid.available's observation: min(pid_max, threads-max) and the count after /proc/loadavg's slash (every
    task; the part before it counts only the runnable ones)."""
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "pid_max").write_text("32768\n")
    (tmp_path / "sys" / "threads-max").write_text("15703\n")
    (tmp_path / "loadavg").write_text("0.52 0.58 0.59 3/241 4012\n")
    assert running_tasks(tmp_path) == 241
    observed = node_pids(tmp_path / "sys", tmp_path)
    assert (observed.max_pid, observed.running, observed.available) == (15703, 241, 15462)
    with pytest.raises(OSError, match="pid_max and threads-max"):
        node_pids(tmp_path / "none", tmp_path)


def test_layer_facts_survive_the_wire_and_old_documents_get_defaults() -> None:
    facts = NodeFacts(memory_capacity=1 << 30, debian_release="trixie", init="systemd", init_version="systemd 257",
                      runtime="runc", runtime_version="runc version 1.1.15", cgroup2_mount_options=("rw",),
                      cgroup_subtree_control=("cpu", "memory"), swap_devices=("/dev/vdb",), psi=True,
                      kernel_config=(("CONFIG_PSI", "y"),), pid_capacity=4194304,
                      hugepages=((2 << 20, 16 << 20), (1 << 30, 0)))
    assert facts_from_dict(facts_to_dict(facts)) == facts
    old = {k: v for k, v in facts_to_dict(facts).items() if k not in LAYER_FIELDS}
    assert facts_from_dict(old) == NodeFacts(memory_capacity=1 << 30)


@pytest.mark.parametrize(("kernel", "feature", "present"), [
    ("5.10.0-46-amd64", "memory_recursiveprot", True), ("5.10.0-46-amd64", "memory.peak", False),
    ("6.1.0-57-amd64", "memory.peak", True), ("6.1.0-57-amd64", "memory.swap.peak", False),
    ("6.12.118+deb13-amd64", "memory.swap.peak", True), ("5.19.0", "memory.reclaim", True),
])
def test_kernel_features_by_release(kernel: str, feature: str, present: bool) -> None:
    assert NodeFacts(memory_capacity=1, kernel_version=kernel).has_kernel_feature(feature) is present
