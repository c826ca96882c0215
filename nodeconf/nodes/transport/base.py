"""The transport interface: run argv on a node and get its status and output back (testinfra's layered command
API: `run`, `run_expect`, `check_output`), and the error family of transports.

Source: issue 12 (one transport interface, implementations beside it, STYLE.md "For the node side").
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodeconf.errors import InfrastructureError

DEFAULT_TIMEOUT = 60.0


class TransportError(InfrastructureError):
    """The node could not be reached, refused us, or a command did not finish in time."""


class CommandError(TransportError):
    """A command exited with a status the caller did not expect."""

    def __init__(self, result: CommandResult, expected: Iterable[int]) -> None:
        self.result = result
        codes = ", ".join(str(code) for code in expected)
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        last = f": {detail[-1]}" if detail else ""
        super().__init__(f"`{shlex.join(result.argv)}` exited {result.rc} (expected {codes}){last}")


@dataclass(frozen=True)
class CommandResult:
    """What one remote command gave back: exit status (-1 when a signal killed it) and raw output bytes."""

    argv: tuple[str, ...]
    rc: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        """Standard output as text."""
        return self.stdout.decode(errors="replace")

    @property
    def stderr_text(self) -> str:
        """Standard error as text."""
        return self.stderr.decode(errors="replace")

    def expect(self, codes: Iterable[int] = (0,)) -> CommandResult:
        """This result, or CommandError when the exit status is not one of codes."""
        __tracebackhide__ = True
        allowed = tuple(codes)
        if self.rc not in allowed:
            raise CommandError(self, allowed)
        return self

    def check(self) -> CommandResult:
        """This result, or CommandError when the command failed."""
        __tracebackhide__ = True
        return self.expect((0,))


class Transport(ABC):
    """testinfra's layered command API over one `run`: raw result, expected codes, strict output (STYLE.md)."""

    @abstractmethod
    def run(self, argv: Sequence[str], *, input: bytes | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> CommandResult:
        """Run argv and return its status and output; TransportError when it does not finish in time."""

    def run_expect(self, codes: Iterable[int], argv: Sequence[str], *, input: bytes | None = None,
                   timeout: float = DEFAULT_TIMEOUT) -> CommandResult:
        """Run argv and require its exit status to be one of codes."""
        __tracebackhide__ = True
        return self.run(argv, input=input, timeout=timeout).expect(codes)

    def check_output(self, argv: Sequence[str], *, input: bytes | None = None,
                     timeout: float = DEFAULT_TIMEOUT) -> str:
        """Run argv, require success, and return its standard output without the final newline."""
        __tracebackhide__ = True
        return self.run(argv, input=input, timeout=timeout).check().text.rstrip("\n")
