"""vmlinux extraction from the xz payload of a bzImage (MEASURED.md: magic FD 37 7A 58 5A 00)."""

from __future__ import annotations

import lzma
import struct
import subprocess

import pytest

from nodeconf.infra.vm.kernel import extract_vmlinux

ELF = b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 64


def test_extracts_the_elf_after_a_setup_header_and_before_a_trailer() -> None:
    payload = lzma.compress(ELF, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    bzimage = b"MZ" + b"\x00" * 1000 + payload + b"\x00\x10\x00\x00trailer"
    assert extract_vmlinux(bzimage) == ELF


def test_skips_a_false_magic_and_a_non_elf_stream() -> None:
    junk = lzma.compress(b"not a kernel", format=lzma.FORMAT_XZ)
    real = lzma.compress(ELF, format=lzma.FORMAT_XZ)
    bzimage = b"\xfd7zXZ\x00garbage" + junk + real
    assert extract_vmlinux(bzimage) == ELF


@pytest.mark.parametrize("image", [b"MZ" + b"\x00" * 64, b"\x1f\x8b\x08gzip-kernel"], ids=["empty", "gzip"])
def test_no_xz_elf_is_an_error(image: bytes) -> None:
    with pytest.raises(ValueError, match="no xz- or zstd-compressed ELF"):
        extract_vmlinux(image)


def bzimage_with_payload(payload: bytes, uncompressed_size: int) -> bytes:
    """A bzImage-shaped blob: setup_sects 1 (code at 1024), payload_offset 16, payload + 4-byte size trailer."""
    header = bytearray(1024 + 16)
    header[0x1F1] = 1
    body = payload + struct.pack("<I", uncompressed_size)
    struct.pack_into("<II", header, 0x248, 16, len(body))
    return bytes(header) + body + b"trailer"


def test_extracts_the_zstd_payload_named_by_the_setup_header() -> None:
    compressed = subprocess.run(["zstd", "-c", "-q"], input=ELF, capture_output=True, check=True).stdout
    assert extract_vmlinux(bzimage_with_payload(compressed, len(ELF))) == ELF


def test_a_zstd_payload_that_is_not_an_elf_is_an_error() -> None:
    compressed = subprocess.run(["zstd", "-c", "-q"], input=b"not a kernel", capture_output=True, check=True).stdout
    with pytest.raises(ValueError, match="no xz- or zstd-compressed ELF"):
        extract_vmlinux(bzimage_with_payload(compressed, 12))
