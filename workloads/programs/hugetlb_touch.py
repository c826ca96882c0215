"""Map and touch huge pages one at a time, in a child, and print how far it got as JSON:
`hugetlb_touch.py N [PAGE_KIB]` → {"touched": k, "end": "SIGBUS" | "ENOMEM" | ... | ""} ("" when all N were touched).

A workload program of nodeconf's pods (the hugetlb check: pages beyond hugetlb.<size>.max fail), run on the node as
`python3 /opt/nodeconf/workloads/programs/hugetlb_touch.py 3`. Each page is a private anonymous MAP_HUGETLB
mapping written once, so it is faulted in (and charged) before the next is tried. A charge beyond the cgroup's
limit ends the child with SIGBUS at the fault, or fails mmap with ENOMEM where a reservation limit applies; either
way the child stops there and the parent reports the pages touched before. Standard library only.
"""

from __future__ import annotations

import _signal  # signal's C module: `signal` adds enums, slow to import under TCG (memhog.py)
import errno
import mmap
import os
import resource
import sys
from collections.abc import Callable

# MAP_HUGETLB from the kernel's uapi mman-common.h (x86, arm64 and the generic value); Python's mmap module does not
# export it before 3.13 on every build.
MAP_HUGETLB = getattr(mmap, "MAP_HUGETLB", 0x40000)
PAGE_KIB = 2048
# A signal's name as signal.Signals gives it (the aliases SIGCLD, SIGIOT and SIGPOLL left out).
SIGNAL_NAMES = {getattr(_signal, n): n for n in dir(_signal)
                if n.startswith("SIG") and not n.startswith("SIG_") and n not in ("SIGCLD", "SIGIOT", "SIGPOLL")}


def map_and_touch(size: int) -> mmap.mmap:
    """One private anonymous huge page mapping of `size` bytes, its first byte written (the fault that charges it)."""
    page = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_HUGETLB)
    page[0] = 1
    return page


def touch_pages(count: int, touch: Callable[[int], object]) -> tuple[int, str]:
    """Run `touch(i)` for i in 0..count-1 in a child that keeps every page; (pages touched, how it ended): the
    errno name of a failed call, the signal name that killed the child, or "" when all were touched."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one byte per page touched, then "E<errno>" when a call fails
        os.close(read_end)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a SIGBUS must leave no core file behind
        _signal.signal(_signal.SIGBUS, _signal.SIG_DFL)  # and end the child at once (no faulthandler dump)
        kept = []
        for index in range(count):
            try:
                kept.append(touch(index))
            except OSError as err:
                os.write(write_end, b"E" + errno.errorcode.get(err.errno or 0, str(err.errno)).encode())
                os._exit(0)
            os.write(write_end, b".")
        os._exit(0)
    os.close(write_end)
    report = b""
    while chunk := os.read(read_end, 4096):
        report += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    touched = report.count(b".")
    if b"E" in report:
        return touched, report.split(b"E", 1)[1].decode()
    if os.WIFSIGNALED(status):
        return touched, SIGNAL_NAMES.get(os.WTERMSIG(status), str(os.WTERMSIG(status)))
    return touched, ""


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2 or not all(a.isdigit() and int(a) > 0 for a in argv):
        print("usage: hugetlb_touch.py N [PAGE_KIB]", file=sys.stderr)
        return 2
    size = int(argv[1] if len(argv) == 2 else PAGE_KIB) * 1024
    touched, end = touch_pages(int(argv[0]), lambda _: map_and_touch(size))
    # formatted here: json's import (re, enum) doubled the start under TCG (memhog.py); the names need no escaping
    print(f'{{"touched": {touched}, "end": "{end}"}}')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
