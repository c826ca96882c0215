"""Fixture failures become broken (infrastructure) in the Allure results; body failures stay failed."""

import json
from pathlib import Path

import pytest

from nodeconf.report.postprocess import mark_fixture_failures_broken


def _write(results: Path, name: str, body: dict[str, object]) -> None:
    (results / name).write_text(json.dumps(body), encoding="utf-8")


def _failed(uuid: str, message: str) -> dict[str, object]:
    return {"uuid": uuid, "name": f"test_{uuid}", "status": "failed", "statusDetails": {"message": message}}


def _fixture(name: str, status: str | None, message: str = "") -> dict[str, object]:
    return {"name": name, "status": status, "statusDetails": {"message": message} if message else None}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A session fixture that failed in setup for two checks, a teardown failure, a body failure, a pass."""
    _write(tmp_path, "a-result.json", _failed("a", "Failed: node vm: qemu did not start"))
    _write(tmp_path, "b-result.json", _failed("b", "Failed: node vm: qemu did not start"))
    _write(tmp_path, "c-result.json", _failed("c", "Failed: pods not deleted: res-demo"))
    _write(tmp_path, "d-result.json", _failed("d", "AssertionError: value of cgroup \"memory.max\" was \"max\""))
    _write(tmp_path, "e-result.json", {"uuid": "e", "name": "test_e", "status": "passed"})
    _write(tmp_path, "k1-container.json", {
        "children": ["a", "b"],
        "befores": [_fixture("node", "failed", "Failed: node vm: qemu did not start\n")],
        "afters": [_fixture("node::<lambda>", None)],
    })
    for uuid in ("c", "d"):
        _write(tmp_path, f"k{uuid}-container.json", {
            "children": [uuid],
            "befores": [_fixture("deploy", "passed")],
            "afters": [_fixture("deploy::1", "failed", "Failed: pods not deleted: res-demo\n")],
        })
    return tmp_path


def _statuses(results: Path) -> dict[str, object]:
    return {path.name: json.loads(path.read_text())["status"] for path in sorted(results.glob("*-result.json"))}


def test_setup_and_teardown_failures_become_broken(results: Path) -> None:
    assert sorted(mark_fixture_failures_broken(results)) == ["test_a", "test_b", "test_c"]
    assert _statuses(results) == {
        "a-result.json": "broken", "b-result.json": "broken", "c-result.json": "broken",
        "d-result.json": "failed", "e-result.json": "passed",
    }


def test_post_processing_is_idempotent(results: Path) -> None:
    mark_fixture_failures_broken(results)
    assert mark_fixture_failures_broken(results) == []
