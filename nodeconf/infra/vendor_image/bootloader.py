"""Put GRUB's BIOS boot sector and core image on a GPT disk image file, without loop devices or grub-install.

What `grub-bios-setup` does for a GPT disk with a BIOS boot partition, done on the file: the boot sector (boot.img)
learns where core.img starts, and core.img's first sector (diskboot) learns where the rest of itself lies.
Source: GRUB 2 include/grub/i386/pc/boot.h (offsets) and util/setup.c (the patches); GRUB manual, "BIOS
installation" (core.img embedded in the BIOS boot partition on GPT).
"""

from __future__ import annotations

import struct
from pathlib import Path

SECTOR = 512
# boot.h: the boot sector's patchable fields.
BPB_START, BPB_END = 0x03, 0x5A
KERNEL_SECTOR = 0x5C
BOOT_DRIVE = 0x64
DRIVE_CHECK = 0x66
WINDOWS_NT_MAGIC, PART_END = 0x1B8, 0x1FE
# diskboot.S: the last blocklist entry (start u64, len u16, segment u16) ends the first sector of core.img.
BLOCKLIST = SECTOR - 12
KERNEL_SEGMENT = 0x800 + (SECTOR >> 4)


def boot_sector(boot_img: bytes, current_mbr: bytes, core_lba: int) -> bytes:
    """boot.img patched to load core.img from core_lba of the boot drive, keeping the disk's BPB and partition table.

    setup.c: copy the BPB, set kernel_sector, boot drive 0xFF (use the drive the BIOS booted), replace the
    floppy drive check jump with two NOPs (a hard disk), copy the partition table area (here the protective MBR).
    """
    if len(boot_img) != SECTOR or len(current_mbr) != SECTOR:
        raise ValueError("boot.img and the disk's first sector must be 512 bytes each")
    sector = bytearray(boot_img)
    sector[BPB_START:BPB_END] = current_mbr[BPB_START:BPB_END]
    struct.pack_into("<Q", sector, KERNEL_SECTOR, core_lba)
    sector[BOOT_DRIVE] = 0xFF
    sector[DRIVE_CHECK:DRIVE_CHECK + 2] = b"\x90\x90"
    sector[WINDOWS_NT_MAGIC:PART_END] = current_mbr[WINDOWS_NT_MAGIC:PART_END]
    sector[PART_END:SECTOR] = b"\x55\xaa"
    return bytes(sector)


def core_image(core_img: bytes, core_lba: int) -> bytes:
    """core.img with its diskboot blocklist naming the sectors after its first one (contiguous from core_lba + 1)."""
    sectors = -(-len(core_img) // SECTOR)
    if sectors < 2:
        raise ValueError("core.img is shorter than two sectors")
    image = bytearray(core_img.ljust(sectors * SECTOR, b"\0"))
    struct.pack_into("<QHH", image, BLOCKLIST, core_lba + 1, sectors - 1, KERNEL_SEGMENT)
    return bytes(image)


def install_bios_grub(disk: Path, boot_img: bytes, core_img: bytes, partition_lba: int, partition_sectors: int) -> None:
    """Write core.img into the BIOS boot partition and boot.img into the MBR of a raw disk image file."""
    core = core_image(core_img, partition_lba)
    if len(core) > partition_sectors * SECTOR:
        raise ValueError(f"core.img ({len(core)} bytes) does not fit the BIOS boot partition "
                         f"({partition_sectors * SECTOR} bytes)")
    with open(disk, "r+b") as handle:
        current = handle.read(SECTOR)
        handle.seek(partition_lba * SECTOR)
        handle.write(core)
        handle.seek(0)
        handle.write(boot_sector(boot_img, current, partition_lba))
