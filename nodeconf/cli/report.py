"""`nodeconf report [RESULTS_DIR]`: regenerate the HTML report(s) from Allure results and print the summary;
`nodeconf report --diff OLD NEW`: what changed between two runs, in NEW's report and summary.json."""

import argparse
import sys
from pathlib import Path

from nodeconf.errors import InputError
from nodeconf.report.generate import read_results, report_paths, write_reports
from nodeconf.report.results import ReportError
from nodeconf.report.run_diff import RunDiff, compare_runs
from nodeconf.report.run_source import RunSource, opened_run, read_record
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
        "when the run that wrote them did not finish (INTERRUPTED). With --diff OLD NEW: what changed between two "
        "runs; exit 1 when a check went from pass to fail, 0 otherwise, 2 on unusable input.",
    )
    parser.add_argument("results_dir", nargs="?", type=Path, default=None,
                        metavar="RESULTS_DIR", help="Allure results directory (default: reports/allure-results)")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                        help="where the HTML and summary.json go, nothing outside it (default: html/ next to "
                        "RESULTS_DIR, summary.json beside RESULTS_DIR, as `nodeconf run` writes them; with --diff, "
                        "next to NEW's results)")
    parser.add_argument("--diff", nargs=2, type=Path, default=None, metavar=("OLD", "NEW"),
                        help="compare two runs: results directories (reports/ or allure-results/) or .tar.gz "
                        "archives of one")


def run(args: argparse.Namespace) -> int:
    """Write the reports and print where they are; exit 2 for unusable results (an InputError) and for the
    results of a run that did not finish (INTERRUPTED)."""
    diff = getattr(args, "diff", None)  # absent from namespaces built by hand for `report RESULTS_DIR`
    if diff is not None:
        if args.results_dir is not None:
            raise InputError("give either RESULTS_DIR or --diff OLD NEW, not both")
        return run_diff(diff[0], diff[1], args.output)
    results_dir: Path = args.results_dir or Path("reports/allure-results")
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


def _html_dir(new: Path, source: RunSource, output: Path | None) -> Path:
    """Where NEW's report goes: -o, else html/ beside its Allure results, else (an archive) NEW-report/html."""
    if output is not None:
        return output
    if source.archive:
        return new.with_name(new.name.removesuffix(".gz").removesuffix(".tar").removesuffix(".tgz") + "-report") \
            / "html"
    assert source.allure_dir is not None
    return source.allure_dir.resolve().parent / "html"


def run_diff(old: Path, new: Path, output: Path | None) -> int:
    """Compare the runs, print the changes, write NEW's report with them (when NEW has Allure results); exit 1 when
    a check went from pass to fail, 2 when a run did not finish or cannot be read, else 0."""
    try:
        with opened_run(old) as old_source, opened_run(new) as new_source:
            before, after = read_record(old_source), read_record(new_source)
            diff = compare_runs(before, after)
            written = _write_new_report(new, new_source, output, diff)
    except ReportError as error:
        raise InputError(str(error)) from None
    for line in diff.lines():
        print(line)
    print(written)
    unfinished = [f"{record.label}: {record.interrupted}" for record in (before, after) if record.interrupted]
    if unfinished:
        print(f"nodeconf: {INTERRUPTED}: {'; '.join(unfinished)}", file=sys.stderr)
        return 2
    return 1 if diff.regressed else 0


def _write_new_report(new: Path, source: RunSource, output: Path | None, diff: RunDiff) -> str:
    """NEW's HTML report and summary.json with the diff; the line saying where they are, or why there are none."""
    if source.allure_dir is None:
        return f"nodeconf: no report written: {new} has no Allure results"
    results = read_results(source.allure_dir)
    html_dir = _html_dir(new, source, output)
    written = write_reports(results, html_dir, diff)
    summary = write_summary((output or html_dir.parent) / SUMMARY_FILE, results_verdict(results), results,
                            "nodeconf report --diff", diff.to_json())
    return "\n".join(f"{label}: {path}" for label, path in [*report_paths(written), ("summary", summary)])
