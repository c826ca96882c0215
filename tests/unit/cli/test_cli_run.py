"""`nodeconf run` end to end on a throw-away project: pytest, JUnit, Allure results, HTML, summary, exit codes."""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nodeconf import resources
from nodeconf.cli import run as run_cli
from nodeconf.errors import InputError
from nodeconf.report import generate
from nodeconf.report.allure_html import allure_cli
from nodeconf.report.properties import read_properties
from nodeconf.report.results_mark import claim_results_dir, made_by_nodeconf
from nodeconf.report.run_info import COMMAND_ENV, RUN_KEYS
from nodeconf.run.settings import run_settings

CONFTEST = '''
from nodeconf.fixtures.evidence import record_enforcer_log, record_node_facts
from nodeconf.node_facts import NodeFacts
from nodeconf.run.options import declare_run_options

pytest_plugins = ["nodeconf.fixtures.evidence"]


def pytest_addoption(parser):
    declare_run_options(parser.addoption, pytest=True)


def pytest_configure(config):
    record_node_facts(config, NodeFacts(memory_capacity=1073741824, swap_capacity=536870912,
                                        kernel_version="6.1.0-28-amd64", runtime="runc", runtime_version="1.1.5",
                                        measured_cpu_weight_formula="linear"),
                      kubelet_flags="--runtime-request-timeout=10m0s")
    record_enforcer_log(config, lambda: "enforcer: wrote memory.high=max for hello\\n")
'''

CHECKS = '''
from dataclasses import dataclass

import pytest

from nodeconf.fixtures.evidence import attach_comparison, attach_manifest


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


POD = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"


@pytest.mark.kep5359
def test_swap_limit_passes():
    attach_comparison([Row("swap-demo", "app", POD, "memory.swap.max", "33554432", "33554432", "LimitedSwap", True)])


@pytest.mark.memory_qos
def test_memory_high_fails():
    attach_manifest("apiVersion: v1\\nkind: Pod\\nmetadata:\\n  name: res-demo\\n", "res-demo.yaml")
    row = Row("res-demo", "hello", POD, "memory.high", "510025728", "max", "Memory QoS throttling", False)
    attach_comparison([row])
    assert row.actual == row.expected, (
        'value of cgroup "memory.high" for container "hello" was "max"; expected "510025728"'
    )


@pytest.mark.requests_limits
def test_needs_swap_skipped():
    pytest.skip("node has no swap")


@pytest.fixture
def unreachable_node():
    pytest.fail("node vm: ssh: connect to host 127.0.0.1 port 2222: Connection refused", pytrace=False)


@pytest.mark.kep5359
def test_node_unreachable_errors(unreachable_node):
    pass
'''


def _write_project(root: Path) -> Path:
    """A project with one suite holding a passing, a failing, a skipped and an erroring check."""
    (root / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    kep5359: x\n    memory_qos: x\n    requests_limits: x\n", encoding="utf-8"
    )
    (root / "conftest.py").write_text(textwrap.dedent(CONFTEST), encoding="utf-8")
    (root / "pyproject.toml").write_text('[project]\nname = "nodeconf"\n', encoding="utf-8")  # a checkout
    (root / "suites" / "swap").mkdir(parents=True)
    (root / "suites" / "swap" / "test_checks.py").write_text(CHECKS, encoding="utf-8")
    (root / "kubelet.yaml").write_text("kind: KubeletConfiguration\n", encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The throw-away project as the current directory, Allure's own HTML switched off (speed)."""
    monkeypatch.chdir(_write_project(tmp_path))
    monkeypatch.setattr(generate, "allure_cli", lambda: None)
    return tmp_path


@dataclass(frozen=True)
class FullRun:
    project: Path
    code: int
    out: str


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FullRun]:
    """One `nodeconf run --node local --profile 1.36 --kubelet-config kubelet.yaml` of the whole project."""
    root = _write_project(tmp_path_factory.mktemp("project"))
    with pytest.MonkeyPatch.context() as monkeypatch, tempfile.TemporaryFile("w+") as out:
        monkeypatch.chdir(root)
        monkeypatch.setattr(sys, "stdout", out)
        argv = ("--node", "local", "--profile", "1.36", "--kubelet-config", "kubelet.yaml")
        monkeypatch.setattr(sys, "argv", ["nodeconf", "run", *argv])
        monkeypatch.setenv(COMMAND_ENV, "")  # restored afterwards: run() sets it for its pytest
        code = run_cli.run(_args(*argv))
        out.seek(0)
        yield FullRun(root, code, out.read())


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_cli.add_parser(parser.add_subparsers())
    return parser.parse_args(["run", *argv])


