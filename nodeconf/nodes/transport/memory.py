"""An in-process transport for tests: argv runs against a table of Python callables, every call is recorded.

Source: issue 12 (an in-process double shipped beside the transports, httpx's MockTransport, STYLE.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from nodeconf.nodes.transport.base import DEFAULT_TIMEOUT, CommandResult, Transport

# What a program returns: its standard output (exit 0), or (exit status, stdout, stderr).
Answer = str | bytes | tuple[int, str | bytes, str | bytes]
Program = Callable[[Sequence[str], bytes | None], Answer]
NOT_FOUND = 127


def _bytes(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


class MemoryTransport(Transport):
    """Runs argv[0] from `programs` (argv and input in, an Answer out); an unknown program exits 127."""

    def __init__(self, programs: Mapping[str, Program]) -> None:
        self.programs = dict(programs)
        self.calls: list[tuple[str, ...]] = []
        self.closed = False

    def run(self, argv: Sequence[str], *, input: bytes | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> CommandResult:
        if not argv:
            raise ValueError("run() needs a non-empty argv")
        command = tuple(argv)
        self.calls.append(command)
        program = self.programs.get(command[0])
        if program is None:
            return CommandResult(command, NOT_FOUND, b"", f"{command[0]}: not found\n".encode())
        answer = program(command, input)
        if isinstance(answer, tuple):
            rc, stdout, stderr = answer
            return CommandResult(command, rc, _bytes(stdout), _bytes(stderr))
        return CommandResult(command, 0, _bytes(answer), b"")

    def close(self) -> None:
        self.closed = True
