"""Every check of the default run names its source in the report (issue 32 item 4): the Allure epic each check is
given at collection, read from a real collection of suites/ (no node is opened to collect), and the upstream file
and case of a mirrored check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.fixtures.evidence import check_sources, source_title, upstream_cases
from nodeconf.fixtures.markers import SOURCE_MARKERS
from nodeconf.report.citations import REFERENCES, UPSTREAM_URL

ROOT = Path(__file__).resolve().parents[3]
# A plugin that writes each collected check's epic labels (nodeconf.fixtures.evidence adds them at collection).
PROBE = '''
import json
import os


def pytest_collection_finish(session):
    found = {item.nodeid: [str(mark.args[0]) for mark in item.iter_markers("allure_label")
                           if mark.kwargs.get("label_type") == "epic"] for item in session.items}
    with open(os.environ["SOURCES_OUT"], "w") as out:
        json.dump(found, out)
'''


def test_every_check_of_the_default_run_names_a_source(tmp_path: Path) -> None:
    (tmp_path / "source_probe.py").write_text(PROBE, encoding="utf-8")
    out = tmp_path / "sources.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "SOURCES_OUT": str(out)}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "source_probe",
                           "-p", "no:cacheprovider", "suites"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    sources = json.loads(out.read_text(encoding="utf-8"))
    assert len(sources) > 200  # the whole default run, not a few modules
    assert [check for check, epics in sources.items() if not epics] == []
    upstream = {epic for check, epics in sources.items() if "suites/upstream/" in check for epic in epics}
    # a check under suites/upstream mirrors an upstream case, or (kubelet_code) asserts what no upstream case does
    assert upstream and all(epic.startswith(("upstream e2e", "Kubernetes node e2e", source_title("kubelet_code")))
                            for epic in upstream)


@pytest.mark.parametrize("marker", sorted(SOURCE_MARKERS))
def test_every_source_marker_has_a_title(marker: str) -> None:
    assert source_title(marker).strip() and "source is" not in source_title(marker)


def test_upstream_file_and_case_are_the_source_when_given() -> None:
    marks = [pytest.mark.upstream_e2e(file="test/e2e_node/pids_test.go", case="PodPidsLimit / a").mark,
             pytest.mark.upstream_e2e(file="test/e2e_node/pids_test.go", case="PodPidsLimit / b").mark,
             pytest.mark.kep2400.mark]
    assert check_sources(marks) == ["upstream e2e test/e2e_node/pids_test.go", "KEP-2400"]
    assert upstream_cases(marks) == [("test/e2e_node/pids_test.go", "PodPidsLimit / a"),
                                     ("test/e2e_node/pids_test.go", "PodPidsLimit / b")]
    assert UPSTREAM_URL.format(file="test/e2e_node/pids_test.go").endswith("/kubernetes/blob/master/"
                                                                            "test/e2e_node/pids_test.go")


def test_a_bare_upstream_marker_still_names_the_upstream_tests() -> None:
    assert check_sources([pytest.mark.upstream_e2e.mark]) == ["Kubernetes node e2e tests"]


@pytest.mark.parametrize("marker", ["kep5359", "kep2400", "memory_qos", "requests_limits"])
def test_a_document_source_is_named_as_the_references_list_it(marker: str) -> None:
    assert source_title(marker) in dict(REFERENCES)
