"""Which nodeconf judged the node: the installed version and the commit of the suite tree in use.

Source: a checkout asks git (`git rev-parse HEAD`); a wheel carries the commit setup.py recorded when it was built.
"""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

from nodeconf.resources import PACKAGE_DIR, Tree

COMMIT_FILE = PACKAGE_DIR / "build_commit.txt"
GIT_TIMEOUT = 10.0
DIRTY = "+modified"


def version() -> str:
    """The installed distribution's version, or "unknown" when nodeconf runs without being installed."""
    try:
        return metadata.version("nodeconf")
    except metadata.PackageNotFoundError:
        return "unknown"


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def checkout_commit(root: Path) -> str:
    """HEAD of the checkout at `root` with `+modified` when tracked files differ from it; "" without git."""
    if not (root / ".git").exists():
        return ""
    head = _git(root, "rev-parse", "HEAD")
    if not head:
        return ""
    changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    return f"{head}{DIRTY}" if changes else head


def recorded_commit() -> str:
    """The commit written into the wheel when it was built, "" when none was recorded."""
    try:
        return COMMIT_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def commit(tree: Tree | None) -> str:
    """The commit of the suite tree in use: a checkout's HEAD, else the commit recorded at build time."""
    if tree is not None and tree.kind == "checkout":
        return checkout_commit(tree.root)
    return recorded_commit()


def version_line(tree: Tree | None) -> str:
    """`nodeconf 0.1.0 (commit 34abfe3…)`, without the parenthesis when no commit is known."""
    found = commit(tree)
    return f"nodeconf {version()}" + (f" (commit {found})" if found else "")
