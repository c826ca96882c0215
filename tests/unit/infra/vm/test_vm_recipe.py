"""Image recipe: cache key, apt output parsing, module load order (issue 4: cached by recipe + versions)."""

from __future__ import annotations

import dataclasses

import pytest

from nodeconf.infra.vm.recipe import (
    Recipe,
    cache_key,
    candidate_versions,
    default_recipe,
    insmod_order,
    kernel_package_from_depends,
    kernel_part_packages,
    kernel_release,
    select_boot_modules,
)

VERSIONS = {"linux-image-6.1.0-57-amd64": "6.1.192-3", "busybox-static": "1:1.35.0-4+deb12u1+b1"}


def test_cache_key_is_stable_for_the_same_recipe_and_versions() -> None:
    assert cache_key(default_recipe(), VERSIONS) == cache_key(default_recipe(), dict(reversed(VERSIONS.items())))


@pytest.mark.parametrize(
    ("recipe", "versions"),
    [
        pytest.param(dataclasses.replace(default_recipe(), root_disk_mib=2048), VERSIONS, id="recipe-field"),
        pytest.param(dataclasses.replace(default_recipe(), scripts={"guest_init.sh": "#!/bin/sh\n"}), VERSIONS,
                     id="init-script-text"),
        pytest.param(default_recipe(), {**VERSIONS, "busybox-static": "1:1.36.1-1"}, id="package-version"),
        pytest.param(default_recipe(), {**VERSIONS, "python3": "3.11.2-1+b1"}, id="extra-package"),
    ],
)
def test_cache_key_changes_with_recipe_or_versions(recipe: Recipe, versions: dict[str, str]) -> None:
    assert cache_key(recipe, versions) != cache_key(default_recipe(), VERSIONS)


def test_cache_key_names_the_suite() -> None:
    key = cache_key(default_recipe(), VERSIONS)
    assert key.startswith("bookworm-") and len(key) == len("bookworm-") + 16


def test_default_recipe_ships_its_scripts() -> None:
    scripts = default_recipe().scripts
    cgroup2 = [line.split() for line in scripts["fstab"].splitlines() if line.startswith("cgroup2 ")]
    assert cgroup2 and cgroup2[0][1] == "/sys/fs/cgroup" and cgroup2[0][2] == "cgroup2"
    assert {"nsdelegate", "memory_recursiveprot"} <= set(cgroup2[0][3].split(","))
    assert "mount -a" in scripts["guest_init.sh"] and "swapon -a" in scripts["guest_init.sh"]
    assert "NODECONF-READY" in scripts["guest_init.sh"]
    assert "switch_root" in scripts["initramfs_init.sh"]
    assert "PermitRootLogin prohibit-password" in scripts["sshd_config"]


def test_kernel_package_from_apt_cache_depends() -> None:
    output = "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n"
    assert kernel_package_from_depends(output) == "linux-image-6.1.0-57-amd64"


def test_kernel_package_missing_is_an_error() -> None:
    with pytest.raises(ValueError, match="Depends"):
        kernel_package_from_depends("linux-image-amd64\n")


def test_candidate_versions_from_apt_cache_policy() -> None:
    output = (
        "busybox-static:\n  Installed: (none)\n  Candidate: 1:1.35.0-4+deb12u1+b1\n  Version table:\n"
        "     1:1.35.0-4+deb12u1+b1 500\n"
        "python3:\n  Installed: 3.11.2-1+b1\n  Candidate: 3.11.2-1+b1\n"
        "nosuch:\n  Installed: (none)\n  Candidate: (none)\n"
    )
    assert candidate_versions(output) == {
        "busybox-static": "1:1.35.0-4+deb12u1+b1", "python3": "3.11.2-1+b1", "nosuch": "(none)",
    }


@pytest.mark.parametrize(
    ("package", "release"),
    [("linux-image-6.1.0-57-amd64", "6.1.0-57-amd64"), ("linux-image-6.12.9+bpo-amd64", "6.12.9+bpo-amd64")],
)
def test_kernel_release(package: str, release: str) -> None:
    assert kernel_release(package) == release


@pytest.mark.parametrize("package", ["linux-image-", "busybox-static"])
def test_kernel_release_rejects_other_names(package: str) -> None:
    with pytest.raises(ValueError, match="not a Debian kernel package"):
        kernel_release(package)


