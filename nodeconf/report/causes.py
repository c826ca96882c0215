"""Failed and broken checks grouped by cause: what each of their mismatches is about (`value of cgroup "cpu.weight"
for container`), so that 80 checks failing for one reason read as one line, with one example that names the reason.

Source: STYLE.md "Failure messages built for triage" (every mismatch on a line of its own:
`value of cgroup "F" for container "c" of pod "p" at PATH was "a"; expected "b" (rule: …)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# What a mismatch line is about: its start up to the kind of owner, e.g. `value of cgroup "cpu.weight" for
# container`, `value of measurement "…" for pod`, `value of cgroup "…" for the node` (suites/toolkit/compare.py
# ComparedValue.line), so that a container's value and a pod's are two causes.
ABOUT = re.compile(r'^((?:value of [a-z ]+ "[^"]+"|path|event "[^"]+")'
                   r'(?: for (?:the node|the pause container|container|pod)\b)?)')
_AT = re.compile(r" at \S+ was ")  # the cgroup path: long, and in every line of a cause
MAX_EXAMPLE = 400


@dataclass(frozen=True)
class Failure:
    """One failed or broken check: its id, status and whole message."""

    check: str
    status: str
    message: str


@dataclass(frozen=True)
class Cause:
    """Checks that share a cause: their status, what their mismatches are about, and one mismatch line."""

    status: str
    about: str
    checks: tuple[str, ...]
    example: str


def mismatch_lines(message: str) -> list[str]:
    """The message's mismatch lines, stripped, also one that follows the exception's name on the first line (a
    check with no comparison has none)."""
    lines = (raw.strip().removeprefix("AssertionError: ") for raw in message.splitlines())
    return [line for line in lines if ABOUT.match(line)]


def first_line(message: str) -> str:
    """The first non-blank line of a message, stripped ("" for none)."""
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def causes(failures: Iterable[Failure]) -> list[Cause]:
    """The failures grouped by status and by what each mismatch is about (a check counts once in each group its
    mismatches name); a check without mismatch lines is grouped by its first message line. Largest group first,
    each with the first mismatch line met, its cgroup path left out."""
    groups: dict[tuple[str, str], tuple[list[str], str]] = {}
    for failure in failures:
        lines = mismatch_lines(failure.message)
        found: dict[str, str] = {}
        for line in lines:
            match = ABOUT.match(line)
            if match:
                found.setdefault(match[1], line)
        if not lines:
            first = first_line(failure.message) or "(no message)"
            found[first[:MAX_EXAMPLE]] = first
        for about, line in found.items():
            checks, _ = groups.setdefault((failure.status, about), ([], _AT.sub(" was ", line)[:MAX_EXAMPLE]))
            checks.append(failure.check)
    return sorted((Cause(status, about, tuple(checks), example)
                   for (status, about), (checks, example) in groups.items()),
                  key=lambda cause: (-len(cause.checks), cause.status, cause.about))
