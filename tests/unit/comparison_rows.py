"""A compared value as the suites attach it, for tests that write comparison tables (suites/toolkit/compare.py
ComparedValue's columns)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    pod: str
    container: str
    cgroup_path: str
    file: str
    expected: object
    actual: object
    rule: str
    ok: bool
