"""A compared value as the suites attach it, for tests that write comparison tables (suites/toolkit/compare.py
ComparedValue's columns), and a check's recorded Allure result carrying its table as allure-python-commons
writes one (`*-result.json` naming a `*-attachment.csv` of type text/csv)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nodeconf.report.comparison import COMPARISON_MIME, comparison_csv


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


def record_failure(results: Path, uuid: str, message: str, rows: Sequence[Row], status: str = "failed") -> None:
    """Write one check's result with `message` and its comparison table into the results directory `results`."""
    source = f"{uuid}-attachment.csv"
    (results / source).write_text(comparison_csv(rows), encoding="utf-8")
    (results / f"{uuid}-result.json").write_text(json.dumps({
        "uuid": uuid, "historyId": uuid, "name": f"test_{uuid}", "fullName": f"suites.s.test_m#test_{uuid}",
        "status": status, "statusDetails": {"message": message},
        "attachments": [{"name": "expected vs actual: pod", "source": source, "type": COMPARISON_MIME}],
    }), encoding="utf-8")
