"""One results archive of a run, `nodeconf-results.tar.gz`: JUnit, the HTML reports, summary.json and the Allure
results under one top directory, so that a run's evidence travels as one file (as Sonobuoy's `retrieve` tarball
does).

Only regular files and directories are taken (a link or a device in the reports directory is left out, never
followed); owners are not recorded. The archive is written beside its name and renamed into place, so a reader never
sees half of one.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterable
from pathlib import Path

from nodeconf.report.allure_json import ReportError, shown

ARCHIVE_FILE = "nodeconf-results.tar.gz"
TOP = "nodeconf-results"


def _plain(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (member.isfile() or member.isdir()):
        return None
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def write_archive(reports: Path, names: Iterable[str]) -> Path:
    """Write `reports/nodeconf-results.tar.gz` holding each of `names` inside `reports` that exists (a directory
    with what it holds), as `nodeconf-results/NAME`; ReportError when it cannot be written."""
    target = reports / ARCHIVE_FILE
    partial = reports / f".{ARCHIVE_FILE}.partial"
    try:
        with tarfile.open(partial, "w:gz") as archive:
            for name in names:
                path = reports / name
                if path.is_symlink() or not path.exists():
                    continue
                archive.add(path, arcname=f"{TOP}/{name}", recursive=True, filter=_plain)
        os.replace(partial, target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise ReportError(f"{shown(target)}: cannot write the results archive "
                          f"({error.strerror or type(error).__name__})") from None
    return target
