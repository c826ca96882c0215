"""Relay stdin/stdout to the agent's Unix socket: one long-lived process per driver connection (not per request).

`python3 -m nodeconf.enforcer.bridge --socket PATH`: standard library only, so its start compiles none of the agent's
modules (the launch writes no bytecode; under TCG compiling the agent's imports took seconds of the node's start,
benchmarks/results/suites-time-breakdown.md).
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import sys
from collections.abc import Sequence
from pathlib import Path


def relay(socket_path: Path) -> int:
    """Copy bytes both ways until either side closes; 1 with a message when the agent cannot be reached."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(socket_path))
    except OSError as err:
        print(f"nodeconf bridge: cannot reach the agent at {socket_path}: {err.strerror or err}", file=sys.stderr)
        return 1
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(stdin, selectors.EVENT_READ)
    selector.register(conn, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj == stdin:
                data = os.read(stdin, 65536)
                if not data:
                    conn.shutdown(socket.SHUT_WR)
                    selector.unregister(stdin)
                    continue
                conn.sendall(data)
            else:
                data = conn.recv(65536)
                if not data:
                    return 0
                view = memoryview(data)
                while view:
                    view = view[os.write(stdout, view):]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m nodeconf.enforcer.bridge",
                                     description="relay stdin/stdout to the agent's socket")
    parser.add_argument("--socket", type=Path, required=True)
    return relay(parser.parse_args(argv).socket)


if __name__ == "__main__":
    sys.exit(main())
