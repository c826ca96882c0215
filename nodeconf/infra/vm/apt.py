"""Which apt answers for a Debian release: the host's own lists when it has them, else a private state per release.

Source: MEASURED.md ("the host's apt knows only bookworm: resolving another release's versions needs its own apt
lists"); apt.conf(5) Dir::State::Lists, Dir::State::status, Dir::Etc::SourceList, Dir::Cache.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from infra.vm import paths
from infra.vm.cache_files import locked, write_atomically

HOST_LISTS = Path("/var/lib/apt/lists")
# Private lists older than this are refreshed before versions are resolved (the archive moves on daily).
MAX_LIST_AGE_SECONDS = 24 * 3600
STAMP = "updated"


class AptError(RuntimeError):
    """apt could not answer; the message is one line."""


@dataclass(frozen=True)
class Apt:
    """apt options for one release (empty for the host's own lists) and the lists directory they read."""

    options: tuple[str, ...]
    lists_dir: Path

    def argv(self, tool: str, *args: str) -> list[str]:
        """e.g. argv("apt-cache", "policy", "systemd") with this release's options."""
        return [tool, *self.options, *args]


def host_has_suite(suite: str, lists_dir: Path = HOST_LISTS) -> bool:
    """True when the host's apt lists include the suite itself (e.g. ..._dists_bookworm_InRelease)."""
    return any(lists_dir.glob(f"*_dists_{suite}_InRelease"))


def private_options(root: Path) -> tuple[str, ...]:
    """apt options that read and write only below root (an empty dpkg status: no host package is installed)."""
    return (
        "-o", f"Dir::State::Lists={root / 'lists'}", "-o", f"Dir::State::status={root / 'status'}",
        "-o", f"Dir::Etc::SourceList={root / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/nonexistent",
        "-o", f"Dir::Cache={root / 'cache'}", "-o", "APT::Sandbox::User=root",
    )


def apt_for(suite: str, sources: Sequence[str], cache_dir: Path | None = None,
            say: Callable[[str], None] = lambda _m: None, options: Sequence[str] = ()) -> Apt:
    """The host's apt when it knows the suite, else a private apt state under the cache, refreshed when stale;
    options (NAME=VALUE) are given to each private apt call."""
    if host_has_suite(suite):
        return Apt((), HOST_LISTS)
    root = paths.cache_root(cache_dir) / "apt" / suite
    extra = tuple(arg for option in options for arg in ("-o", option))
    apt = Apt(private_options(root) + extra, root / "lists")
    wanted = "".join(line.format(suite=suite) + "\n" for line in sources)
    (root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    with locked(root / "lock"):
        stamp = root / STAMP
        current = stamp.is_file() and stamp.read_text() == wanted
        if not current or time.time() - stamp.stat().st_mtime > MAX_LIST_AGE_SECONDS:
            say(f"apt-get update for {suite} (private lists in {root})")
            write_atomically(root / "sources.list", wanted.encode(), 0o644)
            (root / "status").touch()
            proc = subprocess.run(apt.argv("apt-get", "update", "-q"), capture_output=True, check=False)
            # A release file that cannot be fetched is only a warning (W: Failed to fetch) with exit status 0.
            stderr = proc.stderr.decode(errors="replace").strip().splitlines()
            errors = [line for line in stderr if line.startswith(("E:", "W: Failed"))]
            if proc.returncode != 0 or errors:
                tail = (errors or stderr or [f"exit status {proc.returncode}"])[-1]
                raise AptError(f"apt-get update for {suite} failed: {tail}")
            write_atomically(stamp, wanted.encode(), 0o644)
    return apt

