"""benchmarks/variant_matrix.py: each non-pass is grouped by what its mismatches are about, as the run's
summary.json causes say (from the checks' comparison tables), never from its message."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import variant_matrix  # noqa: E402

WEIGHT = 'value of cgroup "cpu.weight" for container'
SWAP = 'value of cgroup "memory.swap.max" for pod'
SUMMARY: dict[str, Any] = {  # the keys of summary.json (schema 2) the matrix reads
    "checks": [{"id": "s#a", "status": "failed", "message": "a: 2 of 9 differ", "first_mismatch": None},
               {"id": "s#b", "status": "failed", "message": 'value of cgroup "memory.max" for pod',
                "first_mismatch": None},
               {"id": "s#c", "status": "broken", "message": "ConnectionError: refused", "first_mismatch": None},
               {"id": "s#d", "status": "passed", "message": "", "first_mismatch": None}],
    "causes": [{"status": "failed", "about": WEIGHT, "count": 2, "example": "", "checks": ["s#a", "s#b"]},
               {"status": "failed", "about": SWAP, "count": 1, "example": "", "checks": ["s#a"]},
               {"status": "broken", "about": "ConnectionError: refused", "count": 1, "example": "",
                "checks": ["s#c"]}],
}


def test_each_check_is_about_what_the_summary_causes_name() -> None:
    assert variant_matrix.about_by_check(SUMMARY) == {"s#a": [WEIGHT, SWAP], "s#b": [WEIGHT],
                                                      "s#c": ["ConnectionError: refused"]}


def test_non_passes_are_grouped_by_what_they_are_about_not_by_their_message() -> None:
    about = variant_matrix.about_by_check(SUMMARY)
    non_pass = [{"id": c["id"], "status": c["status"], "why": c["message"], "about": about.get(c["id"], [])}
                for c in SUMMARY["checks"] if c["status"] != "passed"]
    assert variant_matrix.grouped(non_pass) == (
        f"2 × failed {WEIGHT} (e.g. s#a); 1 × broken ConnectionError: refused (e.g. s#c); "
        f"1 × failed {SWAP} (e.g. s#a)")
