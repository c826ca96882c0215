"""Allocate and touch N MiB at a rate (MiB/s, 0 = at once), then hold it: `memhog.py N [RATE] [--hold S] [--exit]`.

A workload program of nodeconf's pods, run on the node as
`python3 /opt/nodeconf/workloads/programs/memhog.py 256 64`. Standard library only.
"""

from __future__ import annotations

import argparse
import mmap
import signal
import sys
import time

MIB = 1 << 20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mib", type=int, help="MiB to allocate and touch")
    parser.add_argument("rate", type=float, nargs="?", default=0.0, help="MiB per second (0: as fast as possible)")
    parser.add_argument("--hold", type=float, default=0.0, help="free the memory after S seconds (0: never)")
    parser.add_argument("--exit", action="store_true", help="exit 0 once allocated instead of holding")
    args = parser.parse_args(argv)
    page = mmap.PAGESIZE
    chunks: list[mmap.mmap] = []
    started = time.monotonic()
    for i in range(args.mib):
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
