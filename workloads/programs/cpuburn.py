"""Burn CPU in P processes (default 1) for S seconds (0 = forever): `cpuburn.py [S] [--procs P]`.

A workload program of nodeconf's pods (`python3 /opt/nodeconf/workloads/programs/cpuburn.py 30`).
Processes, not threads, so P of them really use P cpus. Standard library only.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time


def burn(seconds: float) -> None:
    deadline = time.monotonic() + seconds if seconds > 0 else float("inf")
    while time.monotonic() < deadline:
        for _ in range(10000):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("seconds", type=float, nargs="?", default=0.0, help="how long (0: forever)")
    parser.add_argument("--procs", type=int, default=1, help="busy processes")
    args = parser.parse_args(argv)
    workers = [multiprocessing.Process(target=burn, args=(args.seconds,)) for _ in range(args.procs - 1)]
    for worker in workers:
        worker.start()
    burn(args.seconds)
    for worker in workers:
        worker.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
