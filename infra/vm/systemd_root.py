"""systemd as PID 1 in an image's root: nodeconf's units enabled, Debian's ssh.service, boot-time savings masked.

Source: issue 13 item 2; systemd.unit(5) (wants/ symlinks, masking by a link to /dev/null), machine-id(5).
The unit texts are recipe scripts (fingerprinted); a change to the steps here is not: bump RECIPE_FORMAT with it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from infra.vm.recipe import Recipe

# Units a TCG node does not need: consoles to log in on, periodic jobs, and the journal's flush to disk.
SYSTEMD_MASKED = ("getty.target", "timers.target", "systemd-journal-flush.service", "e2scrub_reap.service")


def install_systemd(recipe: Recipe, root: Path) -> None:
    """systemd as PID 1: nodeconf's units enabled, sshd as Debian's ssh.service, what TCG boots need not masked."""
    etc = root / "etc" / "systemd" / "system"
    # A fixed machine id: otherwise every boot of the snapshot disk is a "first boot" (ConditionFirstBoot units).
    (root / "etc" / "machine-id").write_text(uuid.uuid4().hex + "\n")
    for name, text in recipe.scripts.items():
        if not name.startswith("systemd/"):
            continue
        unit = name.removeprefix("systemd/")
        if unit.startswith("journald-"):
            (root / "etc" / "systemd" / "journald.conf.d").mkdir(parents=True, exist_ok=True)
            (root / "etc" / "systemd" / "journald.conf.d" / f"{unit.removeprefix('journald-')}").write_text(text)
            continue
        (etc / unit).write_text(text)
        target = "swap.target" if unit == "nodeconf-swap.service" else "multi-user.target"
        link(etc / f"{target}.wants" / unit, f"../{unit}")
    link(etc / "multi-user.target.wants" / "ssh.service", "/lib/systemd/system/ssh.service")
    link(etc / "default.target", "/lib/systemd/system/multi-user.target")
    for masked in SYSTEMD_MASKED:
        link(etc / masked, "/dev/null")
    # /usr is up to date: without these stamps each boot of the snapshot disk reruns ldconfig, sysusers and the
    # catalog update (ConditionNeedsUpdate, systemd.unit(5); the stamp format is systemd-update-done's).
    stamp = f"TIMESTAMP_NSEC={(root / 'usr').stat().st_mtime_ns}\n"
    for directory in ("etc", "var"):
        (root / directory / ".updated").write_text(stamp)


def link(path: Path, target: str) -> None:
    """A symlink to target at path (replacing one already there), its directory created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)
