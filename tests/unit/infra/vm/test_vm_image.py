"""Image cache: a cached image is found without building, versions are remembered until apt lists change."""

from __future__ import annotations

import json
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.infra.vm import image as image_module
from nodeconf.infra.vm.apt import Apt
from nodeconf.infra.vm.image import (
    MANIFEST,
    VmImage,
    apt_lists_signature,
    cached_versions,
    ensure_image,
    main,
    prune_images,
)
from nodeconf.infra.vm.recipe import cache_key, default_recipe

VERSIONS = {"kernel-package": "linux-image-6.1.0-57-amd64", "linux-image-6.1.0-57-amd64": "6.1.192-3"}


def fake_image(directory: Path, key: str) -> None:
    directory.mkdir(parents=True)
    (directory / MANIFEST).write_text(json.dumps({"key": key, "kernel_release": "6.1.0-57-amd64"}))
    (directory / "ssh_host_ed25519_key.pub").write_text("ssh-ed25519 AAAAC3Nz host\n")


@pytest.fixture()
def resolver(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count apt resolutions; forbid building."""
    calls: list[int] = []

    def resolve(recipe: object, apt: Apt) -> dict[str, str]:
        calls.append(1)
        return dict(VERSIONS)

    def no_build(*args: object) -> None:
        raise AssertionError("must not build")

    monkeypatch.setattr(image_module, "resolve_versions", resolve)
    monkeypatch.setattr(image_module, "apt_for", lambda *args: Apt((), Path("/nonexistent")))
    monkeypatch.setattr(image_module, "_build", no_build)
    return calls


def test_a_cached_image_is_loaded_without_building(tmp_path: Path, resolver: list[int]) -> None:
    key = cache_key(default_recipe(), VERSIONS)
    fake_image(tmp_path / "images" / key, key)
    found = ensure_image(tmp_path)
    assert found == VmImage(
        directory=tmp_path / "images" / key, key=key, kernel=tmp_path / "images" / key / "vmlinux",
        initrd=tmp_path / "images" / key / "initrd.img", root_disk=tmp_path / "images" / key / "root.img",
        client_key=tmp_path / "images" / key / "id_ed25519", host_public_key="ssh-ed25519 AAAAC3Nz host",
        kernel_release="6.1.0-57-amd64",
    )


def test_versions_are_resolved_once_until_the_apt_lists_change(tmp_path: Path, resolver: list[int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "deb.debian.org_dists_bookworm_main_binary-amd64_Packages.lz4").write_text("a")
    apt = Apt((), lists)
    images = tmp_path / "images"
    assert cached_versions(default_recipe(), images, apt) == VERSIONS
    assert cached_versions(default_recipe(), images, apt) == VERSIONS
    assert len(resolver) == 1
    (lists / "deb.debian.org_dists_bookworm_main_binary-amd64_Packages.lz4").write_text("ab")
    cached_versions(default_recipe(), images, apt)
    assert len(resolver) == 2


def test_apt_lists_signature_tracks_sizes(tmp_path: Path) -> None:
    (tmp_path / "p").write_text("1")
    first = apt_lists_signature(tmp_path)
    (tmp_path / "p").write_text("12")
    assert apt_lists_signature(tmp_path) != first
    assert apt_lists_signature(tmp_path / "absent") == apt_lists_signature(tmp_path / "absent-too")


def test_prune_keeps_the_current_image_and_builds_in_progress(tmp_path: Path) -> None:
    images = tmp_path / "images"
    for key in ("bookworm-new", "bookworm-old"):
        fake_image(images / key, key)
        (images / f"{key}.lock").write_text("")
    (images / ".bookworm-next.build-1").mkdir()
    assert prune_images("bookworm-new", tmp_path) == ["bookworm-old"]
    assert sorted(p.name for p in images.iterdir()) == [".bookworm-next.build-1", "bookworm-new",
                                                        "bookworm-new.lock"]


def test_root_shell_is_replaced_only_for_root(tmp_path: Path) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    image_module._set_root_shell(passwd, "/bin/sh")
    assert passwd.read_text() == (
        "root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    )


def test_installed_versions_from_dpkg_status() -> None:
    status = (
        "Package: python3\nStatus: install ok installed\nPriority: optional\nVersion: 3.11.2-1+b1\n"
        "Description: interactive\n high-level language\n\n"
        "Package: openssh-server\nStatus: deinstall ok config-files\nVersion: 1:9.2p1-2\n\n"
        "Package: procps\nStatus: install ok installed\nVersion: 2:4.0.2-3\n"
    )
    assert image_module.installed_versions(status, ["python3", "openssh-server", "kmod"]) == {
        "python3": "3.11.2-1+b1",
    }


def _stub_root(root: Path, work: Path) -> None:
    """The part of a bootstrapped tree _customize writes into, with a package's stale RSA host key."""
    for directory in ("etc/ssh", "root", "sbin", "usr/local"):
        (root / directory).mkdir(parents=True)
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc" / "ssh" / "ssh_host_rsa_key").write_text("stale")
    work.mkdir(exist_ok=True)
    (work / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3Nz client\n")


def test_the_guest_host_key_in_the_tree_is_private(tmp_path: Path) -> None:
    """Issue 26 item 10: the host private key the image carries is 0600 root, its public half 0644."""
    root, work = tmp_path / "rootfs", tmp_path
    _stub_root(root, work)
    image_module._customize(default_recipe(), root, work, "6.1.0-57-amd64")
    ssh = root / "etc" / "ssh"
    assert sorted(path.name for path in ssh.glob("ssh_host_*")) == ["ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"]
    assert stat.S_IMODE((ssh / "ssh_host_ed25519_key").stat().st_mode) == 0o600
    assert stat.S_IMODE((ssh / "ssh_host_ed25519_key.pub").stat().st_mode) == 0o644
    assert (work / "ssh_host_ed25519_key.pub").read_text() == (ssh / "ssh_host_ed25519_key.pub").read_text()


def test_a_root_disk_cached_world_readable_is_made_private(tmp_path: Path, resolver: list[int]) -> None:
    """Issue 26 item 10: an image built before the fix (root.img 0644) is made 0600 when it is next used."""
    key = cache_key(default_recipe(), VERSIONS)
    fake_image(tmp_path / "images" / key, key)
    disk = tmp_path / "images" / key / "root.img"
    disk.write_bytes(b"ext4")
    disk.chmod(0o644)
    ensure_image(tmp_path)
    assert stat.S_IMODE(disk.stat().st_mode) == 0o600


def test_the_root_disk_holding_the_host_key_is_not_world_readable(tmp_path: Path) -> None:
    """Issue 26 item 10: anyone who can read root.img can read every file in it (debugfs), the host key too."""
    root = tmp_path / "rootfs"
    _stub_root(root, tmp_path)
    image_module._customize(default_recipe(), root, tmp_path, "6.1.0-57-amd64")
    disk = tmp_path / "root.img"
    image_module.make_root_disk(replace(default_recipe(), root_disk_mib=16), root, disk)
    assert stat.S_IMODE(disk.stat().st_mode) == 0o600
    inside = subprocess.run(["debugfs", "-R", "stat /etc/ssh/ssh_host_ed25519_key", str(disk)], capture_output=True,
                            text=True, check=True).stdout
    assert "Mode:  0600" in inside


def test_a_refused_combination_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_module, "ensure_image", lambda *a, **k: pytest.fail("refused before any build"))
    with pytest.raises(SystemExit) as exited:
        main(["--runtime", "containerd"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("runtime=containerd needs init=systemd: nodeconf's "
                                                              "minimal init starts no service, so no containerd "
                                                              "would run on the node")