def _pytest_argv(*argv: str) -> list[str]:
    args = _args(*argv)
    return run_cli.pytest_argv(args, run_settings(lambda dest: getattr(args, dest, None)))


def _results(project: Path) -> list[dict[str, object]]:
    return [json.loads(path.read_text(encoding="utf-8"))
            for path in (project / "reports" / "allure-results").glob("*-result.json")]


def _labels(result: dict[str, object], name: str) -> list[str]:
    labels = result["labels"]
    assert isinstance(labels, list)
    return [label["value"] for label in labels if label["name"] == name]


def _attachment_names(result: dict[str, object]) -> list[str]:
    attachments = result.get("attachments", [])
    assert isinstance(attachments, list)
    return [attachment["name"] for attachment in attachments]


def test_run_exits_1_on_a_failed_check_and_prints_the_summary(full_run: FullRun) -> None:
    assert full_run.code == 1
    assert "nodeconf: 4 checks: 1 failed, 1 broken, 1 skipped, 1 passed" in full_run.out
    assert ('  FAILED  suites.swap.test_checks#test_memory_high_fails: AssertionError: value of cgroup "memory.high" '
            'for container "hello" was "max"; expected "510025728"') in full_run.out
    assert "report: reports/html/nodeconf-report.html" in full_run.out
    assert "nodeconf: exit 1: 1 check(s) failed" in full_run.out


def test_run_writes_junit_with_every_check(full_run: FullRun) -> None:
    cases = ET.parse(full_run.project / "reports" / "junit.xml").getroot().iter("testcase")
    assert sorted(case.get("name", "") for case in cases) == [
        "test_memory_high_fails", "test_needs_swap_skipped", "test_node_unreachable_errors", "test_swap_limit_passes",
    ]


def test_run_writes_environment_and_categories(full_run: FullRun) -> None:
    results = full_run.project / "reports" / "allure-results"
    environment = (results / "environment.properties").read_text(encoding="utf-8")
    entries = dict(read_properties(results / "environment.properties"))
    assert list(entries)[:13] == [*RUN_KEYS, "node", "accepted cpu weight formula", "memory_capacity",
                                  "swap_capacity"]
    assert (entries["profile"], entries["kubelet config"], entries["node"]) == ("1.36", "kubelet.yaml", "local")
    assert entries["kubelet config sha256"] == hashlib.sha256(b"kind: KubeletConfiguration\n").hexdigest()
    assert entries["command"] == "nodeconf run --node local --profile 1.36 --kubelet-config kubelet.yaml"
    assert entries["started"] <= entries["finished"]
    assert "kernel_version=6.1.0-28-amd64" in environment
    # The node's formula is the one measured (the oracle's required one stays "nonlinear", a run entry).
    assert (entries["runtime"], entries["cpu_weight_formula"]) == ("runc", "linear")
    assert entries["accepted cpu weight formula"] == "nonlinear"
    assert "measured_cpu_weight_formula" not in entries
    assert entries["kubelet_flags"] == "--runtime-request-timeout=10m0s"  # Node.kubelet_flags
    assert (results / "categories.json").is_file()


def test_run_writes_html_failures_first(full_run: FullRun) -> None:
    page = (full_run.project / "reports" / "html" / "nodeconf-report.html").read_text(encoding="utf-8")
    html = page[page.index('<section id="checks">'):]
    assert html.index("test_memory_high_fails") < html.index("test_node_unreachable_errors") < html.index(
        "test_needs_swap_skipped") < html.index("test_swap_limit_passes")
    assert "--runtime-request-timeout=10m0s" in page[:page.index('<section id="checks">')]  # among the node's facts
    assert (full_run.project / "reports" / "html" / "allure-report.html").is_file() == (allure_cli() is not None)


