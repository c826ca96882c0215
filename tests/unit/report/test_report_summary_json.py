"""reports/summary.json: the schema, the verdict for results alone, each check's node, suite, source, mismatch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nodeconf.report.comparison import COMPARISON_MIME, comparison_csv
from nodeconf.report.results import Attachment, Check, NodeEnvironment, RunResults, Status, Step
from nodeconf.report.summary_json import first_mismatch, summary_document, write_summary
from nodeconf.report.verdict import Verdict
from tests.unit.report.comparison_rows import Row

COMPARISON = ("res-demo: 1 of 25 compared values differ from the oracle\n"
              '  value of cgroup "cpu.weight" for container "hello" was "10"; expected "39"\n'
              '  value of cgroup "cpu.max" for container "hello" was "max 100000"; expected "50000 100000"')


BURSTABLE = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"
ROWS = (
    Row("res-demo", "hello", BURSTABLE, "memory.max", "268435456", "268435456", "limits.memory", True),
    Row("res-demo", "hello", BURSTABLE, "cpu.weight", "39", "10", "cpu.weight from requests.cpu (KEP-2254)", False),
    Row("res-demo", "", BURSTABLE, "cpu.max", "50000 100000", None, "pod cpu.max", False),
)


def _check(status: Status, message: str = "", *, name: str = "test_qos[burstable]", tags: tuple[str, ...] = (),
           node: str | None = "'vm'", attachments: tuple[Attachment, ...] = (),
           steps: tuple[Step, ...] = ()) -> Check:
    labels = (("parentSuite", "suites.resources"), *(("tag", tag) for tag in tags))
    parameters = (("node", node),) if node is not None else ()
    return Check(name=name, full_name="suites.resources.test_res_demo#test_qos", status=status, message=message,
                 trace="", labels=labels, parameters=parameters, steps=steps, attachments=attachments, fixtures=(),
                 duration_ms=1)


def _table(directory: Path, rows: tuple[Row, ...], name: str = "t-attachment.csv") -> Attachment:
    path = directory / name
    path.write_text(comparison_csv(rows), encoding="utf-8")
    return Attachment("expected vs actual", COMPARISON_MIME, path)


def _results(*checks: Check, environment: tuple[tuple[str, str], ...] = ()) -> RunResults:
    return RunResults(results_dir=Path("r"), checks=checks, shared_fixtures=(), environment=environment)


CPU_WEIGHT = {"owner": "res-demo/hello", "pod": "res-demo", "container": "hello", "path": BURSTABLE,
              "file": "cpu.weight", "expected": "39", "actual": "10", "rule": "cpu.weight from requests.cpu (KEP-2254)"}


def test_first_mismatch_is_the_first_differing_row_as_fields(tmp_path: Path) -> None:
    check = _check(Status.FAILED, COMPARISON, attachments=(_table(tmp_path, ROWS),))
    assert first_mismatch(check) == CPU_WEIGHT


def test_first_mismatch_is_found_in_steps_and_names_a_pod_or_the_node(tmp_path: Path) -> None:
    node_row = Row("", "", "kubepods.slice", "memory.max", "max", "1", "kubepods memory.max", False)
    pod_table = _table(tmp_path, ROWS[2:], "pod.csv")
    step = Step("compare", Status.FAILED, (Step("pod", Status.FAILED, (), (pod_table,)),), ())
    assert first_mismatch(_check(Status.FAILED, "x", steps=(step,))) == {
        "owner": "res-demo", "pod": "res-demo", "container": "", "path": BURSTABLE, "file": "cpu.max",
        "expected": "50000 100000", "actual": "(absent)", "rule": "pod cpu.max"}
    node_table = _table(tmp_path, (node_row,), "node.csv")
    assert first_mismatch(_check(Status.FAILED, "x", attachments=(node_table,)))["owner"] == "node"  # type: ignore[index]


@pytest.mark.parametrize("status", [Status.PASSED, Status.BROKEN, Status.SKIPPED, Status.FAILED])
def test_no_first_mismatch_without_a_differing_value(tmp_path: Path, status: Status) -> None:
    """A passed check, or one that compared nothing (broken, skipped, a plain assertion): null, its message says why."""
    attachments = (_table(tmp_path, ROWS[:1]),) if status is Status.FAILED else ()
    assert first_mismatch(_check(status, "node vm: ssh: connection refused", attachments=attachments)) is None


def test_a_comparison_table_linked_out_of_the_results_is_not_read(tmp_path: Path) -> None:
    outside = _table(tmp_path, ROWS, "outside.csv")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t-attachment.csv").symlink_to(outside.path)
    link = Attachment("expected vs actual", COMPARISON_MIME, tmp_path / "results" / "t-attachment.csv")
    assert first_mismatch(_check(Status.FAILED, "x", attachments=(link,))) is None


def test_document_schema(tmp_path: Path) -> None:
    results = _results(
        _check(Status.FAILED, COMPARISON, tags=("requests_limits", "vm"), attachments=(_table(tmp_path, ROWS),)),
        _check(Status.PASSED, name="test_swap", tags=("kep5359",), node=None),
        environment=(("nodeconf version", "0.1.0"), ("kubelet config sha256", "ab12"), ("profile", "1.36"),
                     ("node", "vm?memory=2048"), ("accepted cpu weight formula", "nonlinear"),
                     ("memory_capacity", "2147483648"), ("kernel_version", "6.1"),
                     ("cgroup_controllers", "cpu, memory")),
    )
    document = summary_document(Verdict("FAIL", 1, "1 check(s) failed"), results, "nodeconf run")
    assert json.loads(json.dumps(document)) == document
    assert {key: document[key] for key in ("schema", "written_by", "verdict", "exit_code", "reason", "counts")} == {
        "schema": 2, "written_by": "nodeconf run", "verdict": "FAIL", "exit_code": 1, "reason": "1 check(s) failed",
        "counts": {"total": 2, "failed": 1, "broken": 0, "skipped": 0, "passed": 1},
    }
    assert document["run"] == {"nodeconf_version": "0.1.0", "kubelet_config_sha256": "ab12", "profile": "1.36",
                               "node": "vm?memory=2048"}
    assert document["nodes"] == [{"name": "vm?memory=2048", "spec": "vm?memory=2048", "facts": {
        "memory_capacity": "2147483648", "kernel_version": "6.1", "cgroup_controllers": "cpu, memory"}}]
    failed, passed = document["checks"]
    assert failed == {
        "id": "suites.resources.test_res_demo#test_qos[burstable]", "name": "test_qos[burstable]",
        "status": "failed", "node": "vm", "suite": "resources", "source": "requests_limits",
        "message": "res-demo: 1 of 25 compared values differ from the oracle", "first_mismatch": CPU_WEIGHT,
    }
    assert (passed["node"], passed["source"], passed["message"], passed["first_mismatch"]) == (
        "vm?memory=2048", "kep5359", "", None)
    assert [(c["status"], c["about"], c["count"], c["checks"]) for c in document["causes"]] == [  # from ROWS
        ("failed", f'value of cgroup "{about}', 1, ["suites.resources.test_res_demo#test_qos[burstable]"])
        for about in ('cpu.max" for pod', 'cpu.weight" for container')]


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return {k for k in value} | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for item in value for k in _keys(item)}
    return set()


def test_every_key_is_snake_case(tmp_path: Path) -> None:
    """Keys a reader can address without quoting, whatever environment.properties calls them (issue 32)."""
    results = _results(
        _check(Status.FAILED, COMPARISON, attachments=(_table(tmp_path, ROWS),)),
        environment=(("nodeconf version", "0.1.0"), ("nodeconf commit", "abc"), ("kubelet config", "k.yaml"),
                     ("kubelet config sha256", "ab"), ("command", "nodeconf run"), ("started", "t0"),
                     ("finished", "t1"), ("controller", "host"), ("node", "vm"), ("kernel_version", "6.1")))
    document = summary_document(Verdict("FAIL", 1, "x"), results, "nodeconf report")
    facts = {k for node in document["nodes"] for k in node["facts"]}
    assert all(re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", key) for key in _keys(document) - facts)
    assert all(re.fullmatch(r"[a-z0-9_.]+", key) for key in facts)


def test_several_nodes_each_have_their_facts() -> None:
    nodes = (NodeEnvironment("a", (("name", "a"), ("position", "1"), ("node", "vm"), ("kernel_version", "6.1"))),
             NodeEnvironment("b", (("name", "b"), ("position", "2"), ("node", "vm?name=b"),
                                   ("kernel_version", "6.12"), ("runtime", "crun"))))
    results = RunResults(results_dir=Path("r"), checks=(), shared_fixtures=(), environment=(), nodes=nodes)
    document = summary_document(Verdict("NOTHING RAN", 2, "x"), results, "nodeconf run")
    assert document["nodes"] == [
        {"name": "a", "spec": "vm", "facts": {"kernel_version": "6.1"}},
        {"name": "b", "spec": "vm?name=b", "facts": {"kernel_version": "6.12", "runtime": "crun"}},
    ]


def test_a_run_without_results_is_an_error_summary(tmp_path: Path) -> None:
    outcome = Verdict("NOTHING RAN", 2, "no check was collected")
    path = write_summary(tmp_path / "reports" / "summary.json", outcome, None, "nodeconf run")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert (document["verdict"], document["exit_code"], document["checks"], document["causes"]) == (
        "NOTHING RAN", 2, [], [])
    assert document["counts"] == {"total": 0, "failed": 0, "broken": 0, "skipped": 0, "passed": 0}
    assert set(document["run"]) == {"nodeconf_version", "nodeconf_commit"}  # still names who judged
    assert document["nodes"] == []
