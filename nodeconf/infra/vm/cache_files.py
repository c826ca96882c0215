"""Writing and removing in the VM cache without trusting it: files are written to a fresh temporary file and renamed
into place (a symbolic link planted at the name is replaced, never followed), and a directory is removed only when
it is a real directory (lstat) one level inside the cache's vms/ directory, never the cache, vms/ or anything the
path only reaches through `..` or a link. Source: issue 26 item 7; open(2) O_NOFOLLOW/O_EXCL, rename(2).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from infra.vm import paths
from nodeconf.errors import InfrastructureError


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Put `data` at `path` with `mode`: a new file in the same directory (O_EXCL: a link there is not followed),
    renamed over whatever `path` was (a planted link is replaced, its target untouched)."""
    handle, scratch = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def open_for_writing(path: Path, mode: int = 0o600) -> int:
    """A write descriptor of `path`, emptied or made with `mode`; OSError (ELOOP) when it is a symbolic link."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def make_private(path: Path) -> None:
    """Make a file of this user 0600 (not through a link); a missing file, or one of another user, is left as it is."""
    with contextlib.suppress(OSError):
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.fchmod(handle, 0o600)
        finally:
            os.close(handle)


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (made if missing, never emptied); InfrastructureError when it cannot be
    opened, a symbolic link there included."""
    try:
        handle = os.open(lock_path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise InfrastructureError(f"cannot lock {lock_path}: {err.strerror} (a symbolic link there is refused)") \
            from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing releases the lock


def vm_directory_problem(directory: Path, cache_dir: Path | None = None) -> str:
    """Why `directory` is not a VM directory of this cache that nodeconf may remove ("" when it is one)."""
    vms = paths.vms_dir(cache_dir)
    if ".." in directory.parts or not directory.is_absolute() or directory.parent != vms:
        return f"{directory} is not a directory directly inside {vms}"
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return ""
    if not stat.S_ISDIR(info.st_mode):
        return f"{directory} is a symbolic link or not a directory"
    if directory.resolve().parent != vms.resolve():
        return f"{directory} leads out of {vms}"
    return ""


def remove_vm_directory(directory: Path, cache_dir: Path | None = None) -> str:
    """Remove one VM's directory of this cache (a missing one is fine); "" when done, else why it was left alone."""
    problem = vm_directory_problem(directory, cache_dir)
    if problem:
        return problem
    try:
        shutil.rmtree(directory)  # removes links inside the tree, never what they point at
    except FileNotFoundError:
        pass
    except OSError as err:
        return f"{directory}: {err.strerror}"
    return ""
