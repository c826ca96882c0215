"""systemd as PID 1 in an image's root: nodeconf's units enabled, Debian's ssh.service, what a node VM does not
need masked.

Source: issue 13 item 2; systemd.unit(5) (wants/ symlinks, masking by a link to /dev/null), systemd.generator(7)
(a generator is disabled by a link to /dev/null of its name in /etc/systemd/system-generators), machine-id(5).
The unit texts, masked units and kept generators are recipe fields (fingerprinted); a change to the steps here
is not: bump RECIPE_FORMAT with it.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from infra.vm.recipe import Recipe

GENERATOR_DIRS = ("usr/lib/systemd/system-generators", "lib/systemd/system-generators")
WANTED_BY = re.compile(r"^WantedBy=(\S+)\s*$", re.MULTILINE)


def install_systemd(recipe: Recipe, root: Path) -> None:
    """systemd as PID 1: nodeconf's units enabled, sshd as Debian's ssh.service, the recipe's masks applied."""
    config = root / "etc" / "systemd"
    etc = config / "system"
    # A fixed machine id: otherwise every boot of the snapshot disk is a "first boot" (ConditionFirstBoot units).
    (root / "etc" / "machine-id").write_text(uuid.uuid4().hex + "\n")
    for name, text in recipe.scripts.items():
        if not name.startswith("systemd/"):
            continue
        place = config / name.removeprefix("systemd/")
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_text(text)
        if place.parent == etc:
            for target in WANTED_BY.findall(text):
                link(etc / f"{target}.wants" / place.name, f"../{place.name}")
    link(etc / "multi-user.target.wants" / "ssh.service", "/lib/systemd/system/ssh.service")
    link(etc / "default.target", "/lib/systemd/system/multi-user.target")
    for masked in recipe.masked_units:
        link(etc / masked, "/dev/null")
    for generator in shipped_generators(root):
        if generator not in recipe.kept_generators:
            link(config / "system-generators" / generator, "/dev/null")
    # /usr is up to date: without these stamps each boot of the snapshot disk reruns ldconfig, sysusers and the
    # catalog update (ConditionNeedsUpdate, systemd.unit(5); the stamp format is systemd-update-done's).
    stamp = f"TIMESTAMP_NSEC={(root / 'usr').stat().st_mtime_ns}\n"
    for directory in ("etc", "var"):
        (root / directory / ".updated").write_text(stamp)


def shipped_generators(root: Path) -> list[str]:
    """The names of the system generators the root's packages ship (/lib is read only when it is not merged into
    /usr: a link is never followed out of the root)."""
    names: set[str] = set()
    for directory in GENERATOR_DIRS:
        top = root / directory.split("/")[0]
        if (root / directory).is_dir() and not top.is_symlink():
            names.update(entry.name for entry in (root / directory).iterdir())
    return sorted(names)


def link(path: Path, target: str) -> None:
    """A symlink to target at path (replacing one already there), its directory created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)
