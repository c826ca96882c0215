"""`nodeconf explain`'s MANIFEST arguments as the files to read: a directory stands for its manifest files, `-` for
standard input, as `kubectl apply -f` takes them.

Source: kubectl `-f` (k8s.io/cli-runtime resource builder: a directory gives its files named .json, .yaml or .yml,
not recursively; `-` reads standard input).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nodeconf.errors import InputError
from nodeconf.loader import STDIN

EXTENSIONS = (".json", ".yaml", ".yml")


def manifest_paths(arguments: Sequence[str]) -> list[str]:
    """The files the arguments name, in order; a directory's files sorted by name. InputError for a directory
    without one, and for `-` given twice (standard input reads once)."""
    paths: list[str] = []
    for argument in arguments:
        directory = Path(argument)
        if argument == STDIN and STDIN in paths:
            raise InputError("standard input given twice", source=STDIN)
        if argument == STDIN or not directory.is_dir():
            paths.append(argument)
            continue
        found = sorted(str(child) for child in directory.iterdir() if child.suffix in EXTENSIONS and child.is_file())
        if not found:
            raise InputError(f"no {', '.join(EXTENSIONS)} file in this directory", source=argument)
        paths.extend(found)
    return paths
