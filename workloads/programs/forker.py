"""Fork up to N children that wait, stop at the first failed fork, and print what happened as JSON:
`forker.py N` → {"forked": k, "error": "EAGAIN" | ""}. The children exit when it does (end of their pipe).

A workload program of nodeconf's pods (the pids check: fork beyond pids.max fails with EAGAIN), run on the node as
`python3 /opt/nodeconf/workloads/programs/forker.py 64`. Standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import sys


def fork_until_refused(limit: int) -> tuple[list[int], str]:
    """Fork waiting children until `limit` or the first refusal; the children and the refusal's errno name."""
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
    os.close(write_end)
    return children, refused


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: forker.py N", file=sys.stderr)
        return 2
    children, refused = fork_until_refused(int(argv[0]))
    for pid in children:
        os.waitpid(pid, 0)
    print(json.dumps({"forked": len(children), "error": refused}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
