"""The VM cache is not trusted (issue 26 item 7): a record naming a directory other than its own place in the cache,
a symbolic link planted in the cache, or a link where nodeconf writes a file never makes `nodeconf clean`, a VM
start, `node up` or `node down` remove, kill or write anything outside the cache. Canary directories in temp dirs
stand for a user's data."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from nodeconf.cli import clean, node
from nodeconf.errors import InfrastructureError
from nodeconf.infra.vm import image as image_module
from nodeconf.infra.vm import paths
from nodeconf.infra.vm.accel import AccelChoice
from nodeconf.infra.vm.apt import Apt
from nodeconf.infra.vm.image import VmImage
from nodeconf.infra.vm.machine import VirtualMachine, VmError
from nodeconf.infra.vm.recipe import cache_key, default_recipe
from nodeconf.infra.vm.state import VmState, has_exited, list_states, prune_stale

DEAD_PID = 999_999_999


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    (tmp_path / "cache" / "images").mkdir(parents=True)
    (tmp_path / "cache" / "images" / "built").write_text("an image")
    return tmp_path / "cache"


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    directory = tmp_path / "home" / "data"
    directory.mkdir(parents=True)
    (directory / "precious").write_text("keep")
    return directory


def plant_record(place: Path, named: str, pid: int = DEAD_PID, owner: int = 0, owner_start: int = 0) -> None:
    """A state.json in `place` (made here) whose `directory` field says `named`."""
    place.mkdir(parents=True, exist_ok=True)
    state = VmState(place.name, pid, 2222, named, "tcg", "key", "ssh-ed25519 AAAA", 2048, 2, 1024, owner,
                    owner_start)
    (place / "state.json").write_text(json.dumps(asdict(state)))


def _clean(cache: Path) -> None:
    assert clean.run(argparse.Namespace(cache_dir=cache, dry_run=False, node=None)) == 0


def _down(cache: Path) -> None:
    node.run(argparse.Namespace(cache_dir=cache, action="down", name="x", all=True))


CLEANERS: dict[str, Callable[[Path], object]] = {"clean": _clean, "vm-start": prune_stale, "node-down": _down}


def _named(cache: Path, canary: Path, target: str) -> str:
    return {"outside": str(canary), "cache-root": str(cache), "vms-dir": str(paths.vms_dir(cache)),
            "dot-dot": f"{paths.vms_dir(cache)}/x/../../../home/data"}[target]


@pytest.mark.parametrize("target", ["outside", "cache-root", "vms-dir", "dot-dot"])
@pytest.mark.parametrize("cleaner", list(CLEANERS))
def test_a_stale_record_never_gets_another_directory_removed(cache: Path, canary: Path, cleaner: str,
                                                             target: str) -> None:
    other = paths.vms_dir(cache) / "other"  # another VM's directory, booting (no record yet)
    other.mkdir(parents=True)
    (other / "console.log").write_text("booting")
    plant_record(paths.vms_dir(cache) / "x", _named(cache, canary, target))
    CLEANERS[cleaner](cache)
    assert (canary / "precious").read_text() == "keep"
    assert (cache / "images" / "built").read_text() == "an image"
    assert (other / "console.log").read_text() == "booting"


@pytest.mark.parametrize("cleaner", list(CLEANERS))
def test_a_symlinked_vm_directory_is_never_followed(cache: Path, canary: Path, cleaner: str) -> None:
    place = paths.vms_dir(cache) / "x"
    plant_record(canary, str(place))
    place.parent.mkdir(parents=True)
    place.symlink_to(canary)
    CLEANERS[cleaner](cache)
    assert (canary / "precious").read_text() == "keep"
    assert list_states(cache) == []


@pytest.fixture
def bystander(canary: Path) -> Iterator[int]:
    """A process of someone else whose command line happens to name the canary directory."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(canary)])
    deadline = time.monotonic() + 10
    while str(canary).encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.02)
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_record_naming_another_directory_never_gets_a_process_killed(cache: Path, canary: Path,
                                                                       bystander: int) -> None:
    plant_record(paths.vms_dir(cache) / "x", str(canary), pid=bystander, owner=DEAD_PID, owner_start=1)
    _clean(cache)
    assert not has_exited(bystander)
    assert (canary / "precious").read_text() == "keep"


