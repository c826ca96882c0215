"""Vendor disk images before boot: missing, corrupt or other-format images are refused in one line; BIOS vs UEFI.

Source: qemu-img(1) info/check; UEFI specification 2.10 §5.3 (GPT), §13.3.1.3 (EFI/BOOT/BOOTX64.EFI).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nodeconf.infra.vendor_image.recipe import VendorRecipe, layout, sfdisk_script
from nodeconf.infra.vm.disk_probe import DiskImageError, image_format, inspect_image


def qemu_img(*args: str) -> None:
    subprocess.run(["qemu-img", *args], check=True, capture_output=True)


def gpt_disk(path: Path, *, uefi: bool) -> Path:
    """A small raw GPT disk laid out like the vendor image (root 4 MiB, nothing inside)."""
    recipe = VendorRecipe(uefi=uefi, root_mib=4, esp_mib=33)
    part = layout(recipe)
    with open(path, "wb") as handle:
        handle.truncate(part.total_sectors * 512)
    subprocess.run(["sfdisk", "-q", "--no-reread", "--no-tell-kernel", str(path)],
                   input=sfdisk_script(recipe, part).encode(), check=True, capture_output=True)
    return path


def add_esp_loader(disk: Path, tmp_path: Path) -> None:
    esp = tmp_path / "esp.img"
    subprocess.run(["mkfs.vfat", "-F", "32", "-C", str(esp), str(33 * 1024)], check=True, capture_output=True)
    loader = tmp_path / "BOOTX64.EFI"
    loader.write_bytes(b"MZ")
    for argv in (["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT"],
                 ["mcopy", "-i", str(esp), str(loader), "::/EFI/BOOT/BOOTX64.EFI"],
                 ["dd", f"if={esp}", f"of={disk}", "bs=1M", "seek=1", "conv=notrunc", "status=none"]):
        subprocess.run(argv, check=True, capture_output=True)


def test_missing_image(tmp_path: Path) -> None:
    with pytest.raises(DiskImageError, match=r"^image .*/nope.qcow2 does not exist$"):
        image_format(tmp_path / "nope.qcow2")


def test_directory_is_not_an_image(tmp_path: Path) -> None:
    with pytest.raises(DiskImageError, match="is not a regular file"):
        image_format(tmp_path)


def test_corrupt_qcow2_header(tmp_path: Path) -> None:
    image = tmp_path / "bad.qcow2"
    qemu_img("create", "-q", "-f", "qcow2", str(image), "64M")
    data = bytearray(image.read_bytes())
    data[20:24] = b"\x7f\xff\xff\xff"  # cluster_bits: far out of range
    image.write_bytes(bytes(data))
    with pytest.raises(DiskImageError) as err:
        image_format(image)
    assert str(err.value).startswith(f"image {image} is not a readable disk image: ")
    assert "\n" not in str(err.value)


def test_corrupt_qcow2_metadata(tmp_path: Path) -> None:
    image = tmp_path / "refcounts.qcow2"
    qemu_img("create", "-q", "-f", "qcow2", str(image), "64M")
    subprocess.run(["qemu-io", "-c", "write 0 64k", str(image)], check=True, capture_output=True)
    data = bytearray(image.read_bytes())
    refcount_table = int.from_bytes(data[48:56], "big")
    block = int.from_bytes(data[refcount_table:refcount_table + 8], "big")
    data[block:block + 64] = bytes(64)  # forget the refcounts of the header and tables
    image.write_bytes(bytes(data))
    with pytest.raises(DiskImageError, match=r"is a corrupt qcow2: "):
        image_format(image)


def test_other_formats_are_refused_with_the_conversion(tmp_path: Path) -> None:
    image = tmp_path / "disk.vmdk"
    qemu_img("create", "-q", "-f", "vmdk", str(image), "64M")
    with pytest.raises(DiskImageError, match=r"is vmdk; nodeconf boots qcow2 and raw images \(convert with: "):
        image_format(image)


def test_bios_gpt_disk_boots_by_bios(tmp_path: Path) -> None:
    facts = inspect_image(gpt_disk(tmp_path / "bios.raw", uefi=False))
    assert (facts.format, facts.firmware) == ("raw", "bios")


@pytest.mark.parametrize("fmt", ["raw", "qcow2"])
def test_esp_with_loader_boots_by_uefi(tmp_path: Path, fmt: str) -> None:
    disk = gpt_disk(tmp_path / "uefi.raw", uefi=True)
    add_esp_loader(disk, tmp_path)
    if fmt == "qcow2":
        qemu_img("convert", "-f", "raw", "-O", "qcow2", str(disk), str(tmp_path / "uefi.qcow2"))
        disk = tmp_path / "uefi.qcow2"
    facts = inspect_image(disk)
    assert (facts.format, facts.firmware) == (fmt, "uefi")


def test_esp_without_loader_falls_back_to_bios_and_the_flag_wins(tmp_path: Path) -> None:
    disk = gpt_disk(tmp_path / "empty-esp.raw", uefi=True)
    assert inspect_image(disk).firmware == "bios"
    assert inspect_image(disk, uefi=True).firmware == "uefi"
