"""`nodeconf report --diff OLD NEW` (issue 33 item 2) on small result trees written here the way `nodeconf run`
leaves them (junit.xml as pytest's junitxml writes it, allure-results/ as allure-pytest does)."""

from __future__ import annotations

import json
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nodeconf.cli.main import main
from nodeconf.report.comparison import COMPARISON_MIME, comparison_csv
from nodeconf.report.properties import write_properties
from nodeconf.report.run_state import RunState, write_run_state
from tests.unit.report.comparison_rows import Row

MODULE = "suites.resources.test_res_demo"
# check name -> (status, message); junit's element for each non-passed status.
Checks = dict[str, tuple[str, str]]
_JUNIT_TAG = {"failed": "failure", "broken": "error", "skipped": "skipped"}
MISMATCH = ('compared values differ from the oracle\n  value of cgroup "cpu.weight" for container "hello" was "{}"; '
            'expected "35" (rule: runtime formula)')
# A container cgroup's path as the systemd driver names it: the pod's uid and the container's id differ every run.
CGROUP = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{}.scope"


def weight_row(actual: str, run: str = "1") -> Row:
    """hello's cpu.weight in the comparison table of a run (`run` tells its pod uid and container id)."""
    return Row("res-demo", "hello", CGROUP.format(run * 8, run * 12), "cpu.weight", "35", actual, "runtime formula",
               actual == "35")


def write_run(root: Path, checks: Checks, facts: dict[str, str] | None = None, *, junit: bool = True,
              allure: bool = True, tables: dict[str, list[Row]] | None = None) -> Path:
    """A `reports/` directory: junit.xml and allure-results/ with one result per check (with its comparison table
    when `tables` has one, attached as allure-pytest attaches it) and environment.properties."""
    if junit:
        suite = ET.Element("testsuite", {"name": "vm"})
        for name, (status, message) in checks.items():
            case = ET.SubElement(suite, "testcase", {"classname": MODULE, "name": name, "time": "1.0"})
            if status != "passed":
                ET.SubElement(case, _JUNIT_TAG[status], {"message": message}).text = "traceback at line 12"
        root.mkdir(parents=True, exist_ok=True)
        top = ET.Element("testsuites")
        top.append(suite)
        ET.ElementTree(top).write(root / "junit.xml", encoding="utf-8", xml_declaration=True)
    if allure:
        results = root / "allure-results"
        results.mkdir(parents=True, exist_ok=True)
        for i, (name, (status, message)) in enumerate(checks.items()):
            result = {"uuid": f"u{i}", "historyId": f"h{name}", "name": name,
                      "fullName": f"{MODULE}#{name.partition('[')[0]}", "status": status,
                      "statusDetails": {"message": message}, "labels": [], "start": 1, "stop": 2}
            if name in (tables or {}):
                (results / f"u{i}-attachment.csv").write_text(comparison_csv((tables or {})[name]), encoding="utf-8")
                result["attachments"] = [{"name": "expected vs actual", "source": f"u{i}-attachment.csv",
                                          "type": COMPARISON_MIME}]
            (results / f"u{i}-result.json").write_text(json.dumps(result), encoding="utf-8")
        write_properties(results / "environment.properties", list((facts or {}).items()))
    return root


PASSING: Checks = {"test_a[vm]": ("passed", ""), "test_b[vm]": ("passed", ""), "test_c[vm]": ("skipped", "no swap")}
FACTS = {"kernel_version": "6.1.0-28-amd64", "runtime": "direct", "profile": "1.38", "started": "2026-12-03T07:00"}


def report_diff(*argv: str | Path) -> int:
    return main(["report", "--diff", *map(str, argv)])


def test_verdict_changes_and_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old", {**PASSING, "test_gone[vm]": ("passed", ""),
                                       "test_fixed[vm]": ("failed", MISMATCH.format("10"))}, FACTS)
    new = write_run(tmp_path / "new", {**PASSING, "test_b[vm]": ("failed", MISMATCH.format("10")),
                                       "test_fixed[vm]": ("passed", ""), "test_new[vm]": ("passed", ""),
                                       "test_c[vm]": ("passed", "")}, FACTS)
    assert report_diff(old, new) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"nodeconf: {old} → {new}: 1 pass → fail, 1 fail → pass, 1 new, 1 gone, 1 other")
    assert out[1:6] == [f"  pass → fail   {MODULE}#test_b[vm]", f"  fail → pass   {MODULE}#test_fixed[vm]",
                        f"  new           {MODULE}#test_new[vm]", f"  gone          {MODULE}#test_gone[vm]",
                        f"  skipped → passed {MODULE}#test_c[vm]"]
    summary = json.loads((new / "summary.json").read_text())
    assert summary["diff"]["regressed"] is True
    first = summary["diff"]["verdicts"][0]
    assert (first["id"], first["change"]) == (f"{MODULE}#test_b[vm]", "pass_to_fail")
    page = (new / "html" / "nodeconf-report.html").read_text()
    assert page.index('id="diff"') < page.index('id="checks"') and f"{MODULE}#test_b[vm]" in page


def test_no_regression_exits_0_and_the_same_run_is_no_difference(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old", {**PASSING, "test_b[vm]": ("failed", MISMATCH.format("10"))}, FACTS)
    new = write_run(tmp_path / "new", PASSING, FACTS)
    assert report_diff(old, new) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": 1 fail → pass")
    assert report_diff(new, new) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": no difference")
    assert json.loads((new / "summary.json").read_text())["diff"]["summary"] == "no difference"


