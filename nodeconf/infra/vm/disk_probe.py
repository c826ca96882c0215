"""What a vendor disk image is before it boots: its format (qcow2 or raw, sound) and whether it boots by BIOS or UEFI.

Source: qemu-img(1) `info --output=json` and `check`; UEFI specification 2.10 §5.3 (GPT header at LBA 1,
partition entries, the EFI system partition type) and §13.3.1.3 (removable media path EFI/BOOT/BOOTX64.EFI);
GRUB manual "BIOS installation" (BIOS boot partition type).
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

FORMATS = ("qcow2", "raw")
SECTOR = 512
GPT_SIGNATURE = b"EFI PART"
ESP_TYPE = uuid.UUID("C12A7328-F81F-11D2-BA4B-00A0C93EC93B")
BIOS_BOOT_TYPE = uuid.UUID("21686148-6449-6E6F-744E-656564454649")
ESP_LOADER = "::/EFI/BOOT/BOOTX64.EFI"
# Enough sectors for the protective MBR, the GPT header and 128 entries of 128 bytes.
HEAD_SECTORS = 34


class DiskImageError(ValueError):
    """The image cannot be booted as given; the message is one line naming the file."""


@dataclass(frozen=True)
class Partition:
    """One GPT entry: type, first sector and length in sectors."""

    type_guid: uuid.UUID
    first_lba: int
    sectors: int


@dataclass(frozen=True)
class DiskFacts:
    """A bootable-looking image: its path, format and firmware ('bios' or 'uefi')."""

    path: Path
    format: str
    firmware: str


def _qemu_img(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["qemu-img", *args], capture_output=True, check=False, timeout=120)


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1].strip() if lines else "no output"


def image_format(path: Path) -> str:
    """'qcow2' or 'raw' for a sound image; DiskImageError (one line) for missing, unreadable, corrupt or other."""
    if not path.exists():
        raise DiskImageError(f"image {path} does not exist")
    if not path.is_file():
        raise DiskImageError(f"image {path} is not a regular file")
    info = _qemu_img("info", "--output=json", str(path))
    if info.returncode != 0:
        raise DiskImageError(f"image {path} is not a readable disk image: {_last_line(info.stderr)}")
    detected = str(json.loads(info.stdout).get("format", "?"))
    if detected not in FORMATS:
        raise DiskImageError(f"image {path} is {detected}; nodeconf boots qcow2 and raw images "
                             f"(convert with: qemu-img convert -O qcow2 {path} OUT.qcow2)")
    if detected == "qcow2":
        check = _qemu_img("check", "-f", "qcow2", str(path))
        # qemu-img check: 0 sound, 3 only leaked clusters (harmless); 1 not checked, 2 corrupt.
        if check.returncode not in (0, 3):
            raise DiskImageError(f"image {path} is a corrupt qcow2: {_last_line(check.stdout + check.stderr)}")
    return detected


def read_sectors(path: Path, fmt: str, first: int, count: int, output: Path) -> bytes:
    """Sectors [first, first+count) of the image as raw bytes, via qemu-img dd (works for qcow2 and raw).

    qemu-img dd counts `count` from the start of the input, not from `skip`; blocks are as large as the
    alignment allows (512-byte blocks make it slow).
    """
    block = math.gcd(first, count, 2048)
    proc = _qemu_img("dd", "-f", fmt, "-O", "raw", f"bs={block * SECTOR}", f"skip={first // block}",
                     f"count={(first + count) // block}", f"if={path}", f"of={output}")
    if proc.returncode != 0:
        raise DiskImageError(f"image {path}: cannot read sectors {first}+{count}: {_last_line(proc.stderr)}")
    return output.read_bytes()


def gpt_partitions(head: bytes) -> list[Partition]:
    """The used entries of a GPT from the first sectors of a disk; [] when there is no GPT header at LBA 1."""
    if len(head) < 2 * SECTOR or head[SECTOR:SECTOR + 8] != GPT_SIGNATURE:
        return []
    entries_lba, count, size = struct.unpack_from("<QII", head, SECTOR + 72)
    found = []
    for index in range(min(count, 128)):
        offset = entries_lba * SECTOR + index * size
        if offset + 48 > len(head):
            break
        type_guid = uuid.UUID(bytes_le=head[offset:offset + 16])
        first, last = struct.unpack_from("<QQ", head, offset + 32)
        if type_guid.int:
            found.append(Partition(type_guid, first, last - first + 1))
    return found


def has_boot_code(head: bytes) -> bool:
    """True when the first sector carries the 55AA signature and some boot code (not an all-zero loader)."""
    return len(head) >= SECTOR and head[510:512] == b"\x55\xaa" and any(head[:440])


def esp_has_loader(path: Path, fmt: str, esp: Partition, scratch: Path) -> bool:
    """True when the EFI system partition holds EFI/BOOT/BOOTX64.EFI (read with mtools, no mount)."""
    read_sectors(path, fmt, esp.first_lba, esp.sectors, scratch)
    proc = subprocess.run(["mdir", "-b", "-i", str(scratch), ESP_LOADER], capture_output=True, check=False)
    return proc.returncode == 0


def inspect_image(path: Path, uefi: bool | None = None) -> DiskFacts:
    """Format and firmware of an image: UEFI when asked, or when it has an ESP loader and no BIOS boot path."""
    path = Path(path).resolve() if Path(path).exists() else Path(path)
    fmt = image_format(path)
    if uefi is not None:
        return DiskFacts(path, fmt, "uefi" if uefi else "bios")
    with tempfile.TemporaryDirectory(prefix="nodeconf-disk-") as tmp:
        head = read_sectors(path, fmt, 0, HEAD_SECTORS, Path(tmp) / "head")
        partitions = gpt_partitions(head)
        bios = has_boot_code(head) or any(p.type_guid == BIOS_BOOT_TYPE for p in partitions)
        esps = [p for p in partitions if p.type_guid == ESP_TYPE]
        uefi_loader = any(esp_has_loader(path, fmt, esp, Path(tmp) / "esp") for esp in esps)
    return DiskFacts(path, fmt, "uefi" if uefi_loader and not bios else "bios")
