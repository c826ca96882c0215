"""`nodeconf report [RESULTS_DIR]`: regenerate the HTML report(s) from Allure results and print the summary."""

import argparse
import sys
from pathlib import Path

from nodeconf.errors import InputError
from nodeconf.report.generate import read_results, report_paths, write_reports
from nodeconf.report.results import ReportError
from nodeconf.report.summary import summary_lines
from nodeconf.report.summary_json import SUMMARY_FILE, write_summary
from nodeconf.report.verdict import INTERRUPTED, results_verdict


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `nodeconf report`."""
    parser = subparsers.add_parser(
        "report",
        help="regenerate the HTML report from Allure results",
        description="Read Allure results (default reports/allure-results) and write the nodeconf HTML report "
        "and, when Allure 3 is installed, Allure's single-file HTML. Exit 0 when written, 2 when unusable or "
        "when the run that wrote them did not finish (INTERRUPTED).",
    )
    parser.add_argument("results_dir", nargs="?", type=Path, default=Path("reports/allure-results"),
                        metavar="RESULTS_DIR", help="Allure results directory (default: reports/allure-results)")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                        help="where the HTML and summary.json go, nothing outside it (default: html/ next to "
                        "RESULTS_DIR, summary.json beside RESULTS_DIR, as `nodeconf run` writes them)")


def run(args: argparse.Namespace) -> int:
    """Write the reports and print where they are; exit 2 for unusable results (an InputError) and for the
    results of a run that did not finish (INTERRUPTED)."""
    results_dir: Path = args.results_dir
    reports = results_dir.resolve().parent
    output: Path = args.output or reports / "html"
    try:
        results = read_results(results_dir)
        written = write_reports(results, output)
    except ReportError as error:
        raise InputError(str(error)) from None
    outcome = results_verdict(results)
    summary = write_summary((args.output or reports) / SUMMARY_FILE, outcome, results, "nodeconf report")
    for line in summary_lines(results, [*report_paths(written), ("summary", summary)]):
        print(line)
    if written.allure_note:
        print(f"nodeconf: {written.allure_note}", file=sys.stderr)
    if outcome.label == INTERRUPTED:
        print(f"nodeconf: {INTERRUPTED}: {outcome.reason}", file=sys.stderr)
        return 2
    return 0
