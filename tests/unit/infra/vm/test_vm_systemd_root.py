"""systemd as PID 1 in an image root (issue 13 item 2): units enabled, drop-ins placed, masks applied from the
recipe, generators masked but the kept ones. Runs on a canary root under a temp directory."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.infra.vm.systemd_root import install_systemd
from nodeconf.infra.vm.variant import SYSTEMD_GENERATORS, SYSTEMD_MASKED, Variant, recipe_for

RECIPE = recipe_for(Variant("trixie", "systemd"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A merged-/usr root with three generators; /lib links into /usr like Debian's."""
    root = tmp_path / "root"
    generators = root / "usr" / "lib" / "systemd" / "system-generators"
    generators.mkdir(parents=True)
    for name in ("systemd-fstab-generator", "systemd-getty-generator", "systemd-gpt-auto-generator"):
        (generators / name).write_text("")
    (root / "lib").symlink_to("usr/lib")
    (root / "etc").mkdir()
    (root / "var").mkdir()
    install_systemd(RECIPE, root)
    return root


def test_units_are_enabled_by_their_wanted_by(root: Path) -> None:
    system = root / "etc" / "systemd" / "system"
    for unit, target in (("nodeconf-network.service", "multi-user.target"),
                         ("nodeconf-ready.service", "multi-user.target"), ("nodeconf-swap.service", "swap.target"),
                         ("nodeconf.slice", "multi-user.target")):
        assert (system / unit).read_text() == RECIPE.scripts[f"systemd/system/{unit}"]
        assert os.readlink(system / f"{target}.wants" / unit) == f"../{unit}"
    assert os.readlink(system / "default.target") == "/lib/systemd/system/multi-user.target"
    assert os.readlink(system / "multi-user.target.wants" / "ssh.service") == "/lib/systemd/system/ssh.service"


def test_drop_ins_and_manager_config_are_placed(root: Path) -> None:
    assert "ExecStartPre=\n" in (root / "etc/systemd/system/ssh.service.d/nodeconf.conf").read_text()
    # No journald: service output goes to /dev/null instead of a failed journal connection per service.
    assert "DefaultStandardOutput=null\n" in (root / "etc/systemd/system.conf.d/nodeconf.conf").read_text()


def test_recipe_masks_are_links_to_dev_null(root: Path) -> None:
    system = root / "etc" / "systemd" / "system"
    assert {p.name for p in system.iterdir() if p.is_symlink() and os.readlink(p) == "/dev/null"} == \
        set(SYSTEMD_MASKED)
    for kept in ("dbus.service", "dbus.socket", "ssh.service", "systemd-tmpfiles-setup.service"):
        assert kept not in SYSTEMD_MASKED
    # journald and every socket that would start it.
    assert {"systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket",
            "systemd-journald-audit.socket"} <= set(SYSTEMD_MASKED)


def test_every_generator_but_the_kept_ones_is_masked(root: Path) -> None:
    masked = root / "etc" / "systemd" / "system-generators"
    assert sorted(p.name for p in masked.iterdir()) == ["systemd-getty-generator", "systemd-gpt-auto-generator"]
    assert all(os.readlink(p) == "/dev/null" for p in masked.iterdir())
    assert SYSTEMD_GENERATORS == ("systemd-fstab-generator",)


def test_a_lib_link_out_of_the_root_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "systemd" / "system-generators"
    outside.mkdir(parents=True)
    (outside / "host-generator").write_text("")
    root = tmp_path / "root"
    for directory in ("etc", "var", "usr"):
        (root / directory).mkdir(parents=True)
    (root / "lib").symlink_to(tmp_path / "outside")
    install_systemd(RECIPE, root)
    assert not (root / "etc" / "systemd" / "system-generators").exists()


def test_the_network_is_one_ip_process() -> None:
    unit = RECIPE.scripts["systemd/system/nodeconf-network.service"]
    assert [line for line in unit.splitlines() if line.startswith("ExecStart")] == ["ExecStart=ip -batch -"]
    assert [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("StandardInputText=")] == [
        "addr add 10.0.2.15/24 dev eth0", "link set eth0 up", "route add default via 10.0.2.2"]


def test_masks_enter_the_fingerprint() -> None:
    assert replace(RECIPE, masked_units=SYSTEMD_MASKED[1:]).fingerprint() != RECIPE.fingerprint()
    assert replace(RECIPE, kept_generators=()).fingerprint() != RECIPE.fingerprint()
