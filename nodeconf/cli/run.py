"""`nodeconf run`: run the suites with pytest against one node or several (one xdist worker per node), write
reports/, summarise, map the exit code.

Source: DESIGN.md `nodeconf run` contract (exit 0 all pass, 1 a check failed, 2 usage or infrastructure error);
issue 14 (several nodes per run, the exit code the worst over all nodes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nodeconf.cli.signals import PytestGroup
from nodeconf.resources import locate_tree
from nodeconf.run.options import RUN_OPTIONS, declare_run_options

if TYPE_CHECKING:
    from nodeconf.report.results import RunResults
    from nodeconf.report.verdict import Verdict
    from nodeconf.run.settings import RunSettings

JUNIT_FILE = "junit.xml"
RESULTS_DIR = "allure-results"
HTML_DIR = "html"
# pytest exit statuses (pytest.ExitCode OK, TESTS_FAILED) after which the checks' Allure results are expected;
# pytest and the report modules are imported only once the usage is known to be good (a bad --node exits at once).
RAN_CHECKS = (0, 1)
# pytest options whose value may be a path inside suites/ without selecting tests to run.
PATH_VALUE_OPTIONS = frozenset(
    {"--deselect", "--ignore", "--ignore-glob", "--rootdir", "-c", "--confcutdir", "--basetemp", "--junitxml",
     "--alluredir", "--log-file", "--kubelet-config", "--matrix"}
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `nodeconf run` and its options; everything after them goes to pytest."""
    parser = subparsers.add_parser(
        "run",
        help="run the conformance suites against a node and write reports/",
        description="Run suites/ with pytest against one node or several in parallel, write JUnit, Allure results "
        "and the HTML report, "
        "and exit 0 (all checks passed), 1 (a check failed) or 2 (usage or infrastructure error). "
        "nodeconf's own options come first; everything after -- or from the first other argument on goes to "
        "pytest: nodeconf run --node vm -- -k swap -x; nodeconf run suites/swap.",
    )
    declare_run_options(parser.add_argument, pytest=False)
    parser.add_argument("--strict", action="store_true", help="refuse a kubelet config field nodeconf does not "
                        "read or model (default: a warning naming it, on stderr); pytest's own --strict goes after --")
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


def pytest_argv(args: argparse.Namespace, settings: RunSettings) -> list[str]:
    """The pytest command line: suites (unless a path was given), the run's options as given (several nodes: one
    xdist worker each), report outputs, user args."""
    user_args = list(args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args)
    tree = locate_tree()  # the checkout around the working directory, else the installed suites
    # Installed: -P keeps the working directory off sys.path, so a `nodeconf/` or `suites/` there cannot shadow ours.
    argv = [sys.executable, *(["-P"] if tree.kind == "installed" else []), "-m", "pytest"]
    if not selects_tests(user_args, tree.suites):
        argv.append(str(tree.suites))
    if settings.matrix is not None:
        argv.append(f"--matrix={settings.matrix.resolve()}")
    argv += [f"--node={spec.display}" for spec in args.node or ()]
    if len(settings.nodes) > 1:
        argv += ["-n", str(len(settings.nodes)), "--dist", "load"]  # nodeconf.fixtures.matrix schedules node i on gw<i>
    for option in RUN_OPTIONS:
        value = getattr(args, option.dest)
        if option.pytest and option.dest != "matrix" and value is not None:
            argv.append(f"{option.flags[0]}={value}")
    argv += [
        f"--junitxml={settings.reports / JUNIT_FILE}",
        "-o", "junit_suite_name=nodeconf",
        f"--alluredir={settings.reports / RESULTS_DIR}",  # emptied by run() if an earlier run made it, never by pytest
        "-p", "nodeconf.fixtures.evidence",
        "-p", "nodeconf.fixtures.session",
    ]
    return argv + user_args


