"""The in-process transport double speaks the transports' layered command API (run, run_expect, check_output)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from nodeconf.nodes.transport.base import CommandError
from nodeconf.nodes.transport.memory import NOT_FOUND, MemoryTransport


def cat(argv: Sequence[str], data: bytes | None) -> bytes:
    return data or b""


def fail(argv: Sequence[str], data: bytes | None) -> tuple[int, str, str]:
    return 3, "", f"{argv[0]}: refused {' '.join(argv[1:])}\n"


@pytest.fixture
def transport() -> MemoryTransport:
    return MemoryTransport({"echo": lambda argv, _: " ".join(argv[1:]) + "\n", "cat": cat, "fail": fail})


def test_output_and_input_round_trip(transport: MemoryTransport) -> None:
    assert transport.check_output(["echo", "a b", "c"]) == "a b c"
    assert transport.run(["cat"], input=b"\x00bytes").stdout == b"\x00bytes"
    assert transport.calls == [("echo", "a b", "c"), ("cat",)]


def test_exit_status_and_expected_codes(transport: MemoryTransport) -> None:
    result = transport.run(["fail", "x"])
    assert (result.rc, result.stderr_text) == (3, "fail: refused x\n")
    assert transport.run_expect([3], ["fail"]).rc == 3
    with pytest.raises(CommandError, match=r"`fail y` exited 3 \(expected 0\): fail: refused y"):
        transport.check_output(["fail", "y"])


def test_an_unknown_program_is_not_found(transport: MemoryTransport) -> None:
    assert transport.run(["rm", "-rf", "/"]).rc == NOT_FOUND


def test_empty_argv_is_rejected(transport: MemoryTransport) -> None:
    with pytest.raises(ValueError, match="non-empty argv"):
        transport.run([])
