"""Fork up to N children that wait, stop at the first failed fork, and print what happened as JSON:
`forker.py N` → {"forked": k, "error": "EAGAIN" | ""}. The children exit when it does (end of their pipe).
With `--hold` it prints the same line once all are forked, then keeps itself and its children alive until killed
(the pid-pressure check's fork bomb: its processes stay in the pod's cgroup until the node evicts the pod).

A workload program of nodeconf's pods (the pids check: fork beyond pids.max fails with EAGAIN), run on the node as
`python3 /opt/nodeconf/workloads/programs/forker.py 64`. Standard library only.
"""

from __future__ import annotations

import _signal  # signal's C module: `signal` adds enums, slow to import under TCG (memhog.py)
import errno
import os
import sys


def fork_until_refused(limit: int) -> tuple[list[int], str, int]:
    """Fork waiting children until `limit` or the first refusal; the children, the refusal's errno name, and the
    pipe end whose closing lets them exit."""
    read_end, write_end = os.pipe()
    children: list[int] = []
    refused = ""
    while len(children) < limit:
        try:
            pid = os.fork()
        except OSError as err:
            refused = errno.errorcode.get(err.errno or 0, str(err.errno))
            break
        if pid == 0:
            os.close(write_end)
            os.read(read_end, 1)  # returns once the parent's end closes
            os._exit(0)
        children.append(pid)
    os.close(read_end)
    return children, refused, write_end


def report(forked: int, error: str) -> str:
    """The JSON line, formatted here: json's import (re, enum) doubled the start under TCG (memhog.py)."""
    return f'{{"forked": {forked}, "error": "{error}"}}'  # an errno name needs no escaping


def main(argv: list[str]) -> int:
    hold = argv[1:] == ["--hold"]
    if len(argv) not in (1, 2) or not argv[0].isdigit() or (len(argv) == 2 and not hold):
        print("usage: forker.py N [--hold]", file=sys.stderr)
        return 2
    children, refused, write_end = fork_until_refused(int(argv[0]))
    if hold:
        print(report(len(children), refused), flush=True)
        while True:
            _signal.pause()
    os.close(write_end)
    for pid in children:
        os.waitpid(pid, 0)
    print(report(len(children), refused))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