def test_insmod_order_keeps_first_occurrence_and_skips_builtins() -> None:
    base = "/t/lib/modules/6.1.0-57-amd64/kernel"
    virtio_blk = (f"insmod {base}/drivers/virtio/virtio.ko \ninsmod {base}/drivers/virtio/virtio_ring.ko \n"
                  f"insmod {base}/drivers/block/virtio_blk.ko \n")
    ext4 = f"builtin crc16\ninsmod {base}/fs/jbd2/jbd2.ko \ninsmod {base}/fs/ext4/ext4.ko \n"
    net = f"insmod {base}/drivers/virtio/virtio.ko \ninsmod {base}/drivers/net/virtio_net.ko \n"
    assert insmod_order([virtio_blk, ext4, net]) == [
        f"{base}/drivers/virtio/virtio.ko", f"{base}/drivers/virtio/virtio_ring.ko",
        f"{base}/drivers/block/virtio_blk.ko", f"{base}/fs/jbd2/jbd2.ko", f"{base}/fs/ext4/ext4.ko",
        f"{base}/drivers/net/virtio_net.ko",
    ]


# `apt-cache depends` of sid's split kernel package (7.2.13, read from the archive 2026-11-30), abridged.
SID_KERNEL_DEPENDS = """\
linux-image-7.2.13+deb14-amd64
  PreDepends: linux-base
 |Depends: dracut
  Depends: <linux-initramfs-tool>
  Depends: linux-base-7.2.13+deb14-amd64
  Depends: linux-binary-7.2.13+deb14-amd64
  Depends: linux-modules-7.2.13+deb14-amd64
  Suggests: linux-doc-7.2
"""
BOOKWORM_KERNEL_DEPENDS = """\
linux-image-6.1.0-57-amd64
  Depends: kmod
  Depends: linux-base
 |Depends: initramfs-tools
  Recommends: firmware-linux-free
"""


def test_split_kernel_parts_are_the_same_release_packages() -> None:
    assert kernel_part_packages(SID_KERNEL_DEPENDS, "7.2.13+deb14-amd64") == [
        "linux-base-7.2.13+deb14-amd64", "linux-binary-7.2.13+deb14-amd64", "linux-modules-7.2.13+deb14-amd64"]
    assert kernel_part_packages(BOOKWORM_KERNEL_DEPENDS, "6.1.0-57-amd64") == []


# `modprobe --show-depends` as run on the trixie (6.12) and sid (7.2) kernel trees, paths shortened.
TRIXIE = {
    "virtio_pci": "builtin virtio_pci\n",
    "virtio_blk": "insmod /k/drivers/block/virtio_blk.ko.xz \n",
    "crc32c_generic": "insmod /k/crypto/crc32c_generic.ko.xz \n",
    "ext4": "insmod /k/crypto/crc32c_generic.ko.xz \ninsmod /k/fs/jbd2/jbd2.ko.xz \ninsmod /k/fs/ext4/ext4.ko.xz \n",
}
SID: dict[str, str | None] = {
    "virtio_pci": "builtin virtio_pci\n",
    "crc32c_generic": None,
    "ext4": "insmod /k/crypto/crc32c-cryptoapi.ko.xz \ninsmod /k/fs/jbd2/jbd2.ko.xz \ninsmod /k/fs/ext4/ext4.ko.xz \n",
}


def test_builtin_modules_add_no_file_and_shared_dependencies_load_once() -> None:
    assert select_boot_modules(dict(TRIXIE), ()) == [
        "/k/drivers/block/virtio_blk.ko.xz", "/k/crypto/crc32c_generic.ko.xz", "/k/fs/jbd2/jbd2.ko.xz",
        "/k/fs/ext4/ext4.ko.xz"]


def test_a_missing_optional_module_is_skipped() -> None:
    assert select_boot_modules(SID, ("crc32c_generic",)) == [
        "/k/crypto/crc32c-cryptoapi.ko.xz", "/k/fs/jbd2/jbd2.ko.xz", "/k/fs/ext4/ext4.ko.xz"]


def test_a_missing_required_module_is_an_error() -> None:
    with pytest.raises(ValueError, match="no module crc32c_generic"):
        select_boot_modules(SID, ())
