"""Allocate and touch N MiB at a rate (MiB/s, 0 = at once), then hold it: `memhog.py N [RATE] [--hold S] [--exit]`.

With `--reclaim` it keeps its charges a few MiB below the tightest memory.max of its cgroup and ancestors by
writing its own cgroup's memory.reclaim (kernel >= 5.19) before each MiB, so pages go to swap by proactive reclaim
instead of racing the OOM killer; once swap is full (memory.swap.max reached, reclaim cannot swap) it prints
"memhog: swap full", waits for the `--wait-for` file if given, and allocates the rest without reclaim.

A workload program of nodeconf's pods, run on the node as
`python3 /opt/nodeconf/workloads/programs/memhog.py 256 64`. Standard library only, and only its cheapest modules
(no argparse, pathlib or enum): under TCG their imports took the program's start from ~0.26 s to ~0.46 s, and a
hog's check waits for its start (issue 31).
"""

from __future__ import annotations

import _signal  # signal's own C module: `signal` adds enums, whose import is a fifth of the start under TCG
import errno
import mmap
import os
import sys
import time

MIB = 1 << 20
CGROUP_ROOT = "/sys/fs/cgroup"
USAGE = "usage: memhog.py MIB [RATE] [--hold S] [--exit] [--reclaim] [--wait-for FILE]"
HEADROOM = 4 * MIB  # kept free below memory.max: charges there never reach the OOM killer
RECLAIM_ATTEMPTS = 50  # memory.reclaim answering EAGAIN this often in a row: nothing more can go to swap


def cgroup_dirs(self_cgroup: str | None = None) -> list[str]:
    """This process's cgroup v2 directory and its ancestors up to the root. /proc/self/cgroup ("0::/path") names it
    relative to the root of the process's cgroup namespace, which is the node's tree root unless a CRI runtime gave
    the container a namespace of its own (containerd does on cgroup v2 for a container that is not privileged,
    internal/cri/server/container_create.go), while the node's tree is still mounted at CGROUP_ROOT: then it is
    the directory whose cgroup.procs lists this process (cgroup.procs numbers tasks in the reader's pid namespace,
    0 for those outside it, kernel/cgroup/cgroup.c cgroup_procs_show)."""
    text = _read("/proc/self/cgroup") if self_cgroup is None else self_cgroup
    own = next(line[3:] for line in text.splitlines() if line.startswith("0::"))
    path = os.path.join(CGROUP_ROOT, own.strip("/")).rstrip("/")
    if not _lists_me(path):
        path = next((d for d, _, _ in os.walk(CGROUP_ROOT) if _lists_me(d)), path)
    dirs = [path]
    while path != CGROUP_ROOT:
        path = os.path.dirname(path)
        dirs.append(path)
    return dirs


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _lists_me(directory: str) -> bool:
    try:
        return str(os.getpid()) in _read(os.path.join(directory, "cgroup.procs")).split()
    except OSError:
        return False


def _number(directory: str, name: str) -> int | None:
    try:
        text = _read(os.path.join(directory, name)).split()[0]
    except (OSError, IndexError):
        return None
    return None if text == "max" else int(text)


def room(dirs: list[str], limit: str, usage: str) -> int | None:
    """The least `limit - usage` over the cgroups that set the limit; None when none does."""
    rooms = [lim - (_number(d, usage) or 0) for d in dirs if (lim := _number(d, limit)) is not None]
    return min(rooms) if rooms else None


def make_room(dirs: list[str], need: int) -> bool:
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
            write(os.path.join(dirs[0], "memory.reclaim"), str(need + HEADROOM - memory))
            refused = 0
        except OSError as err:
            if err.errno != errno.EAGAIN:
                raise
            refused += 1


class Args:
    """The command line: MIB [RATE] and the options of the module's docstring (exit 2 with USAGE when wrong)."""

    def __init__(self, argv: list[str]) -> None:
        self.hold, self.exit, self.reclaim, self.wait_for = 0.0, False, False, ""
        numbers: list[str] = []
        words = iter(argv)
        try:
            for word in words:
                if word in ("--exit", "--reclaim"):
                    setattr(self, word[2:], True)
                elif word == "--hold":
                    self.hold = float(next(words))
                elif word == "--wait-for":
                    self.wait_for = next(words)
                elif word.startswith("-"):
                    raise ValueError(f"unknown option {word}")
                else:
                    numbers.append(word)
            if not 1 <= len(numbers) <= 2:
                raise ValueError("MIB and at most a RATE")
            self.mib = int(numbers[0])
            self.rate = float(numbers[1]) if len(numbers) == 2 else 0.0
        except (ValueError, StopIteration) as err:
            print(f"{USAGE}\nmemhog: {str(err) or 'an option lacks its value'}", file=sys.stderr)
            raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> int:
    args = Args(sys.argv[1:] if argv is None else argv)
    page = mmap.PAGESIZE
    chunks: list[mmap.mmap] = []
    dirs = cgroup_dirs() if args.reclaim else []
    # without memory.reclaim the hog would race the OOM killer unnoticed
    if dirs and not os.path.exists(os.path.join(dirs[0], "memory.reclaim")):
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
    _signal.signal(_signal.SIGTERM, lambda *_: sys.exit(0))
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