def test_run_labels_parameters_and_enforcer_log(full_run: FullRun) -> None:
    results = {str(result["name"]): result for result in _results(full_run.project)}
    failed = results["test_memory_high_fails"]
    assert (_labels(failed, "epic"), _labels(failed, "feature"), _labels(failed, "story")) == (
        ["Memory QoS v1.36 post"], ["swap"], ["memory high fails"])
    assert _labels(results["test_swap_limit_passes"], "epic") == ["KEP-5359"]
    assert failed["parameters"] == [{"name": "node", "value": "'local'"}, {"name": "profile", "value": "'1.36'"}]
    logged = {name for name, result in results.items() if "enforcer log" in _attachment_names(result)}
    assert logged == {"test_memory_high_fails", "test_node_unreachable_errors"}


@pytest.mark.parametrize(
    ("selection", "code", "reason"),
    [
        pytest.param("passes", 0, "all checks that apply passed", id="all-pass"),
        pytest.param("skipped", 2, "no check ran: all 1 skipped", id="only-skipped"),
        pytest.param("errors", 2, "1 check(s) broken by an infrastructure error", id="setup-error"),
    ],
)
def test_run_exit_codes(project: Path, capfd: pytest.CaptureFixture[str], selection: str, code: int,
                       reason: str) -> None:
    assert run_cli.run(_args("--", "-k", selection)) == code
    captured = capfd.readouterr()
    assert f"exit {code}: {reason}" in captured.out + captured.err


