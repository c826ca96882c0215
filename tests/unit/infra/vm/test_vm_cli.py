"""`nodeconf node` without booting: status, down and ssh on recorded, stale and unknown VMs; bad names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodeconf.cli.main import main
from nodeconf.cli.node import ssh_words
from nodeconf.infra.vm.state import VmState, vm_directory


def node(tmp_path: Path, *args: str) -> int:
    return main(["node", "--cache-dir", str(tmp_path), *args])


def record(tmp_path: Path, name: str) -> Path:
    directory = vm_directory(name, tmp_path)
    directory.mkdir(parents=True)
    VmState(name, os.getpid(), 40022, str(directory), "tcg", "/k", "ssh-ed25519 AAAA", 2048, 2, 1024).write()
    return directory


def test_status_without_vms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert node(tmp_path, "status") == 0
    assert capsys.readouterr().out == "no VMs\n"


def test_status_shows_a_stale_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(tmp_path, "old")
    assert node(tmp_path, "status") == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[:2] == ["old", "stale"]


def test_down_removes_a_stale_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = record(tmp_path, "old")
    assert node(tmp_path, "down", "old") == 0
    assert not directory.exists() and capsys.readouterr().out == "old: down\n"


def test_down_all_removes_every_record(tmp_path: Path) -> None:
    directories = [record(tmp_path, "a"), record(tmp_path, "b")]
    assert node(tmp_path, "down", "--all") == 0
    assert not any(d.exists() for d in directories)


@pytest.mark.parametrize("action", ["down", "ssh"])
def test_unknown_vm_is_exit_1_with_one_line(tmp_path: Path, action: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert node(tmp_path, action, "nosuch") == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_ssh_to_a_stale_vm_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record(tmp_path, "old")
    assert node(tmp_path, "ssh", "old", "--", "true") == 1
    assert "not running" in capsys.readouterr().err


@pytest.mark.parametrize("action", ["up", "down", "ssh"])
def test_a_bad_name_is_exit_2_with_one_line(tmp_path: Path, action: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert node(tmp_path, action, "../etc") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nodeconf node {action}: VM name") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("words", "expected"), [
    ([], ("default", [])),
    (["--", "cat", "/sys/fs/cgroup/cgroup.controllers"], ("default", ["cat", "/sys/fs/cgroup/cgroup.controllers"])),
    (["old"], ("old", [])),
    (["old", "--", "ls", "-l"], ("old", ["ls", "-l"])),
    (["old", "true"], ("old", ["true"])),
])
def test_ssh_words_split_name_and_command(words: list[str], expected: tuple[str, list[str]]) -> None:
    assert ssh_words(words) == expected


def test_ssh_dash_dash_means_the_default_vm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert node(tmp_path, "ssh", "--", "cat", "/etc/hostname") == 1
    assert "no VM called default;" in capsys.readouterr().err
