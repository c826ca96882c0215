"""Allocate and touch N MiB at a rate (MiB/s, 0 = at once), then hold it: `memhog.py N [RATE] [--hold S] [--exit]`.

With `--reclaim` it keeps its charges a few MiB below the tightest memory.max of its cgroup and ancestors by
writing its own cgroup's memory.reclaim (kernel >= 5.19) before each MiB, so pages go to swap by proactive reclaim
instead of racing the OOM killer; once swap is full (memory.swap.max reached, reclaim cannot swap) it prints
"memhog: swap full", waits for the `--wait-for` file if given, and allocates the rest without reclaim.

A workload program of nodeconf's pods, run on the node as
`python3 /opt/nodeconf/workloads/programs/memhog.py 256 64`. Standard library only.
"""

from __future__ import annotations

import argparse
import errno
import mmap
import os
import signal
import sys
import time
from pathlib import Path

MIB = 1 << 20
CGROUP_ROOT = Path("/sys/fs/cgroup")
HEADROOM = 4 * MIB  # kept free below memory.max: charges there never reach the OOM killer
RECLAIM_ATTEMPTS = 50  # memory.reclaim answering EAGAIN this often in a row: nothing more can go to swap


def cgroup_dirs(self_cgroup: str | None = None) -> list[Path]:
    """This process's cgroup v2 directory and its ancestors up to the root. /proc/self/cgroup ("0::/path") names it
    relative to the root of the process's cgroup namespace, which is the node's tree root unless a CRI runtime gave
    the container a namespace of its own (containerd does on cgroup v2 for a container that is not privileged,
    internal/cri/server/container_create.go), while the node's tree is still mounted at CGROUP_ROOT: then it is
    the directory whose cgroup.procs lists this process (cgroup.procs numbers tasks in the reader's pid namespace,
    0 for those outside it, kernel/cgroup/cgroup.c cgroup_procs_show)."""
    text = Path("/proc/self/cgroup").read_text() if self_cgroup is None else self_cgroup
    own = next(line[3:] for line in text.splitlines() if line.startswith("0::"))
    path = CGROUP_ROOT / own.lstrip("/")
    if not _lists_me(path):
        path = next((Path(d) for d, _, _ in os.walk(CGROUP_ROOT) if _lists_me(Path(d))), path)
    dirs = [path]
    while path != CGROUP_ROOT:
        path = path.parent
        dirs.append(path)
    return dirs


def _lists_me(directory: Path) -> bool:
    try:
        return str(os.getpid()) in (directory / "cgroup.procs").read_text().split()
    except OSError:
        return False


def _number(directory: Path, name: str) -> int | None:
    try:
        text = (directory / name).read_text().split()[0]
    except (OSError, IndexError):
        return None
    return None if text == "max" else int(text)


def room(dirs: list[Path], limit: str, usage: str) -> int | None:
    """The least `limit - usage` over the cgroups that set the limit; None when none does."""
    rooms = [lim - (_number(d, usage) or 0) for d in dirs if (lim := _number(d, limit)) is not None]
    return min(rooms) if rooms else None


def make_room(dirs: list[Path], need: int) -> bool:
    """Reclaim until `need` bytes plus HEADROOM fit below memory.max; False once swap can take no more."""
    refused = 0
    while True:
        memory = room(dirs, "memory.max", "memory.current")
        if memory is None or memory >= need + HEADROOM:
            return True
        swap = room(dirs, "memory.swap.max", "memory.swap.current")
        if (swap is not None and swap <= 0) or refused >= RECLAIM_ATTEMPTS:
            return False
        try:
            (dirs[0] / "memory.reclaim").write_text(str(need + HEADROOM - memory))
            refused = 0
        except OSError as err:
            if err.errno != errno.EAGAIN:
                raise
            refused += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mib", type=int, help="MiB to allocate and touch")
    parser.add_argument("rate", type=float, nargs="?", default=0.0, help="MiB per second (0: as fast as possible)")
    parser.add_argument("--hold", type=float, default=0.0, help="free the memory after S seconds (0: never)")
    parser.add_argument("--exit", action="store_true", help="exit 0 once allocated instead of holding")
    parser.add_argument("--reclaim", action="store_true", help="push pages to swap with memory.reclaim first")
    parser.add_argument("--wait-for", metavar="FILE", help="with --reclaim: once swap is full, wait for FILE")
    args = parser.parse_args(argv)
    page = mmap.PAGESIZE
    chunks: list[mmap.mmap] = []
    dirs = cgroup_dirs() if args.reclaim else []
    if dirs and not (dirs[0] / "memory.reclaim").exists():  # else it would race the OOM killer unnoticed
        print(f"memhog: --reclaim needs {dirs[0]}/memory.reclaim, which this process cannot see", file=sys.stderr)
        return 2
    started = time.monotonic()
    for i in range(args.mib):
        if dirs and not make_room(dirs, MIB):
            print("memhog: swap full", flush=True)
            dirs = []
            while args.wait_for and not os.path.exists(args.wait_for):
                time.sleep(0.02)
            if args.wait_for:
                os.unlink(args.wait_for)
        chunk = mmap.mmap(-1, MIB)
        for offset in range(0, MIB, page):
            chunk[offset] = 1
        chunks.append(chunk)
        if args.rate > 0:
            time.sleep(max(0.0, started + (i + 1) / args.rate - time.monotonic()))
    print(f"memhog: holding {args.mib} MiB", flush=True)
    if args.exit:
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.hold > 0:
        time.sleep(args.hold)
        for chunk in chunks:
            chunk.close()
        chunks.clear()
        print("memhog: released", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
