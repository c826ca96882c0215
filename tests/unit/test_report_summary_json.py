"""reports/summary.json: the schema, the verdict for results alone, each check's node, suite, source, mismatch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.markers import SOURCE_MARKERS
from nodeconf.report import summary_json
from nodeconf.report.results import Check, RunResults, Status
from nodeconf.report.summary_json import first_mismatch, summary_document, write_summary
from nodeconf.report.verdict import Verdict

COMPARISON = ("res-demo: 1 of 25 compared values differ from the oracle\n"
              '  value of cgroup "cpu.weight" for container "hello" was "10"; expected "39"\n'
              '  value of cgroup "cpu.max" for container "hello" was "max 100000"; expected "50000 100000"')


def _check(status: Status, message: str = "", *, name: str = "test_qos[burstable]", tags: tuple[str, ...] = (),
           node: str | None = "'vm'") -> Check:
    labels = (("parentSuite", "suites.resources"), *(("tag", tag) for tag in tags))
    parameters = (("node", node),) if node is not None else ()
    return Check(name=name, full_name="suites.resources.test_res_demo#test_qos", status=status, message=message,
                 trace="", labels=labels, parameters=parameters, steps=(), attachments=(), fixtures=(), duration_ms=1)


def _results(*checks: Check, environment: tuple[tuple[str, str], ...] = ()) -> RunResults:
    return RunResults(results_dir=Path("r"), checks=checks, shared_fixtures=(), environment=environment)


def test_source_markers_are_the_suites_source_markers() -> None:
    assert set(summary_json.SOURCE_MARKERS) == set(SOURCE_MARKERS)


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        pytest.param(Status.FAILED, COMPARISON, 'value of cgroup "cpu.weight" for container "hello" was "10"; '
                     'expected "39"', id="comparison"),
        pytest.param(Status.BROKEN, "node vm: ssh: connection refused\ntraceback", "node vm: ssh: connection refused",
                     id="other-failure"),
        pytest.param(Status.SKIPPED, "node has no swap", "node has no swap", id="skip-reason"),
        pytest.param(Status.FAILED, "", "", id="no-message"),
        pytest.param(Status.PASSED, "anything", "", id="passed"),
    ],
)
def test_first_mismatch(status: Status, message: str, expected: str) -> None:
    assert first_mismatch(_check(status, message)) == expected


def test_document_schema() -> None:
    results = _results(
        _check(Status.FAILED, COMPARISON, tags=("requests_limits", "vm")),
        _check(Status.PASSED, name="test_swap", tags=("kep5359",), node=None),
        environment=(("nodeconf version", "0.1.0"), ("profile", "1.36"), ("node", "vm?memory=2048"),
                     ("kernel_version", "6.1")),
    )
    document = summary_document(Verdict("FAIL", 1, "1 check(s) failed"), results, "nodeconf run")
    assert json.loads(json.dumps(document)) == document
    assert {key: document[key] for key in ("schema", "written_by", "verdict", "exit_code", "reason", "counts")} == {
        "schema": 1, "written_by": "nodeconf run", "verdict": "FAIL", "exit_code": 1, "reason": "1 check(s) failed",
        "counts": {"total": 2, "failed": 1, "broken": 0, "skipped": 0, "passed": 1},
    }
    assert document["run"] == {"nodeconf version": "0.1.0", "profile": "1.36", "node": "vm?memory=2048"}
    failed, passed = document["checks"]
    assert failed == {
        "id": "suites.resources.test_res_demo#test_qos[burstable]", "name": "test_qos[burstable]",
        "status": "failed", "node": "vm", "suite": "resources", "source": "requests_limits",
        "message": "res-demo: 1 of 25 compared values differ from the oracle",
        "first_mismatch": 'value of cgroup "cpu.weight" for container "hello" was "10"; expected "39"',
    }
    assert (passed["node"], passed["source"], passed["message"], passed["first_mismatch"]) == (
        "vm?memory=2048", "kep5359", "", "")
    assert [(c["status"], c["about"], c["count"], c["checks"]) for c in document["causes"]] == [
        ("failed", f'value of cgroup "{file}" for container', 1, ["suites.resources.test_res_demo#test_qos[burstable]"])
        for file in ("cpu.max", "cpu.weight")]


def test_a_run_without_results_is_an_error_summary(tmp_path: Path) -> None:
    outcome = Verdict("NOTHING RAN", 2, "no check was collected")
    path = write_summary(tmp_path / "reports" / "summary.json", outcome, None, "nodeconf run")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert (document["verdict"], document["exit_code"], document["checks"], document["causes"]) == (
        "NOTHING RAN", 2, [], [])
    assert document["counts"] == {"total": 0, "failed": 0, "broken": 0, "skipped": 0, "passed": 0}
    assert set(document["run"]) == {"nodeconf version", "nodeconf commit"}  # still names who judged
