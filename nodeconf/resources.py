"""Where the suite tree is (suites/, workloads/, the root conftest.py): a checkout, else the installed copy.

Inside a nodeconf checkout (the working directory or one of its parents) its own tree is used, so development is
unchanged; elsewhere the copy the wheel carries (nodeconf/bundled, written by setup.py); an editable install used
outside its checkout falls back to the checkout it was installed from.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nodeconf.errors import InputError

PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLED_DIR = PACKAGE_DIR / "bundled"
SOURCE_DIR = PACKAGE_DIR.parent  # a checkout's root (or site-packages when installed)
PROJECT_NAME = "nodeconf"

TreeKind = Literal["checkout", "installed"]


@dataclass(frozen=True)
class Tree:
    """A suite tree: its root (the pytest rootdir) and whether it is a checkout or the installed copy."""

    root: Path
    kind: TreeKind

    @property
    def suites(self) -> Path:
        return self.root / "suites"

    @property
    def workloads(self) -> Path:
        return self.root / "workloads"

    @property
    def programs(self) -> Path:
        """The workload programs every node driver copies to the node."""
        return self.workloads / "programs"


def is_checkout(directory: Path) -> bool:
    """A nodeconf source tree: suites/, the root conftest.py and a pyproject.toml naming the nodeconf project."""
    pyproject = directory / "pyproject.toml"
    if not ((directory / "suites").is_dir() and (directory / "conftest.py").is_file() and pyproject.is_file()):
        return False
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(project, dict) and project.get("name") == PROJECT_NAME


def locate_tree(cwd: Path | None = None) -> Tree:
    """The checkout around `cwd` (default: the working directory), else the installed tree, else the source
    checkout of an editable install; an InputError when there is none."""
    start = (cwd or Path.cwd()).resolve()
    for directory in (start, *start.parents):
        if is_checkout(directory):
            return Tree(directory, "checkout")
    if (BUNDLED_DIR / "suites").is_dir():
        return Tree(BUNDLED_DIR, "installed")
    if is_checkout(PACKAGE_DIR.parent):
        return Tree(PACKAGE_DIR.parent, "checkout")
    raise InputError("no nodeconf suites: not inside a nodeconf checkout, and this nodeconf was installed without "
                     "them (reinstall it from a wheel)", source=str(start))
