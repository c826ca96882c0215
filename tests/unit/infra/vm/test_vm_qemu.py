"""qemu argv and guest kernel command line of the reference VM (MEASURED.md boot facts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.infra.vm.qemu import QemuSpec, kernel_cmdline, lsm_without_bpf, qemu_argv, with_hugepage_pool


def spec(**changes: object) -> QemuSpec:
    fields: dict[str, object] = dict(
        accel="tcg", memory_mib=2048, cpus=2, kernel=Path("/c/img/vmlinux"), initrd=Path("/c/img/initrd.img"),
        root_disk=Path("/c/img/root.img"), swap_disk=Path("/c/vms/a/swap.img"),
        console_log=Path("/c/vms/a/console.log"), ssh_port=40022, cmdline="console=ttyS0",
    )
    fields.update(changes)
    return QemuSpec(**fields)  # type: ignore[arg-type]


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_cmdline_forces_cgroup2_psi_serial_console_and_our_init() -> None:
    words = kernel_cmdline().split()
    for word in ("cgroup_no_v1=all", "psi=1", "console=ttyS0", "root=/dev/vda", "init=/sbin/nodeconf-init",
                 "panic=-1"):
        assert word in words


def test_cmdline_extra_words_come_last() -> None:
    assert kernel_cmdline(("debug",)).endswith(" debug")


# CONFIG_LSM of Debian trixie's 6.12 kernel (its config-6.12.*-amd64), and orders without bpf.
TRIXIE_LSM = 'CONFIG_LSM="landlock,lockdown,yama,loadpin,safesetid,integrity,apparmor,selinux,smack,tomoyo,bpf,ipe"'


@pytest.mark.parametrize(("config", "expected"), [
    (f"# CONFIG_FOO is not set\n{TRIXIE_LSM}\nCONFIG_BPF_LSM=y\n",
     ("lsm=landlock,lockdown,yama,loadpin,safesetid,integrity,apparmor,selinux,smack,tomoyo,ipe",)),
    ('CONFIG_LSM="bpf"\n', ("lsm=",)),
    ('CONFIG_LSM="lockdown,yama,apparmor"\n', ()),
    ("CONFIG_BPF_LSM=y\n", ()),
])
def test_lsm_without_bpf_keeps_the_kernels_order(config: str, expected: tuple[str, ...]) -> None:
    assert lsm_without_bpf(config) == expected


@pytest.mark.parametrize(
    ("accel", "expected"),
    [("tcg", ["-accel", "tcg,thread=multi", "-cpu", "max,-erms,-fsrm"]), ("kvm", ["-accel", "kvm", "-cpu", "host"])],
)
def test_accelerator_flags(accel: str, expected: list[str]) -> None:
    assert qemu_argv(spec(accel=accel))[1:5] == expected


def test_unknown_accelerator_is_rejected() -> None:
    with pytest.raises(ValueError, match="'kvm' or 'tcg'"):
        qemu_argv(spec(accel="hvf"))


def test_root_disk_is_a_pristine_snapshot_and_swap_disk_second() -> None:
    assert option(qemu_argv(spec()), "-drive") == [
        "file=/c/img/root.img,format=raw,if=virtio,snapshot=on",
        "file=/c/vms/a/swap.img,format=raw,if=virtio,cache=unsafe",
    ]


def test_no_swap_disk_when_swap_is_off() -> None:
    assert len(option(qemu_argv(spec(swap_disk=None)), "-drive")) == 1


def test_network_is_restricted_to_one_loopback_ssh_forward() -> None:
    assert option(qemu_argv(spec()), "-nic") == [
        "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:40022-:22"
    ]


def test_boot_files_size_and_console() -> None:
    argv = qemu_argv(spec())
    assert option(argv, "-kernel") == ["/c/img/vmlinux"]
    assert option(argv, "-initrd") == ["/c/img/initrd.img"]
    assert option(argv, "-append") == ["console=ttyS0"]
    assert option(argv, "-m") == ["2048"] and option(argv, "-smp") == ["2"]
    assert option(argv, "-serial") == ["file:/c/vms/a/console.log"]
    assert "-nodefaults" in argv and "-no-reboot" in argv


def test_commas_in_paths_are_doubled() -> None:
    argv = qemu_argv(spec(root_disk=Path("/c/a,b/root.img"), console_log=Path("/c/a,b/console.log")))
    assert option(argv, "-drive")[0].startswith("file=/c/a,,b/root.img,")
    assert option(argv, "-serial") == ["file:/c/a,,b/console.log"]


def test_every_built_vm_reserves_eight_2mib_huge_pages() -> None:
    """hugetlbpage.rst: `hugepagesz=2M hugepages=8` fills the 2 MiB pool with 8 pages at boot (16 MiB)."""
    for init in ("minimal", "systemd"):
        words = kernel_cmdline(init=init).split()
        assert words.count("hugepagesz=2M") == 1 and words.count("hugepages=8") == 1


def test_a_stored_command_line_gets_the_pool_once() -> None:
    old = "console=ttyS0 root=/dev/vda init=/lib/systemd/systemd"
    assert with_hugepage_pool(old) == old + " hugepagesz=2M hugepages=8"
    assert with_hugepage_pool(with_hugepage_pool(old)) == with_hugepage_pool(old)
    assert with_hugepage_pool("root=/dev/vda hugepages=0") == "root=/dev/vda hugepages=0"
