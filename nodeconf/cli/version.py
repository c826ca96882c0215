"""`nodeconf --version`: the version, the commit when known, and which suite tree a run would use."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from nodeconf.build_info import version_line
from nodeconf.errors import InputError
from nodeconf.resources import Tree, locate_tree


def version_text() -> str:
    """`nodeconf X (commit C)` and a `suites: PATH (checkout|installed)` line when a suite tree is found."""
    try:
        tree: Tree | None = locate_tree()
    except InputError:
        tree = None
    lines = [version_line(tree)]
    if tree is not None:
        lines.append(f"suites: {tree.suites} ({tree.kind})")
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """Print `version_text()` and exit 0; computed only when asked (it may run git)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and commit, then exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        print(version_text())
        parser.exit(0)
