"""vmlinux extraction from the xz payload of a bzImage (MEASURED.md: magic FD 37 7A 58 5A 00)."""

from __future__ import annotations

import lzma

import pytest

from infra.vm.kernel import extract_vmlinux

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
