"""Reports of a several-node run (issue 14): JUnit split into one testsuite per node, the HTML node × check matrix
with each node's layer facts, and the verdict the worst over all nodes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nodeconf.report.html import render_html
from nodeconf.report.junit_nodes import split_junit_by_node
from nodeconf.report.properties import write_properties
from nodeconf.report.results import load_results
from nodeconf.report.verdict import EXIT_CHECK_FAILED, EXIT_ERROR, EXIT_PASSED, results_verdict

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="nodeconf" errors="1"
failures="1" skipped="0" tests="5" time="9.0" timestamp="t" hostname="h"><properties><property name="run_complete"
value="true" /></properties>
<testcase classname="suites.a" name="test_x[vm]" time="1.0" />
<testcase classname="suites.a" name="test_x[b]" time="2.0"><error message="node b: refused" /></testcase>
<testcase classname="suites.a" name="test_y[vm-burstable]" time="3.0"><failure message="x" /></testcase>
<testcase classname="suites.a" name="test_y[b-burstable]" time="2.5"><skipped message="s" /></testcase>
<testcase classname="suites.a" name="test_pure" time="0.5" />
</testsuite></testsuites>"""


def test_junit_gets_one_testsuite_per_node(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    split_junit_by_node(path, ["vm", "b"])
    suites = {suite.get("name"): suite for suite in ET.parse(path).getroot().iter("testsuite")}
    assert list(suites) == ["vm", "b", "nodeconf"]
    counts = {name: {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped", "time")}
              for name, suite in suites.items()}
    assert counts == {
        "vm": {"tests": "2", "failures": "1", "errors": "0", "skipped": "0", "time": "4.000"},
        "b": {"tests": "2", "failures": "0", "errors": "1", "skipped": "1", "time": "4.500"},
        "nodeconf": {"tests": "1", "failures": "0", "errors": "0", "skipped": "0", "time": "0.500"},
    }
    properties = {p.get("name"): p.get("value") for p in suites["b"].iter("property")}
    assert properties == {"run_complete": "true", "node": "b"}


def _result(results: Path, name: str, node: str, status: str) -> None:
    body = {"uuid": f"u-{name}", "historyId": f"h-{name}", "name": name, "fullName": f"suites.a#{name.split('[')[0]}",
            "status": status, "start": 1000, "stop": 2000,
            "labels": [{"name": "node", "value": node}] if node else []}
    (results / f"u-{name}-result.json").write_text(json.dumps(body), encoding="utf-8")


def _results(tmp_path: Path, statuses: dict[str, str]) -> Path:
    """Checks test_x and test_y[burstable] on nodes vm and b; `statuses` maps a check name to its status."""
    results = tmp_path / "allure-results"
    results.mkdir()
    for name, status in statuses.items():
        node = name.partition("[")[2].partition("-")[0].rstrip("]")
        _result(results, name, node, status)
    write_properties(results / "environment.properties", [("node", "vm, vm?name=b")])
    write_properties(results / "environment-vm.properties",
                     [("name", "vm"), ("position", "1"), ("node", "vm"), ("kernel_version", "6.12.1-amd64"),
                      ("memory_capacity", "1")])
    write_properties(results / "environment-b.properties",
                     [("name", "b"), ("position", "2"), ("node", "vm?name=b"), ("kernel_version", "6.1.0-13-amd64"),
                      ("debian_release", "12")])
    return results


class Cells(HTMLParser):
    """The text of each row of the table of class `nodes`."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.inside = ("class", "nodes") in attrs
        elif tag == "tr" and self.inside:
            self.rows.append([])
        elif tag in ("td", "th") and self.inside:
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


UNKNOWN = "not recorded (the node's facts name no runtime)"
PLAYED = "nodeconf's enforcer (it plays the kubelet: the node's own kubelet is not exercised)"


def test_html_has_a_node_by_check_matrix_with_layer_facts(tmp_path: Path) -> None:
    results = load_results(_results(tmp_path, {"test_x[vm]": "passed", "test_x[b]": "broken",
                                               "test_y[vm-burstable]": "failed", "test_y[b-burstable]": "skipped"}))
    parser = Cells()
    parser.feed(render_html(results))
    assert parser.rows == [
        ["node", "vm", "b"],
        ["spec", "vm", "vm?name=b"],
        ["kernel", "6.12.1-amd64", "6.1.0-13-amd64"],
        ["Debian release", "", "12"],
        ["containers started by", *[UNKNOWN] * 2],  # no runtime recorded: not guessed
        ["kubelet", *[PLAYED] * 2],
        ["verdict", "FAIL", "ERROR"],
        ["suites.a#test_x", "passed", "broken"],
        ["suites.a#test_y[burstable]", "failed", "skipped"],
    ]
    page = render_html(results)
    assert page.index('id="nodes"') < page.index('id="checks"')  # above the per-check details


def test_single_node_html_has_no_node_matrix(tmp_path: Path) -> None:
    results = tmp_path / "allure-results"
    results.mkdir()
    _result(results, "test_x[vm]", "", "passed")
    assert 'id="nodes"' not in render_html(load_results(results))


@pytest.mark.parametrize(("statuses", "code", "label"), [
    pytest.param({"test_x[vm]": "passed", "test_x[b]": "passed"}, EXIT_PASSED, "PASS", id="all-pass"),
    pytest.param({"test_x[vm]": "passed", "test_x[b]": "failed"}, EXIT_CHECK_FAILED, "FAIL", id="one-fails"),
    pytest.param({"test_x[vm]": "failed", "test_x[b]": "broken"}, EXIT_ERROR, "ERROR", id="broken-is-worse"),
    pytest.param({"test_x[vm]": "passed", "test_x[b]": "skipped"}, EXIT_ERROR, "NOTHING RAN", id="b-ran-nothing"),
])
def test_the_verdict_is_the_worst_over_all_nodes(tmp_path: Path, statuses: dict[str, str], code: int,
                                                 label: str) -> None:
    outcome = results_verdict(load_results(_results(tmp_path, statuses)))
    assert (outcome.code, outcome.label) == (code, label)
    assert outcome.reason.startswith("worst of 2 nodes: ")


def test_the_summary_counts_each_node(tmp_path: Path) -> None:
    from nodeconf.report.summary import summary_lines

    results = load_results(_results(tmp_path, {"test_x[vm]": "passed", "test_x[b]": "broken"}))
    lines = summary_lines(results, [])
    assert lines[1:3] == ["  node vm: 1 checks: 0 failed, 0 broken, 0 skipped, 1 passed",
                          "  node b: 1 checks: 0 failed, 1 broken, 0 skipped, 0 passed"]