def test_known_hosts_is_never_written_through_a_link(cache: Path, canary: Path) -> None:
    place = paths.vms_dir(cache) / "default"
    place.mkdir(parents=True)
    (place / "known_hosts").symlink_to(canary / "precious")
    state = VmState("default", DEAD_PID, 2222, str(place), "tcg", "key", "ssh-ed25519 AAAA", 2048, 2, 1024)
    written = node._write_known_hosts(state)
    assert (canary / "precious").read_text() == "keep"
    assert not written.is_symlink() and written.read_text() == "[127.0.0.1]:2222 ssh-ed25519 AAAA\n"


def test_the_state_file_is_never_written_through_a_link(cache: Path, canary: Path) -> None:
    place = paths.vms_dir(cache) / "default"
    place.mkdir(parents=True)
    for name in ("state.tmp", "state.json"):
        (place / name).symlink_to(canary / "precious")
    state = VmState("default", DEAD_PID, 2222, str(place), "tcg", "key", "ssh-ed25519 AAAA", 2048, 2, 1024)
    state.write()
    assert (canary / "precious").read_text() == "keep"
    assert VmState.read(place) == state and not (place / "state.json").is_symlink()


def test_a_vm_start_refuses_a_link_in_place_of_its_directory(cache: Path, canary: Path) -> None:
    place = paths.vms_dir(cache) / "x"
    place.parent.mkdir(parents=True)
    place.symlink_to(canary)
    image = VmImage(directory=Path("/nonexistent"), key="k", kernel=Path("/nonexistent/vmlinux"),
                    initrd=Path("/nonexistent/initrd.img"), root_disk=Path("/nonexistent/root.img"),
                    client_key=Path("/nonexistent/id_ed25519"), host_public_key="ssh-ed25519 AAAA",
                    kernel_release="6.1.0-57-amd64")
    machine = VirtualMachine(image, name="x", cache_dir=cache, accel=AccelChoice("tcg", "test"))
    with pytest.raises(VmError, match="is a symbolic link or not a directory; not removed"):
        machine.start()
    assert place.is_symlink() and (canary / "precious").read_text() == "keep"
    assert sorted(path.name for path in canary.iterdir()) == ["precious"]


def test_image_locks_and_memos_are_never_written_through_links(cache: Path, canary: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A link planted at an image build's lock file or at the version memo's scratch name is not written through."""
    versions = {"kernel-package": "linux-image-6.1.0-57-amd64", "linux-image-6.1.0-57-amd64": "6.1.192-3"}
    key = cache_key(default_recipe(), versions)
    images = paths.images_dir(cache)
    (images / f"{key}.lock").symlink_to(canary / "precious")
    (images / f"resolved-versions.json.{os.getpid()}").symlink_to(canary / "precious")
    monkeypatch.setattr(image_module, "resolve_versions", lambda recipe, apt: dict(versions))
    monkeypatch.setattr(image_module, "apt_for", lambda *args: Apt((), Path("/nonexistent")))
    monkeypatch.setattr(image_module, "check_host", lambda: None)

    def build(recipe: object, variant: object, apt: object, found: object, built: str, target: Path,
              say: object) -> None:
        target.mkdir()
        (target / "manifest.json").write_text(json.dumps({"key": built, "kernel_release": "6.1.0-57-amd64"}))
        (target / "ssh_host_ed25519_key.pub").write_text("ssh-ed25519 AAAA host\n")

    monkeypatch.setattr(image_module, "_build", build)
    with pytest.raises(InfrastructureError, match=r"cannot lock .*\.lock: Too many levels of symbolic links"):
        image_module.ensure_image(cache)
    assert (canary / "precious").read_text() == "keep"
    (images / f"{key}.lock").unlink()
    assert image_module.ensure_image(cache).key == key


def test_a_record_with_a_directory_that_is_no_path_is_no_record(cache: Path) -> None:
    place = paths.vms_dir(cache) / "x"
    place.mkdir(parents=True)
    (place / "state.json").write_text(json.dumps({**asdict(VmState("x", DEAD_PID, 2222, "", "tcg", "key", "k", 2048,
                                                                   2, 1024)), "directory": 42}))
    assert list_states(cache) == []
    _clean(cache)
    assert (place / "state.json").exists()