def check_usage(args: argparse.Namespace) -> RunSettings:
    """The run's settings, every kubelet config read once (a field nodeconf does not read is named here, refused
    with --strict, not only inside pytest, whose capture would hide the warning), a whole-cluster spec expanded,
    and each node's scheme asked to refuse what it can before anything starts; InputError otherwise."""
    locate_tree()  # an InputError when there are no suites to run
    from nodeconf.loader import UnknownFields
    from nodeconf.nodes.registry import expand, preflight, preflight_together
    from nodeconf.run.matrix import run_nodes
    from nodeconf.run.settings import run_settings

    unknown = UnknownFields(strict=args.strict)
    settings = run_settings(lambda dest: getattr(args, dest, None), unknown)
    if args.node:  # a whole-cluster spec (kube?nodes=...) becomes one spec per node, listed once, here
        args.node = expand(args.node)
        settings = settings.with_nodes(run_nodes(args.node, None))
    preflight_together([(node.spec, node.kubelet_config) for node in settings.nodes])
    for node in settings.nodes:
        preflight(node.spec, kubelet_config=node.kubelet_config, profile=node.profile)
    unknown.warn()  # only once the usage is good: an error stays the only line
    return settings


def _run_pytest(argv: list[str]) -> int:
    """Run pytest in its own process group; SIGINT/SIGTERM to nodeconf stop it there (see PytestGroup)."""
    with PytestGroup(argv) as group:
        return group.wait()


def run(args: argparse.Namespace) -> int:
    """Run the suites, write the reports, print the summary and return 0, 1 or 2."""
    settings = check_usage(args)
    from nodeconf.report.archive import ARCHIVE_FILE
    from nodeconf.report.generate import read_results, remove_reports, report_paths, write_reports
    from nodeconf.report.results import ReportError
    from nodeconf.report.results_mark import claim_results_dir
    from nodeconf.report.run_info import COMMAND_ENV, command_line
    from nodeconf.report.summary import summary_lines
    from nodeconf.report.summary_json import SUMMARY_FILE
    from nodeconf.report.verdict import EXIT_ERROR, verdict

    reports = settings.reports
    claim_results_dir(reports / RESULTS_DIR)  # refused before anything is removed when no nodeconf run made it
    (reports / JUNIT_FILE).unlink(missing_ok=True)
    (reports / SUMMARY_FILE).unlink(missing_ok=True)  # a run killed before the end leaves none that looks current
    (reports / ARCHIVE_FILE).unlink(missing_ok=True)
    remove_reports(reports / HTML_DIR)
    started = time.monotonic()
    os.environ[COMMAND_ENV] = command_line(sys.argv)  # the report records the command, not pytest's
    status = _run_pytest(pytest_argv(args, settings))
    try:
        results = read_results(reports / RESULTS_DIR)
    except ReportError as error:
        if status in RAN_CHECKS:  # otherwise pytest's own status explains why there are no results
            print(f"nodeconf: {error}", file=sys.stderr)
        return _finish(verdict(status, None), started, reports, None)
    try:
        written = write_reports(results, reports / HTML_DIR)
    except ReportError as error:
        print(f"nodeconf: {error}", file=sys.stderr)
        return _finish(verdict(status, results), started, reports, results, EXIT_ERROR)
    junit = [("junit", reports / JUNIT_FILE)] if (reports / JUNIT_FILE).is_file() else []
    for line in summary_lines(results, [*junit, *report_paths(written)]):
        print(line)
    if written.allure_note:
        print(f"nodeconf: {written.allure_note}", file=sys.stderr)
    return _finish(verdict(status, results), started, reports, results)


def _finish(outcome: Verdict, started: float, reports: Path, results: RunResults | None,
            code: int | None = None) -> int:
    """Write summary.json and the results archive, print the verdict line and return its exit code (`code` when the
    reports themselves failed)."""
    from nodeconf.report.archive import write_archive
    from nodeconf.report.results import ReportError
    from nodeconf.report.summary_json import SUMMARY_FILE, write_summary
    from nodeconf.report.verdict import EXIT_ERROR, INTERRUPTED

    code = max(outcome.code, code) if code is not None else outcome.code
    write_summary(reports / SUMMARY_FILE, outcome, results, "nodeconf run")
    try:
        archive = write_archive(reports, (JUNIT_FILE, HTML_DIR, SUMMARY_FILE, RESULTS_DIR))
        print(f"results archive: {archive}")
    except ReportError as error:
        print(f"nodeconf: {error}", file=sys.stderr)
        code = EXIT_ERROR
    stream = sys.stdout if code != EXIT_ERROR else sys.stderr
    wall = time.monotonic() - started
    interrupted = f"{INTERRUPTED}: " if outcome.label == INTERRUPTED else ""
    print(f"nodeconf: exit {code}: {interrupted}{outcome.reason} (wall time {wall:.1f} s)", file=stream)
    return code
