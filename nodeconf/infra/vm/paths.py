"""Where images and running VMs live: $XDG_CACHE_HOME/nodeconf (default ~/.cache/nodeconf)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(cache_dir: Path | None = None) -> Path:
    """The nodeconf cache directory, absolute and without `..`: the argument, else $XDG_CACHE_HOME/nodeconf, else
    ~/.cache/nodeconf (so a VM directory is named the same way whatever the working directory)."""
    if cache_dir is not None:
        return Path(os.path.abspath(cache_dir))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return Path(os.path.abspath(base / "nodeconf"))


def images_dir(cache_dir: Path | None = None) -> Path:
    """The directory holding one sub-directory per built image key."""
    return cache_root(cache_dir) / "images"


def vms_dir(cache_dir: Path | None = None) -> Path:
    """The directory holding one sub-directory per running VM name."""
    return cache_root(cache_dir) / "vms"


def failed_boots_dir(cache_dir: Path | None = None) -> Path:
    """Where the whole console of a boot that never came up is kept (its VM directory is removed)."""
    return cache_root(cache_dir) / "failed-boots"
