"""small_files: whole files through os calls, as Path.read_text and write_text gave them (issue 31)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nodeconf.enforcer.small_files import open_append, read_text, write_bytes


def test_read_text_reads_past_one_read_and_below_a_directory_handle(tmp_path: Path) -> None:
    big = "0123456789abcdef\n" * 10_000  # 170 kB: three reads of 64 KiB
    (tmp_path / "big").write_text(big)
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_text("big", directory) == big
    finally:
        os.close(directory)
    assert read_text(tmp_path / "big") == big
    assert read_text("/proc/self/stat").split()[0] == str(os.getpid())


def test_read_text_raises_for_a_missing_file_and_replaces_undecodable_bytes(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "missing")
    (tmp_path / "bytes").write_bytes(b"ok \xff\n")
    assert read_text(tmp_path / "bytes") == "ok \ufffd\n"


def test_write_bytes_truncates_and_makes_the_mode_open_makes(tmp_path: Path) -> None:
    target = tmp_path / "state"
    write_bytes(target, b"a longer first text")
    write_bytes(target, b"short")
    assert target.read_bytes() == b"short"
    (tmp_path / "by-open").write_text("x")
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE((tmp_path / "by-open").stat().st_mode)


def test_open_append_appends(tmp_path: Path) -> None:
    log = tmp_path / "log"
    for line in (b"one\n", b"two\n"):
        fd = open_append(log)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    assert log.read_bytes() == b"one\ntwo\n"
