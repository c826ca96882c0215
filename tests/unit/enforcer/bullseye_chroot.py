"""A Debian bullseye userland to run the agent in without a VM: the cached bullseye node image, mounted read-only.

The image's root disk is loop-mounted read-only under a temporary directory; /proc, a tmpfs on /tmp and the host
work directory (bind-mounted at its own path) are mounted inside it, and everything is unmounted on the way out.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from nodeconf.infra.vm.paths import images_dir


def bullseye_image() -> Path | None:
    """The root disk of the newest cached bullseye node image, if one was built here."""
    disks = [d / "root.img" for d in images_dir().glob("bullseye-*") if (d / "manifest.json").is_file()]
    disks = [d for d in disks if d.is_file()]
    return max(disks, key=lambda d: d.stat().st_mtime) if disks else None


def image_python(disk: Path) -> str:
    """The python3 package version the image holds (its manifest)."""
    installed = json.loads((disk.parent / "manifest.json").read_text())["installed"]
    return str(installed["python3"])


def why_not() -> str | None:
    """Why the bullseye chroot cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "mounting the bullseye image needs root"
    if not all(shutil.which(tool) for tool in ("mount", "umount", "chroot")):
        return "mount, umount or chroot missing"
    if bullseye_image() is None:
        return (f"no bullseye node image in {images_dir()} "
                "(python -m nodeconf.infra.vm.image --debian bullseye builds one)")
    return None


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def bullseye_root(disk: Path, mountpoint: Path, work: Path) -> Iterator[Path]:
    """`disk` mounted read-only at `mountpoint`, with /proc, a tmpfs /tmp and `work` (a directory under /tmp,
    bind-mounted at the same path) inside; every mount is undone on the way out, also on failure."""
    if not work.is_relative_to("/tmp"):
        raise ValueError(f"{work}: the work directory must be under /tmp (the chroot's tmpfs)")
    mounted: list[Path] = []
    try:
        mountpoint.mkdir(exist_ok=True)
        _run("mount", "-t", "ext4", "-o", "ro,loop,noload", str(disk), str(mountpoint))
        mounted.append(mountpoint)
        _run("mount", "-t", "proc", "proc", str(mountpoint / "proc"))
        mounted.append(mountpoint / "proc")
        _run("mount", "-t", "tmpfs", "-o", "size=64m,mode=1777", "tmpfs", str(mountpoint / "tmp"))
        mounted.append(mountpoint / "tmp")
        inside = mountpoint / work.relative_to("/")
        inside.mkdir(parents=True)
        _run("mount", "--bind", str(work), str(inside))
        mounted.append(inside)
        yield mountpoint
    finally:
        for target in reversed(mounted):
            if subprocess.run(["umount", str(target)], capture_output=True, timeout=60, check=False).returncode:
                subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=60, check=False)
