"""Image recipe: cache key, apt output parsing, module load order (issue 4: cached by recipe + versions)."""

from __future__ import annotations

import dataclasses

import pytest

from infra.vm.recipe import (
    Recipe,
    cache_key,
    candidate_versions,
    default_recipe,
    insmod_order,
    kernel_package_from_depends,
    kernel_release,
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
