"""The uncompressed ELF kernel inside a Debian vmlinuz: xz (bullseye, bookworm) or zstd (trixie, sid).

Source: MEASURED.md (xz payload at FD 37 7A 58 5A 00; trixie and sid compress with zstd); the bzImage setup
header's payload_offset/payload_length (Linux Documentation/arch/x86/boot.rst, protocol 2.08+), whose payload
ends with the 4-byte uncompressed size (scripts/Makefile.lib size_append).
"""

from __future__ import annotations

import lzma
import struct
import subprocess

XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ELF_MAGIC = b"\x7fELF"
SETUP_SECTS = 0x1F1
PAYLOAD_FIELDS = 0x248
SIZE_TRAILER = 4


def extract_vmlinux(vmlinuz: bytes) -> bytes:
    """The ELF vmlinux inside a bzImage (first xz stream holding an ELF, else the zstd payload); ValueError if none."""
    start = vmlinuz.find(XZ_MAGIC)
    while start != -1:
        decoder = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        try:
            payload = decoder.decompress(vmlinuz[start:])
        except lzma.LZMAError:
            payload = b""
        if payload.startswith(ELF_MAGIC):
            return payload
        start = vmlinuz.find(XZ_MAGIC, start + 1)
    payload = bzimage_payload(vmlinuz)
    if payload.startswith(ZSTD_MAGIC):
        elf = zstd_decompress(payload[:-SIZE_TRAILER])
        if elf.startswith(ELF_MAGIC):
            return elf
    raise ValueError("no xz- or zstd-compressed ELF kernel found in vmlinuz")


def bzimage_payload(vmlinuz: bytes) -> bytes:
    """The compressed kernel named by the setup header (empty when the header does not describe one)."""
    if len(vmlinuz) < PAYLOAD_FIELDS + 8:
        return b""
    setup_sects = vmlinuz[SETUP_SECTS] or 4
    offset, length = struct.unpack_from("<II", vmlinuz, PAYLOAD_FIELDS)
    start = (setup_sects + 1) * 512 + offset
    return vmlinuz[start:start + length] if length > SIZE_TRAILER and start + length <= len(vmlinuz) else b""


def zstd_decompress(data: bytes) -> bytes:
    """Decompress one zstd stream with the host's zstd tool (Python 3.11 has no zstd module); ValueError if bad."""
    proc = subprocess.run(["zstd", "-dcq"], input=data, capture_output=True, check=False)
    if proc.returncode != 0:
        raise ValueError(f"zstd: {proc.stderr.decode(errors='replace').strip() or proc.returncode}")
    return proc.stdout
