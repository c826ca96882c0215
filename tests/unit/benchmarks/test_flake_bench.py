"""benchmarks/flake_bench.py: JUnit outcomes per check and the failure table."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import flake_bench  # noqa: E402

JUNIT = """<?xml version="1.0"?><testsuites><testsuite name="nodeconf">
<testcase classname="suites.swap.test_pressure" name="test_a"/>
<testcase classname="suites.swap.test_pressure" name="test_b"><failure message="x"/></testcase>
<testcase classname="suites.swap.test_pressure" name="test_c"><skipped/></testcase>
<testcase classname="suites.swap.test_pressure" name="test_d"><error message="y"/></testcase>
</testsuite></testsuites>"""


def test_outcomes_per_check(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").write_text(JUNIT)
    assert flake_bench.outcomes(tmp_path / "junit.xml") == {
        "suites.swap.test_pressure::test_a": "passed", "suites.swap.test_pressure::test_b": "failed",
        "suites.swap.test_pressure::test_c": "skipped", "suites.swap.test_pressure::test_d": "error"}
    assert flake_bench.outcomes(tmp_path / "missing.xml") == {}


def test_table_counts_only_unstable_checks() -> None:
    runs = [flake_bench.Run(1, 60.0, {"a": "passed", "b": "failed"}), flake_bench.Run(0, 70.0, {"a": "passed",
                                                                                                "b": "passed"})]
    lines = flake_bench.table(runs)
    assert lines[1].split() == ["b", "1", "0", "1", "0"]
    assert not any(line.startswith("a ") for line in lines)
    assert "check failures+errors 1" in lines[-1] and "exit codes [1, 0]" in lines[-1]


def test_burners_are_stopped() -> None:
    burners = flake_bench.start_burners(2)
    flake_bench.stop_burners(burners)
    assert all(b.returncode is not None for b in burners)
