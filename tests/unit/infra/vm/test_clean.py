"""`nodeconf clean` on a canary cache: leftover VM records and orphaned qemu processes of killed runs, scratch
directories of killed image builds; a live run's VM, a `node up` VM, a running build and any process that is not
this cache's qemu are left alone (a cluster's runs: test_clean_kube.py)."""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nodeconf.cli import clean
from nodeconf.infra.vm import paths
from nodeconf.infra.vm.image import remove_leftover_builds
from nodeconf.infra.vm.state import VmState, has_exited, is_our_qemu, process_start, untracked_qemus


def fake_qemu(directory: Path, orphan: bool) -> int:
    """A process that looks like this cache's qemu (argv[0] qemu-system-x86_64, the VM directory in its command
    line); an orphan is re-parented to init as when its run was killed."""
    directory.mkdir(parents=True, exist_ok=True)
    sleeper = f"exec -a qemu-system-x86_64 {sys.executable} -c 'import time; time.sleep(120)' " \
              f"-serial file:{directory}/console.log"
    if orphan:
        out = subprocess.run(["bash", "-c", f"({sleeper}) >/dev/null 2>&1 & echo $!"], capture_output=True,
                             text=True, check=True)
        pid = int(out.stdout.strip())
    else:
        pid = subprocess.Popen(["bash", "-c", sleeper]).pid
    deadline = time.monotonic() + 10
    while not is_our_qemu(pid, directory.parents[1]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return pid


def alive(pid: int) -> bool:
    return not has_exited(pid)


def record(cache: Path, name: str, pid: int, owner: int, persistent: bool = False) -> VmState:
    directory = paths.vms_dir(cache) / name
    directory.mkdir(parents=True, exist_ok=True)
    state = VmState(name, pid, 2222, str(directory), "tcg", "key", "host-key", 2048, 2, 1024,
                    owner, process_start(owner) if owner else 0, persistent)
    state.write()
    return state


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def reaped() -> Any:
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, 9)


def _args(cache: Path, dry_run: bool = False, node: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(cache_dir=cache, dry_run=dry_run, node=node)


def test_vm_of_a_dead_run_is_removed_and_others_kept(cache: Path, reaped: list[int]) -> None:
    dead_owner = subprocess.Popen(["true"])
    dead_owner.wait()
    leftover = fake_qemu(paths.vms_dir(cache) / "killed-run", orphan=False)
    live = fake_qemu(paths.vms_dir(cache) / "live-run", orphan=False)
    kept = fake_qemu(paths.vms_dir(cache) / "default", orphan=False)
    reaped += [leftover, live, kept]
    record(cache, "killed-run", leftover, dead_owner.pid)
    record(cache, "live-run", live, os.getpid())
    record(cache, "default", kept, 0, persistent=True)
    record(cache, "stale", 999_999_999, os.getpid())

    assert clean.run(_args(cache, dry_run=True)) == 0
    assert alive(leftover) and (paths.vms_dir(cache) / "stale").exists()

    assert clean.run(_args(cache)) == 0
    assert not alive(leftover) and not (paths.vms_dir(cache) / "killed-run").exists()
    assert not (paths.vms_dir(cache) / "stale").exists()
    assert alive(live) and alive(kept)
    assert (paths.vms_dir(cache) / "live-run").exists() and (paths.vms_dir(cache) / "default").exists()


def test_orphaned_untracked_qemu_is_killed_but_not_a_live_runs(cache: Path, reaped: list[int]) -> None:
    orphan = fake_qemu(paths.vms_dir(cache) / "lost-state", orphan=True)
    booting = fake_qemu(paths.vms_dir(cache) / "booting", orphan=False)  # its run is alive, no state yet
    other_cache = fake_qemu(cache.parent / "elsewhere" / "vms" / "x", orphan=True)
    reaped += [orphan, booting, other_cache]
    assert untracked_qemus(cache) == [orphan]
    clean.run(_args(cache))
    assert not alive(orphan)
    assert alive(booting) and alive(other_cache)


def test_a_process_that_is_not_qemu_is_never_ours(cache: Path, reaped: list[int]) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(paths.vms_dir(cache) / "x")])
    reaped.append(proc.pid)
    time.sleep(0.2)
    assert not is_our_qemu(proc.pid, cache)


def test_scratch_of_a_killed_build_is_removed_not_a_running_one(cache: Path) -> None:
    images = paths.images_dir(cache)
    killed, running = images / ".bookworm-aaa.build-123", images / ".bookworm-bbb.build-456"
    for scratch in (killed, running):
        (scratch / "rootfs").mkdir(parents=True)
    (images / "bookworm-ccc").mkdir()  # a built image: never touched
    with open(images / "bookworm-bbb.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert remove_leftover_builds(cache, dry_run=True) == [killed.name] and killed.exists()
        assert remove_leftover_builds(cache) == [killed.name]
    assert not killed.exists() and running.exists() and (images / "bookworm-ccc").exists()


def test_bad_node_spec_is_one_line(cache: Path) -> None:
    from nodeconf.errors import InputError

    with pytest.raises(InputError, match="--node"):
        clean.run(_args(cache, node="ftp://nowhere"))
