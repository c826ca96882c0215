"""The Allure results directory of `nodeconf run` (`--reports DIR` → DIR/allure-results) and the mark that lets a
later run remove it: only a directory an earlier run made is ever removed.

A run makes the directory itself and writes MARK_FILE into it naming the directory's device and inode; the mark is
valid only in that very directory (a copied or re-created one has another inode), which must be a real directory
(not a symbolic link) owned by this user. An existing results directory without a valid mark is refused, never
removed. Source: issue 26 item 11.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from nodeconf.errors import InputError

MARK_FILE = ".nodeconf-results"
MARK_LIMIT = 200


def _mark_text(info: os.stat_result) -> str:
    return f"nodeconf run results directory: device {info.st_dev} inode {info.st_ino}\n"


def made_by_nodeconf(directory: Path) -> bool:
    """True when `directory` is a real directory of this user holding the mark a run wrote when it made it."""
    try:
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return False
        handle = os.open(directory / MARK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(handle, "rb") as mark:
        return stat.S_ISREG(os.fstat(mark.fileno()).st_mode) and mark.read(MARK_LIMIT) == _mark_text(info).encode()


def claim_results_dir(directory: Path) -> None:
    """Leave `directory` empty but for a fresh mark: an earlier run's directory is removed first. InputError, with
    nothing removed, when it exists and no nodeconf run made it (a user's, another tool's, a symbolic link)."""
    if os.path.lexists(directory):
        if not made_by_nodeconf(directory):
            raise InputError(f"{directory} exists and no nodeconf run made it (no valid {MARK_FILE} inside): not "
                             "removed; move it away or choose another --reports", field="--reports")
        try:
            shutil.rmtree(directory)
        except OSError as error:
            raise InputError(f"cannot remove the earlier run's {directory}: {error.strerror}",
                             field="--reports") from None
    try:
        directory.mkdir(parents=True)
        handle = os.open(directory / MARK_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(handle, "w") as mark:
            mark.write(_mark_text(os.lstat(directory)))
    except OSError as error:
        raise InputError(f"cannot make {directory}: {error.strerror}", field="--reports") from None
