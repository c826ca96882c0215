"""A transport to this machine with SshTransport's interface (`--node local` on a cgroup v2 host)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from nodeconf.nodes.transport.base import DEFAULT_TIMEOUT, CommandResult, Transport, TransportError


class PipeStream:
    """A local process's stdin/stdout as a Stream; a read waits at most `timeout` seconds (None: forever)."""

    def __init__(self, argv: Sequence[str], timeout: float | None = None) -> None:
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.timeout = timeout
        self.command = argv[0]
        self.buffer = bytearray()

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def readline(self, timeout: float | None = None) -> bytes:
        """One line of stdout (b"" at its end); TimeoutError when nothing arrives within `timeout` seconds
        (default: the stream's timeout)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        wait = self.timeout if timeout is None else timeout
        while b"\n" not in self.buffer:
            if not select.select([fd], [], [], wait)[0]:
                raise TimeoutError(f"no answer from `{self.command}` within {wait:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                line, self.buffer = bytes(self.buffer), bytearray()
                return line
            self.buffer += chunk
        end = self.buffer.index(b"\n") + 1
        line = bytes(self.buffer[:end])
        del self.buffer[:end]
        return line

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class LocalTransport(Transport):
    """Run argv lists and copy files on the local machine."""

    def run(self, argv: Sequence[str], *, input: bytes | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> CommandResult:
        if not argv:
            raise ValueError("run() needs a non-empty argv")
        try:
            done = subprocess.run(list(argv), input=input, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as err:
            raise TransportError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from err
        except OSError as err:
            return CommandResult(tuple(argv), 127, b"", str(err).encode())
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)

    def put(self, remote_path: str, data: bytes, mode: int = 0o644) -> None:
        path = Path(remote_path)
        path.write_bytes(data)
        path.chmod(mode)

    def put_tree(self, local_dir: Path, remote_dir: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not Path(local_dir).is_dir():
            raise ValueError(f"put_tree: {local_dir} is not a directory")
        shutil.copytree(local_dir, remote_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))

    def open_stream(self, argv: Sequence[str], *, timeout: float | None = None) -> PipeStream:
        return PipeStream(argv, timeout)

    def close(self) -> None:
        """Nothing to release."""
