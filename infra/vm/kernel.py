"""The uncompressed ELF kernel inside a Debian vmlinuz (source: MEASURED.md, xz payload at FD 37 7A 58 5A 00)."""

from __future__ import annotations

import lzma

XZ_MAGIC = b"\xfd7zXZ\x00"
ELF_MAGIC = b"\x7fELF"


def extract_vmlinux(vmlinuz: bytes) -> bytes:
    """The ELF vmlinux decoded from the first xz stream of a bzImage that holds an ELF; ValueError if none."""
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
    raise ValueError("no xz-compressed ELF kernel found in vmlinuz")