def test_run_with_empty_suites_is_an_error(project: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (project / "suites" / "swap" / "test_checks.py").unlink()
    assert run_cli.run(_args()) == 2
    ours = [line for line in capfd.readouterr().err.splitlines() if line.startswith("nodeconf:")]
    assert len(ours) == 1  # pytest's status says why; no second line about the missing results
    assert ours[0].startswith("nodeconf: exit 2: no check was collected")


def test_pytest_usage_error_never_reports_an_earlier_run(project: Path, capfd: pytest.CaptureFixture[str]) -> None:
    stale = project / "reports" / "allure-results"
    claim_results_dir(stale)  # as an earlier run left it
    (stale / "old-result.json").write_text('{"uuid": "old", "name": "test_old", "status": "passed"}')
    assert run_cli.run(_args("--", "--no-such-option")) == 2
    assert "nodeconf: exit 2: pytest rejected the command line" in capfd.readouterr().err
    assert not (project / "reports" / "html" / "nodeconf-report.html").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(("--profile", "latest"), 'must look like "1.36"', id="bad-profile"),
        pytest.param(("--node", "local", "--node", "local?cpu-weight-formula=linear"),
                     "--node: two nodes are named 'local'", id="same-name"),
        pytest.param(("--node", "local", "--node", "local?name=b"),
                     r"--node: nodes local and b are the same machine \(local\)", id="same-machine"),
        pytest.param(("--kubelet-config", "missing.yaml"), "missing.yaml: --kubelet-config: no such file",
                     id="missing-kubelet-config"),
    ],
)
def test_run_usage_errors(project: Path, argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(InputError, match=message):
        run_cli.run(_args(*argv))
    assert not (project / "reports").exists()


def test_run_without_any_suites_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(resources, "BUNDLED_DIR", tmp_path / "not-installed")
    monkeypatch.setattr(resources, "PACKAGE_DIR", tmp_path / "site-packages" / "nodeconf")
    with pytest.raises(InputError, match="no nodeconf suites: not inside a nodeconf checkout"):
        run_cli.run(_args())


@pytest.mark.parametrize(
    ("pytest_args", "selects"),
    [
        pytest.param([], False, id="nothing"),
        pytest.param(["-k", "swap"], False, id="keyword"),
        pytest.param(["suites/swap"], True, id="suite-dir"),
        pytest.param(["suites/swap/test_checks.py::test_swap_limit_passes"], True, id="node-id"),
        pytest.param(["--deselect", "suites/swap/test_checks.py::test_needs_swap_skipped"], False, id="deselect"),
        pytest.param(["kubelet.yaml"], False, id="path-outside-suites"),
    ],
)
def test_selects_tests(project: Path, pytest_args: list[str], selects: bool) -> None:
    assert run_cli.selects_tests(pytest_args, Path("suites")) is selects


def test_pytest_argv_passes_node_options_and_user_args_through(project: Path) -> None:
    spec = "ssh://root@host:2222?key=kubelet.yaml&known_hosts=kubelet.yaml"
    argv = _pytest_argv("--node", spec, "--", "suites/swap", "-x")
    assert argv[1:] == [
        "-m", "pytest", f"--node={spec}", "--junitxml=reports/junit.xml",
        "-o", "junit_suite_name=nodeconf", "--alluredir=reports/allure-results",
        "-p", "nodeconf.fixtures.evidence", "-p", "nodeconf.fixtures.session", "suites/swap", "-x",
    ]


def test_pytest_argv_runs_several_nodes_one_worker_each(project: Path) -> None:
    argv = _pytest_argv("--node", "vm", "--node", "vm?name=b", "--", "-k", "res_demo")
    start = argv.index("--node=vm")
    assert argv[start:start + 6] == ["--node=vm", "--node=vm?name=b", "-n", "2", "--dist", "load"]
    assert "-n" not in _pytest_argv("--node", "vm")  # one node: no xdist unless asked


def test_pytest_argv_passes_a_matrix_file(project: Path) -> None:
    (project / "nodes.yaml").write_text("- node: vm\n- {node: vm, name: b}\n- {node: vm, name: c}\n")
    argv = _pytest_argv("--matrix", "nodes.yaml")
    start = argv.index(f"--matrix={(project / 'nodes.yaml').resolve()}")
    assert argv[start + 1:start + 5] == ["-n", "3", "--dist", "load"]


def test_run_writes_summary_json(full_run: FullRun) -> None:
    summary = json.loads((full_run.project / "reports" / "summary.json").read_text(encoding="utf-8"))
    assert (summary["verdict"], summary["exit_code"], summary["written_by"]) == ("FAIL", 1, "nodeconf run")
    assert summary["counts"] == {"total": 4, "failed": 1, "broken": 1, "skipped": 1, "passed": 1}
    checks = {check["name"]: check for check in summary["checks"]}
    assert {name: (c["status"], c["node"], c["suite"], c["source"]) for name, c in checks.items()} == {
        "test_swap_limit_passes": ("passed", "local", "swap", "kep5359"),
        "test_memory_high_fails": ("failed", "local", "swap", "memory_qos"),
        "test_needs_swap_skipped": ("skipped", "local", "swap", "requests_limits"),
        "test_node_unreachable_errors": ("broken", "local", "swap", "kep5359"),
    }
    assert checks["test_memory_high_fails"]["first_mismatch"] == {
        "owner": "res-demo/hello", "pod": "res-demo", "container": "hello",
        "path": "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice", "file": "memory.high",
        "expected": "510025728", "actual": "max", "rule": "Memory QoS throttling"}
    assert checks["test_memory_high_fails"]["message"].startswith('AssertionError: value of cgroup "memory.high"')
    assert summary["run"]["profile"] == "1.36" and summary["run"]["node"] == "local"
    (node,) = summary["nodes"]
    assert (node["name"], node["spec"]) == ("local", "local")
    recorded = {"memory_capacity": "1073741824", "swap_capacity": "536870912", "kernel_version": "6.1.0-28-amd64",
                "runtime": "runc", "runtime_version": "1.1.5", "cpu_weight_formula": "linear"}  # the CONFTEST's
    assert recorded.items() <= node["facts"].items()


def test_run_writes_one_results_archive(full_run: FullRun) -> None:
    reports = full_run.project / "reports"
    with tarfile.open(reports / "nodeconf-results.tar.gz") as archive:
        names = set(archive.getnames())
        summary = archive.extractfile("nodeconf-results/summary.json")
        assert summary is not None and summary.read() == (reports / "summary.json").read_bytes()
    assert {"nodeconf-results/junit.xml", "nodeconf-results/html/nodeconf-report.html",
            "nodeconf-results/allure-results/environment.properties"} <= names
    assert all(name.startswith("nodeconf-results/") for name in names)


def test_a_failed_run_writes_its_archive_too(project: Path) -> None:
    assert run_cli.run(_args("--", "-k", "errors")) == 2
    with tarfile.open(project / "reports" / "nodeconf-results.tar.gz") as archive:
        names = set(archive.getnames())
    assert {"nodeconf-results/summary.json", "nodeconf-results/junit.xml"} <= names


def test_run_html_header_names_what_judged_the_node(full_run: FullRun) -> None:
    html = (full_run.project / "reports" / "html" / "nodeconf-report.html").read_text(encoding="utf-8")
    header = html[: html.index("</header>")]
    for key in RUN_KEYS:
        assert f"<dt>{key}</dt>" in header
    assert hashlib.sha256(b"kind: KubeletConfiguration\n").hexdigest() in header


def test_report_rewrites_summary_json_from_the_results(full_run: FullRun, tmp_path: Path) -> None:
    from nodeconf.cli import report as report_cli

    output = tmp_path / "out" / "html"
    (tmp_path / "out" / "summary.json").parent.mkdir()
    (tmp_path / "out" / "summary.json").write_text("someone else's\n")
    args = argparse.Namespace(results_dir=full_run.project / "reports" / "allure-results", output=output)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(generate, "allure_cli", lambda: None)
        assert report_cli.run(args) == 0
    # -o DIR: everything inside DIR (issue 32: summary.json used to land in DIR's parent, over what was there).
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["html", "summary.json"]
    assert (tmp_path / "out" / "summary.json").read_text() == "someone else's\n"
    assert sorted(p.name for p in output.iterdir()) == ["nodeconf-report.html", "summary.json"]
    summary = json.loads((output / "summary.json").read_text(encoding="utf-8"))
    assert (summary["verdict"], summary["exit_code"], summary["written_by"]) == ("FAIL", 1, "nodeconf report")
    assert len(summary["checks"]) == 4


@pytest.mark.parametrize("layout", ["unmarked", "forged-mark", "symlink", "other-owner"])
def test_run_never_removes_a_results_dir_no_run_made(project: Path, layout: str) -> None:
    """Issue 26 item 11: an allure-results directory no nodeconf run made is refused (one line, exit 2), not removed."""
    keep = project / "someone-elses"
    keep.mkdir()
    (keep / "canary-result.json").write_text("theirs")
    results = project / "reports" / "allure-results"
    results.parent.mkdir()
    if layout == "symlink":
        results.symlink_to(keep)
    elif layout == "other-owner":  # marked, then handed to another user (who could have written any mark)
        if os.geteuid() != 0:
            pytest.skip("handing a directory to another user needs root")
        claim_results_dir(results)
        (results / "canary-result.json").write_text("theirs")
        os.chown(results, os.geteuid() + 1, -1)
    else:
        results.mkdir()
        (results / "canary-result.json").write_text("theirs")
    if layout == "forged-mark":  # a mark copied from another directory names that directory's inode
        (results / ".nodeconf-results").write_text(
            f"nodeconf run results directory: device {keep.stat().st_dev} inode {keep.stat().st_ino}\n")
    with pytest.raises(InputError, match=r"--reports: reports/allure-results exists and no nodeconf run made it"):
        run_cli.run(_args("--", "-k", "passes"))
    assert (results / "canary-result.json").read_text() == "theirs"
    assert (keep / "canary-result.json").read_text() == "theirs"


def test_run_replaces_the_results_of_its_own_earlier_run(project: Path) -> None:
    """Issue 26 item 11: the results directory an earlier run made is emptied by the next, which leaves it marked
    for the one after (pytest does not empty it and so removes no mark)."""
    results = project / "reports" / "allure-results"
    claim_results_dir(results)  # as an earlier run left it
    (results / "old-result.json").write_text('{"uuid": "old", "name": "test_old", "status": "passed"}')
    assert run_cli.run(_args("--", "-k", "passes")) == 0
    assert [path.name for path in results.glob("*-result.json")] != [] and not (results / "old-result.json").exists()
    assert made_by_nodeconf(results)
def test_report_without_output_rewrites_the_run_layout(full_run: FullRun, tmp_path: Path) -> None:
    """Without -o the reports go where `nodeconf run` put them: html/ and summary.json beside the results."""
    from nodeconf.cli import report as report_cli

    reports = tmp_path / "reports"
    shutil.copytree(full_run.project / "reports" / "allure-results", reports / "allure-results")
    args = argparse.Namespace(results_dir=reports / "allure-results", output=None)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(generate, "allure_cli", lambda: None)
        assert report_cli.run(args) == 0
    assert json.loads((reports / "summary.json").read_text(encoding="utf-8"))["written_by"] == "nodeconf report"
    assert (reports / "html" / "nodeconf-report.html").is_file()
