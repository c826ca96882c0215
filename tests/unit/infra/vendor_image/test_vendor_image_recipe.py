"""The vendor-like image recipe: partition table, GRUB boot sector and core patches, GRUB files, cache key.

Source: GRUB 2 include/grub/i386/pc/boot.h and util/setup.c (what grub-bios-setup patches); sfdisk(8).
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from nodeconf.infra.vendor_image.bootloader import BLOCKLIST, KERNEL_SEGMENT, boot_sector, core_image, install_bios_grub
from nodeconf.infra.vendor_image.recipe import (
    BIOS_BOOT_TYPE,
    ESP_TYPE,
    VendorRecipe,
    cache_key,
    core_modules,
    early_config,
    fstab,
    grub_config,
    layout,
    sfdisk_script,
    with_containerd,
)
from nodeconf.infra.vm.disk_probe import BIOS_BOOT_TYPE as PROBE_BIOS
from nodeconf.infra.vm.disk_probe import ESP_TYPE as PROBE_ESP
from nodeconf.infra.vm.disk_probe import gpt_partitions

UUID = "276a53a1-9025-42ac-bf13-206077a7eb42"


def test_unknown_suite_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Debian suite 'buster'"):
        VendorRecipe(suite="buster")


@pytest.mark.parametrize(("uefi", "first_type", "first_mib"), [(False, BIOS_BOOT_TYPE, 1), (True, ESP_TYPE, 64)])
def test_sfdisk_writes_the_gpt_the_layout_describes(tmp_path: Path, uefi: bool, first_type: str,
                                                     first_mib: int) -> None:
    recipe = VendorRecipe(uefi=uefi, root_mib=16)
    part = layout(recipe)
    disk = tmp_path / "disk.raw"
    with open(disk, "wb") as handle:
        handle.truncate(part.total_sectors * 512)
    subprocess.run(["sfdisk", "-q", "--no-reread", "--no-tell-kernel", str(disk)],
                   input=sfdisk_script(recipe, part).encode(), check=True, capture_output=True)
    first, root = gpt_partitions(disk.read_bytes()[:34 * 512])
    assert str(first.type_guid).upper() == first_type
    assert (first.first_lba, first.sectors) == (2048, first_mib * 2048)
    assert (root.first_lba, root.sectors) == (2048 + first_mib * 2048, 16 * 2048)
    assert (PROBE_ESP if uefi else PROBE_BIOS) == first.type_guid


def test_boot_sector_points_at_core_and_keeps_the_partition_table() -> None:
    boot = bytes(range(256)) * 2
    mbr = bytearray(512)
    mbr[0x1BE:0x1CE] = b"\x00\x00\x02\x00\xee" + b"\xff" * 11  # the protective MBR entry
    mbr[510:512] = b"\x55\xaa"
    sector = boot_sector(boot, bytes(mbr), 2048)
    assert struct.unpack_from("<Q", sector, 0x5C)[0] == 2048
    assert sector[0x64] == 0xFF and sector[0x66:0x68] == b"\x90\x90"
    assert sector[0x1B8:0x200] == mbr[0x1B8:0x200]
    assert sector[:3] == boot[:3] and sector[0x68:0x1B8] == boot[0x68:0x1B8]


def test_core_blocklist_names_the_rest_of_core() -> None:
    core = core_image(b"\x01" * 1300, 2048)
    assert len(core) == 3 * 512
    assert struct.unpack_from("<QHH", core, BLOCKLIST) == (2049, 2, KERNEL_SEGMENT)


def test_core_larger_than_the_bios_boot_partition_is_refused(tmp_path: Path) -> None:
    disk = tmp_path / "disk.raw"
    disk.write_bytes(bytes(8 * 512))
    with pytest.raises(ValueError, match="does not fit the BIOS boot partition"):
        install_bios_grub(disk, bytes(512), bytes(4 * 512), 2, 2)


def test_grub_files_boot_the_distribution_kernel_by_uuid() -> None:
    recipe = VendorRecipe()
    config = grub_config(recipe, UUID, "6.12.118+deb13-amd64")
    assert f"linux /boot/vmlinuz-6.12.118+deb13-amd64 root=UUID={UUID} ro" in config
    assert "initrd /boot/initrd.img-6.12.118+deb13-amd64" in config
    assert "console=ttyS0,115200" in config and "terminal_output serial console" in config
    assert early_config(UUID) == f"search --no-floppy --fs-uuid --set=root {UUID}\nset prefix=($root)/boot/grub\n"
    assert "biosdisk" in core_modules(recipe) and "biosdisk" not in core_modules(VendorRecipe(uefi=True))
    assert fstab(UUID, "ABCD-1234").splitlines()[1] == "UUID=ABCD-1234 /boot/efi vfat umask=0077 0 1"


def test_cache_key_follows_firmware_and_package_versions() -> None:
    bios, uefi = VendorRecipe(), VendorRecipe(uefi=True)
    versions = {"cloud-init": "25.1.4-1"}
    assert cache_key(bios, versions).startswith("trixie-bios-")
    assert cache_key(uefi, versions).startswith("trixie-uefi-")
    assert cache_key(bios, versions) != cache_key(bios, {"cloud-init": "25.1.4-2"})
    assert cache_key(bios, versions) == cache_key(VendorRecipe(), dict(versions))
    assert "grub-efi-amd64-bin" in uefi.all_packages and "grub-pc-bin" in bios.all_packages


def test_containerd_is_one_package_more_and_an_image_of_its_own() -> None:
    """`--containerd`: the same image plus Debian's containerd, cached apart; the plain image keeps its key."""
    plain = VendorRecipe()
    runtime = with_containerd(plain)
    assert runtime.all_packages == (*plain.packages, "containerd", plain.grub_package)
    assert (runtime.containerd, plain.containerd, with_containerd(runtime)) == (True, False, runtime)
    versions = {"containerd": "1.7.24~ds1-6+deb13u1"}
    assert cache_key(runtime, versions) != cache_key(plain, versions)