def test_a_mismatch_that_changed_in_a_check_failing_in_both(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The compared values of the checks' tables decide (in another run, the cgroup path has another pod uid);
    the changed ones are told without their paths."""
    old = write_run(tmp_path / "old", {"test_a[vm]": ("failed", MISMATCH.format("10")),
                                       "test_b[vm]": ("failed", MISMATCH.format("10"))},
                    tables={"test_a[vm]": [weight_row("10")], "test_b[vm]": [weight_row("10")]})
    new = write_run(tmp_path / "new", {"test_a[vm]": ("failed", MISMATCH.format("12")),
                                       "test_b[vm]": ("failed", MISMATCH.format("10"))},
                    tables={"test_a[vm]": [weight_row("12", "2")], "test_b[vm]": [weight_row("10", "2")]})
    assert report_diff(old, new) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(": 1 mismatch changed")
    assert out[1:4] == [
        f"  mismatch      {MODULE}#test_a[vm]",
        '    - value of cgroup "cpu.weight" for container "hello" of pod "res-demo" was "10"; expected "35" '
        '(rule: runtime formula)',
        '    + value of cgroup "cpu.weight" for container "hello" of pod "res-demo" was "12"; expected "35" '
        '(rule: runtime formula)']
    [changed] = json.loads((new / "summary.json").read_text())["diff"]["mismatches"]
    assert (changed["id"], len(changed["before"]), len(changed["after"])) == (f"{MODULE}#test_a[vm]", 1, 1)


@pytest.mark.parametrize("allure", [True, False], ids=["allure-verdicts", "junit-verdicts"])
def test_a_reworded_failure_message_changes_no_diff_result(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           allure: bool) -> None:
    """The same compared values failing in both runs, told in other words (a message is for people): no
    difference, whether the verdicts come from junit.xml (the compared values then from the Allure results beside
    it) or from the Allure results."""
    reworded = 'res-demo: 1 of 3 values differ\n  cpu.weight of container "hello" is 10, the oracle says 35'
    old = write_run(tmp_path / "old", {"test_a[vm]": ("failed", MISMATCH.format("10"))}, junit=not allure,
                    tables={"test_a[vm]": [weight_row("35"), weight_row("10")]})
    new = write_run(tmp_path / "new", {"test_a[vm]": ("failed", reworded)}, junit=not allure,
                    tables={"test_a[vm]": [weight_row("35", "2"), weight_row("10", "2")]})
    assert report_diff(old, new) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": no difference")
    assert json.loads((new / "summary.json").read_text())["diff"]["mismatches"] == []


def test_node_facts_that_changed_and_per_node_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old", PASSING, FACTS)
    new = write_run(tmp_path / "new", PASSING, {**FACTS, "runtime": "runc", "runtime_version": "1.1.15",
                                                "started": "2026-12-03T08:00"})
    write_properties(new / "allure-results" / "environment-b.properties", [("name", "b"), ("kernel_version", "6.12")])
    assert report_diff(old, new) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(": 4 node facts changed")
    assert out[1:5] == ["  fact          runtime: direct → runc", "  fact          runtime_version: (none) → 1.1.15",
                        "  fact          b: name: (none) → b", "  fact          b: kernel_version: (none) → 6.12"]


def test_junit_and_allure_name_a_check_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old", PASSING, allure=False)
    new = write_run(tmp_path / "new", PASSING, junit=False)
    assert report_diff(old, new / "allure-results") == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": no difference")


def test_archives_of_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old" / "reports", PASSING, FACTS)
    new = write_run(tmp_path / "new" / "reports", {**PASSING, "test_a[vm]": ("failed", MISMATCH.format("10"))}, FACTS)
    archives = []
    for run in (old, new):
        archive = tmp_path / f"{run.parent.name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(run, arcname="reports")
        archives.append(archive)
    assert report_diff(*archives) == 1
    assert f"pass → fail   {MODULE}#test_a[vm]" in capsys.readouterr().out
    assert "diff" in json.loads((tmp_path / "new-report" / "summary.json").read_text())
    assert (tmp_path / "new-report" / "html" / "nodeconf-report.html").is_file()


def _evil_archive(tmp_path: Path) -> Path:
    archive = tmp_path / "evil.tar.gz"
    payload = tmp_path / "payload"
    payload.write_text("x")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(payload, arcname="../escaped")
    return archive


@pytest.mark.parametrize(("make", "words"), [
    pytest.param(lambda tmp: tmp / "missing", "missing: no such directory or archive", id="missing"),
    pytest.param(lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", "neither junit.xml nor Allure results",
                 id="no-results"),
    pytest.param(lambda tmp: (tmp / "x.tar.gz").write_text("not gzip") and tmp / "x.tar.gz",
                 "not a readable .tar.gz archive", id="corrupt-archive"),
    pytest.param(_evil_archive, "not a readable .tar.gz archive", id="member-outside"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object,
                                          words: str) -> None:
    good = write_run(tmp_path / "good", PASSING)
    bad = make(tmp_path)  # type: ignore[operator]
    assert report_diff(good, bad) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err, err
    assert not (Path(tempfile.gettempdir()) / "escaped").exists()


def test_results_dir_and_diff_do_not_mix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_run(tmp_path / "good", PASSING)
    assert main(["report", str(good), "--diff", str(good), str(good)]) == 2
    assert "either RESULTS_DIR or --diff" in capsys.readouterr().err


def test_an_unfinished_run_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old", PASSING)
    new = write_run(tmp_path / "new", PASSING)
    write_run_state(new / "allure-results", RunState(False, "SIGTERM"))
    assert report_diff(old, new) == 2
    assert "INTERRUPTED" in capsys.readouterr().err
