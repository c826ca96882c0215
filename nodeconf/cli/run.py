"""`nodeconf run`: run the suites with pytest against one node, write reports/, summarise, map the exit code.

Source: DESIGN.md `nodeconf run` contract (exit 0 all pass, 1 a check failed, 2 usage or infrastructure error).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nodeconf.errors import InputError
from nodeconf.nodes.spec import declare_node_option

if TYPE_CHECKING:
    from nodeconf.report.verdict import Verdict

SUITES_DIR = Path("suites")
JUNIT_FILE = "junit.xml"
RESULTS_DIR = "allure-results"
HTML_DIR = "html"
# pytest exit statuses (pytest.ExitCode OK, TESTS_FAILED) after which the checks' Allure results are expected;
# pytest and the report modules are imported only once the usage is known to be good (a bad --node exits at once).
RAN_CHECKS = (0, 1)
PROFILE = re.compile(r"\d+\.\d+")
# pytest options whose value may be a path inside suites/ without selecting tests to run.
PATH_VALUE_OPTIONS = frozenset(
    {"--deselect", "--ignore", "--ignore-glob", "--rootdir", "-c", "--confcutdir", "--basetemp", "--junitxml",
     "--alluredir", "--log-file", "--kubelet-config"}
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `nodeconf run` and its options; everything after them goes to pytest."""
    parser = subparsers.add_parser(
        "run",
        help="run the conformance suites against a node and write reports/",
        description="Run suites/ with pytest against one node, write JUnit, Allure results and the HTML report, "
        "and exit 0 (all checks passed), 1 (a check failed) or 2 (usage or infrastructure error). "
        "nodeconf's own options come first; everything after -- or from the first other argument on goes to "
        "pytest: nodeconf run --node vm -- -k swap -x; nodeconf run suites/swap.",
    )
    declare_node_option(parser.add_argument)
    parser.add_argument("--kubelet-config", type=Path, metavar="FILE", help="KubeletConfiguration YAML")
    parser.add_argument("--profile", metavar="X.Y", help="Kubernetes profile the oracle uses (default: the newest)")
    parser.add_argument("--reports", type=Path, default=Path("reports"), metavar="DIR",
                        help="where JUnit, Allure results and the HTML go (default: reports)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS", help="passed to pytest")


def selects_tests(pytest_args: Sequence[str], suites_dir: Path) -> bool:
    """True when a pytest argument names a path (or node id) inside `suites_dir`, so suites/ is not added."""
    root = suites_dir.resolve()
    for index, arg in enumerate(pytest_args):
        if arg.startswith("-") or (index and pytest_args[index - 1] in PATH_VALUE_OPTIONS):
            continue
        path = Path(arg.split("::", 1)[0]).resolve()
        if path.exists() and path.is_relative_to(root):
            return True
    return False


def pytest_argv(args: argparse.Namespace) -> list[str]:
    """The pytest command line: suites (unless a path was given), node options, report outputs, user args."""
    user_args = list(args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args)
    reports: Path = args.reports
    argv = [sys.executable, "-m", "pytest"]
    if not selects_tests(user_args, SUITES_DIR):
        argv.append(str(SUITES_DIR))
    argv += [f"--node={spec.display}" for spec in args.node or ()]
    for option in ("kubelet_config", "profile"):
        value = getattr(args, option)
        if value is not None:
            argv.append(f"--{option.replace('_', '-')}={value}")
    argv += [
        f"--junitxml={reports / JUNIT_FILE}",
        "-o", "junit_suite_name=nodeconf",
        f"--alluredir={reports / RESULTS_DIR}",
        "--clean-alluredir",
        "-p", "fixtures.evidence",
    ]
    return argv + user_args


def _check_usage(args: argparse.Namespace) -> None:
    if not SUITES_DIR.is_dir():
        raise InputError("no suites/ directory here; run nodeconf from the project root", source=str(Path.cwd()))
    if len(args.node or ()) > 1:
        raise InputError("several nodes per run are not supported yet (each spec was valid): give one",
                         field="--node")
    if args.profile is not None and not PROFILE.fullmatch(args.profile):
        raise InputError(f'must look like "1.36", got {args.profile!r}', field="--profile")
    if args.kubelet_config is not None and not args.kubelet_config.is_file():
        raise InputError("no such file", source=str(args.kubelet_config), field="--kubelet-config")


def _run_pytest(argv: list[str]) -> int:
    """Run pytest; on Ctrl-C wait while it tears the node down (it got the same SIGINT) and report what ran."""
    process = subprocess.Popen(argv)
    try:
        return process.wait()
    except KeyboardInterrupt:
        return process.wait()


def run(args: argparse.Namespace) -> int:
    """Run the suites, write the reports, print the summary and return 0, 1 or 2."""
    _check_usage(args)
    from nodeconf.report.generate import read_results, remove_reports, report_paths, write_reports
    from nodeconf.report.results import ReportError
    from nodeconf.report.summary import summary_lines
    from nodeconf.report.verdict import verdict

    reports: Path = args.reports
    (reports / JUNIT_FILE).unlink(missing_ok=True)
    shutil.rmtree(reports / RESULTS_DIR, ignore_errors=True)
    remove_reports(reports / HTML_DIR)
    started = time.monotonic()
    status = _run_pytest(pytest_argv(args))
    try:
        results = read_results(reports / RESULTS_DIR)
    except ReportError as error:
        if status in RAN_CHECKS:  # otherwise pytest's own status explains why there are no results
            print(f"nodeconf: {error}", file=sys.stderr)
        return _finish(verdict(status, None), started)
    written = write_reports(results, reports / HTML_DIR)
    junit = [("junit", reports / JUNIT_FILE)] if (reports / JUNIT_FILE).is_file() else []
    for line in summary_lines(results, [*junit, *report_paths(written)]):
        print(line)
    if written.allure_note:
        print(f"nodeconf: {written.allure_note}", file=sys.stderr)
    return _finish(verdict(status, results), started)


def _finish(outcome: Verdict, started: float) -> int:
    from nodeconf.report.verdict import EXIT_ERROR

    stream = sys.stdout if outcome.code != EXIT_ERROR else sys.stderr
    wall = time.monotonic() - started
    print(f"nodeconf: exit {outcome.code}: {outcome.reason} (wall time {wall:.1f} s)", file=stream)
    return outcome.code
