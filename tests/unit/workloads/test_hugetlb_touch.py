"""workloads/programs/hugetlb_touch.py: pages touched one by one in a child, and how the child stopped (a failed
call's errno, the signal that killed it, or nothing). The stops are real: a raised OSError, a real SIGBUS."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.workloads.workload_programs import PROGRAMS, load_program

PROGRAM = PROGRAMS / "hugetlb_touch.py"
touch = load_program("hugetlb_touch")


def _refuse_from(first: int) -> object:
    def step(index: int) -> object:
        if index >= first:
            raise OSError(errno.ENOMEM, "no room")
        return bytearray(1)
    return step


def _sigbus_from(first: int) -> object:
    def step(index: int) -> object:
        if index >= first:
            os.kill(os.getpid(), signal.SIGBUS)  # the default action ends the child, as a refused fault does
        return bytearray(1)
    return step


@pytest.mark.parametrize(("step", "expected"), [
    (lambda _: bytearray(1), (4, "")),
    (_refuse_from(2), (2, "ENOMEM")),
    (_sigbus_from(3), (3, "SIGBUS")),
], ids=["all-touched", "mmap-refused", "fault-killed"])
def test_the_child_reports_the_pages_before_the_stop(step: object, expected: tuple[int, str]) -> None:
    assert touch.touch_pages(4, step) == expected


@pytest.mark.parametrize("argv", [[], ["x"], ["0"], ["1", "2", "3"]])
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, str(PROGRAM), *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "usage: hugetlb_touch.py N [PAGE_KIB]" in done.stderr


def _free_huge_pages() -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("HugePages_Free:"):
            return int(line.split()[1])
    return None


@pytest.mark.skipif(_free_huge_pages() != 0, reason="needs a machine with no free huge page (mmap then fails)")
def test_without_free_huge_pages_the_first_mapping_fails() -> None:
    """hugetlbfs reserves a private mapping's pages at mmap time: with an empty pool mmap fails with ENOMEM."""
    done = subprocess.run([sys.executable, str(PROGRAM), "2"], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {"touched": 0, "end": "ENOMEM"}


def test_signal_names_are_those_of_the_signal_module() -> None:
    """SIGNAL_NAMES (built from _signal) names each signal as signal.Signals does."""
    assert {s.value: s.name for s in signal.Signals} == touch.SIGNAL_NAMES
