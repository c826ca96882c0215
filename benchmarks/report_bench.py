"""Report generation benchmark: the nodeconf HTML and Allure 3's single file for a synthetic results directory.

Run: .venv/bin/python benchmarks/report_bench.py [--checks 200] [--repeats 5] [--json]
The results directory (N checks over 3 sources x 6 areas, each with an 8-row expected-vs-actual table and a
manifest; 1 in 10 failed, 1 in 20 broken, 1 in 10 skipped) is written to a scratch directory and removed.
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nodeconf.report.allure_html import allure_cli, write_allure_html
from nodeconf.report.comparison import COMPARISON_COLUMNS
from nodeconf.report.html import write_html
from nodeconf.report.results import load_results

SOURCES = ("KEP-5359", "Memory QoS v1.36", "Requests/limits article")
AREAS = ("swap", "memory_qos", "resources", "resize", "eviction", "admission")


def _status(index: int) -> str:
    if index % 10 == 0:
        return "failed"
    if index % 20 == 5:
        return "broken"
    if index % 10 == 3:
        return "skipped"
    return "passed"


def write_results(directory: Path, checks: int) -> None:
    """Write `checks` Allure results with attachments and an environment.properties file."""
    header = ",".join(COMPARISON_COLUMNS)
    for index in range(checks):
        status = _status(index)
        rows = "".join(
            f"pod{index},c{row},kubepods.slice/pod{index},memory.max,{row * 4096},"
            f"{row * 4096 + (4096 if status == 'failed' and row == 0 else 0)},rule {row},"
            f"{'no' if status == 'failed' and row == 0 else 'yes'}\n"
            for row in range(8)
        )
        (directory / f"c{index}-attachment.csv").write_text(f"{header}\n{rows}", encoding="utf-8")
        (directory / f"m{index}-attachment.yaml").write_text(f"kind: Pod\nmetadata: {{name: pod{index}}}\n")
        result = {
            "uuid": f"u{index}", "historyId": f"h{index}", "name": f"test_check_{index}",
            "fullName": f"suites.{AREAS[index % 6]}.test_x#test_check_{index}", "status": status,
            "statusDetails": {"message": f"check {index}: expected and actual differ"} if status != "passed" else {},
            "labels": [{"name": "epic", "value": SOURCES[index % 3]}, {"name": "feature", "value": AREAS[index % 6]},
                       {"name": "story", "value": f"rule {index % 7}"},
                       {"name": "parentSuite", "value": f"suites.{AREAS[index % 6]}"}],
            "attachments": [{"name": "expected vs actual", "source": f"c{index}-attachment.csv", "type": "text/csv"},
                            {"name": "manifest", "source": f"m{index}-attachment.yaml", "type": "application/yaml"}],
            "start": 0, "stop": 1000,
        }
        (directory / f"u{index}-result.json").write_text(json.dumps(result), encoding="utf-8")
    (directory / "environment.properties").write_text("kernel=6.1.0-28-amd64\npageSize=4096\n", encoding="utf-8")


def _median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.monotonic()
        action()
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="nodeconf-report-bench-"))
    try:
        results_dir = scratch / "allure-results"
        results_dir.mkdir()
        write_results(results_dir, args.checks)
        html = scratch / "nodeconf-report.html"
        numbers: dict[str, float | int | None] = {
            "checks": args.checks,
            "nodeconf_html_median_s": _median_seconds(lambda: write_html(load_results(results_dir), html),
                                                      args.repeats),
            "nodeconf_html_bytes": html.stat().st_size,
            "allure_html_median_s": None,
            "allure_html_bytes": None,
        }
        cli = allure_cli()
        if cli is not None:
            allure = scratch / "allure-report.html"
            numbers["allure_html_median_s"] = _median_seconds(
                lambda: write_allure_html(cli, results_dir, allure), args.repeats)
            numbers["allure_html_bytes"] = allure.stat().st_size
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        print(json.dumps(numbers))
    else:
        for name, value in numbers.items():
            print(f"{name}: {value if not isinstance(value, float) else round(value, 3)}")


if __name__ == "__main__":
    main()
