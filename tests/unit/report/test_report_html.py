"""The HTML report and `nodeconf report`, from an Allure results directory written here by hand."""

import argparse
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nodeconf.cli import report as report_cli
from nodeconf.errors import InputError
from nodeconf.report import generate
from nodeconf.report.allure_html import allure_cli, without_analytics, write_allure_html
from nodeconf.report.html import render_html
from nodeconf.report.results import ReportError, Status, load_results

POD_PATH = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"
CONTAINER_PATH = f"{POD_PATH}/cri-containerd-c1.scope"
COMPARISON = (
    "pod,container,cgroup_path,file,expected,actual,rule,ok\n"
    f"res-demo,,{POD_PATH},memory.max,max,max,pod memory.max without pod-level limit,yes\n"
    f"res-demo,hello,{CONTAINER_PATH},memory.max,536870912,536870912,limits.memory,yes\n"
    f"res-demo,hello,{CONTAINER_PATH},memory.high,510025728,max,"
    "Memory QoS: floor((req + 0.9*(lim-req))/page)*page,no\n"
)


def _labels(epic: str, feature: str, story: str, package: str) -> list[dict[str, str]]:
    return [{"name": "epic", "value": epic}, {"name": "feature", "value": feature},
            {"name": "story", "value": story}, {"name": "parentSuite", "value": package},
            {"name": "suite", "value": "test_checks"}]


def _result(results: Path, uuid: str, name: str, status: str, labels: list[dict[str, str]], **extra: object) -> None:
    body = {"uuid": uuid, "historyId": f"h-{name}", "name": name, "fullName": f"suites.x#{name}",
            "status": status, "labels": labels, "start": 1000, "stop": 3500, **extra}
    (results / f"{uuid}-result.json").write_text(json.dumps(body), encoding="utf-8")


def _attachment(results: Path, source: str, text: str, name: str, mime: str) -> dict[str, str]:
    (results / source).write_text(text, encoding="utf-8")
    return {"name": name, "source": source, "type": mime}


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """Four checks (passed, failed with evidence, skipped, broken), two fixture containers, node facts."""
    results = tmp_path / "allure-results"
    results.mkdir()
    comparison = _attachment(results, "c1-attachment.csv", COMPARISON, "expected vs actual", "text/csv")
    manifest = _attachment(results, "m1-attachment.yaml", "kind: Pod\nmetadata: {name: res-demo}\n",
                           "res-demo.yaml", "application/yaml")
    _result(results, "u-pass", "test_swap_limit", "passed",
            _labels("KEP-5359", "swap", "limited swap", "suites.swap"))
    _result(results, "u-fail", "test_memory_high", "failed",
            _labels("Memory QoS v1.36", "memory_qos", "memory.high", "suites.memory_qos"),
            statusDetails={"message": 'AssertionError: value of cgroup "memory.high" was "max"; expected '
                           '"510025728"\nassert \'max\' == \'510025728\'', "trace": "Traceback <frame>"},
            steps=[{"name": "deploy res-demo", "status": "passed", "attachments": [manifest], "steps": []}],
            attachments=[comparison], parameters=[{"name": "node", "value": "'vm'"}])
    _result(results, "u-skip", "test_qos_needs_swap", "skipped",
            _labels("Requests/limits article", "resources", "qos", "suites.resources"),
            statusDetails={"message": "Skipped: node has no swap"})
    _result(results, "u-broken", "test_swap_<unreachable>", "broken",
            _labels("KEP-5359", "swap", "limited swap", "suites.swap"),
            statusDetails={"message": "ConnectionError: ssh: Connection refused"})
    log = _attachment(results, "l1-attachment.txt", "enforcer: started\n", "enforcer log", "text/plain")
    facts = _attachment(results, "f1-attachment.json", '{"kernel": "6.1.0-28-amd64"}', "node facts",
                        "application/json")
    containers = {
        "k1": {"children": ["u-fail"], "befores": [{"name": "pod", "status": "passed", "attachments": [log]}]},
        "k2": {"children": ["u-pass", "u-fail", "u-skip"],
               "befores": [{"name": "node", "status": "passed", "attachments": [facts]}]},
    }
    for uuid, container in containers.items():
        (results / f"{uuid}-container.json").write_text(json.dumps({"uuid": uuid, **container}), encoding="utf-8")
    (results / "environment.properties").write_text(
        "node=vm\nkernel=6.1.0-28-amd64\npageSize=4096\nswapCapacity=1073741824\n", encoding="utf-8")
    return results


@dataclass
class Table:
    cls: str
    inside: str = ""
    caption: str = ""
    rows: list[list[str]] = field(default_factory=list)
    row_classes: list[str] = field(default_factory=list)


class ReportParser(HTMLParser):
    """Tables (class, enclosing <details>, caption, cell texts) and the checks' (status, name) in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[Table] = []
        self.checks: list[tuple[str, str]] = []
        self.external: list[str] = []
        self._details: list[str] = []
        self._text: list[str] | None = None
        self._target = ""
        self._status = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        cls = attributes.get("class") or ""
        self.external += [value for name, value in attrs if name in ("src", "href") and value and "//" in value]
        if tag in ("script", "link", "img", "iframe"):
            self.external.append(tag)
        if tag == "details":
            self._details.append(cls)
        if tag == "table":
            self.tables.append(Table(cls, self._details[-1] if self._details else ""))
        elif tag == "tr" and self.tables:
            self.tables[-1].rows.append([])
            self.tables[-1].row_classes.append(cls)
        elif tag in ("td", "th", "caption") and self.tables:
            self._text, self._target = [], tag
        elif tag == "details" and cls.startswith("check "):
            self._status = cls.split()[1]
        elif tag == "span" and cls == "name" and self._status:
            self._text, self._target = [], "name"

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self._details.pop()
        if self._text is None or tag not in (self._target, "span" if self._target == "name" else ""):
            return
        text = "".join(self._text).strip()
        if self._target == "caption":
            self.tables[-1].caption = text
        elif self._target == "name":
            self.checks.append((self._status, text))
            self._status = ""
        else:
            self.tables[-1].rows[-1].append(text)
        self._text = None


def _parse(results_dir: Path) -> tuple[ReportParser, str]:
    page = render_html(load_results(results_dir))
    parser = ReportParser()
    parser.feed(page)
    return parser, page


def _table(parser: ReportParser, cls: str, caption: str = "") -> Table:
    return next(t for t in parser.tables if t.cls == cls and t.caption == caption)


def test_totals_per_suite_and_per_source(results_dir: Path) -> None:
    parser, _ = _parse(results_dir)
    header = ["", "failed", "broken", "skipped", "passed", "total"]
    assert _table(parser, "counts", "per suite").rows == [
        header, ["memory_qos", "1", "0", "0", "0", "1"], ["resources", "0", "0", "1", "0", "1"],
        ["swap", "0", "1", "0", "1", "2"],
    ]
    assert _table(parser, "counts", "per source").rows == [
        header, ["KEP-5359", "0", "1", "0", "1", "2"], ["Memory QoS v1.36", "1", "0", "0", "0", "1"],
        ["Requests/limits article", "0", "0", "1", "0", "1"],
    ]


def test_conformance_matrix_feature_by_result(results_dir: Path) -> None:
    parser, _ = _parse(results_dir)
    assert _table(parser, "matrix").rows == [
        ["source", "area", "verdict", "failed", "broken", "skipped", "passed", ""],
        ["KEP-5359", "swap", "broken", "", "1", "", "1", ""],
        ["Memory QoS v1.36", "memory_qos", "failed", "1", "", "", "", ""],
        ["Requests/limits article", "resources", "skipped", "", "", "1", "", ""],
    ]


def test_node_facts_from_environment_properties(results_dir: Path) -> None:
    parser, _ = _parse(results_dir)
    assert _table(parser, "facts").rows == [  # the spec is the header's; each fact once
        ["kernel", "6.1.0-28-amd64"], ["pageSize", "4096"], ["swapCapacity", "1073741824"],
    ]


def test_checks_listed_failures_first(results_dir: Path) -> None:
    parser, _ = _parse(results_dir)
    assert parser.checks == [
        ("failed", "test_memory_high"), ("broken", "test_swap_<unreachable>"),
        ("skipped", "test_qos_needs_swap"), ("passed", "test_swap_limit"),
    ]


def test_failing_check_shows_expected_and_actual_side_by_side(results_dir: Path) -> None:
    parser, page = _parse(results_dir)
    mismatches = _table(parser, "comparison mismatch")
    assert mismatches.rows == [
        ["pod/container", "file", "expected", "actual", "rule"],
        [CONTAINER_PATH],
        ["res-demo/hello", "memory.high", "510025728", "max", "Memory QoS: floor((req + 0.9*(lim-req))/page)*page"],
    ]
    assert mismatches.row_classes == ["", "path", "mismatch"]
    failed_section = page[page.index('class="check failed"'):page.index('class="check broken"')]
    assert "res-demo.yaml" in failed_section and "step deploy res-demo" in failed_section
    assert "fixture pod" in failed_section and "enforcer: started" in failed_section
    assert '<span class="category failed">Product defect</span>' in failed_section


def test_failure_message_shown_in_full(results_dir: Path) -> None:
    _, page = _parse(results_dir)
    message = (
        '<pre class="message">AssertionError: value of cgroup &quot;memory.high&quot; was &quot;max&quot;; '
        "expected &quot;510025728&quot;\nassert &#x27;max&#x27; == &#x27;510025728&#x27;</pre>"
    )
    assert message in page


def test_mismatches_come_before_the_matching_values(results_dir: Path) -> None:
    _, page = _parse(results_dir)
    mismatch = page.index('<tr class="mismatch">')
    assert mismatch < page.index('<details class="matching">') < page.index('<tr class="ok">')


def test_matching_values_are_collapsed_and_grouped_by_cgroup_path(results_dir: Path) -> None:
    parser, page = _parse(results_dir)
    matching = _table(parser, "comparison ok")
    assert matching.inside == "matching"
    assert _table(parser, "comparison mismatch").inside.startswith("check ")
    assert "<summary>2 matching values</summary>" in page
    assert matching.rows == [
        ["pod/container", "file", "expected", "actual", "rule"],
        [POD_PATH],
        ["res-demo", "memory.max", "max", "max", "pod memory.max without pod-level limit"],
        [CONTAINER_PATH],
        ["res-demo/hello", "memory.max", "536870912", "536870912", "limits.memory"],
    ]
    assert matching.row_classes == ["", "path", "ok", "path", "ok"]


def test_shared_fixture_evidence_listed_once(results_dir: Path) -> None:
    _, page = _parse(results_dir)
    assert page.count("fixture node, shared by 3 checks") == 1


def test_report_is_self_contained_and_escaped(results_dir: Path) -> None:
    parser, page = _parse(results_dir)
    assert parser.external == []
    assert "test_swap_&lt;unreachable&gt;" in page and "<unreachable>" not in page
    assert "Traceback &lt;frame&gt;" in page


def test_reruns_keep_the_last_attempt(results_dir: Path) -> None:
    _result(results_dir, "u-rerun", "test_swap_limit", "failed",
            _labels("KEP-5359", "swap", "limited swap", "suites.swap"), start=100, stop=200)
    statuses = {check.name: check.status for check in load_results(results_dir).checks}
    assert statuses["test_swap_limit"] is Status.PASSED
    assert len(statuses) == 4


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param(lambda d: None, "no such results directory", id="missing-dir"),
        pytest.param(lambda d: d.mkdir(), "no Allure results", id="empty-dir"),
        pytest.param(lambda d: (d.mkdir(), (d / "x-result.json").write_text("{oops")), "x-result.json: unreadable",
                     id="bad-json"),
    ],
)
def test_unusable_results_are_one_line_errors(tmp_path: Path, setup: object, message: str) -> None:
    directory = tmp_path / "results"
    setup(directory)  # type: ignore[operator]
    with pytest.raises(ReportError, match=message) as raised:
        load_results(directory)
    assert "\n" not in str(raised.value)


def _report_args(results_dir: Path, output: Path | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    report_cli.add_parser(parser.add_subparsers())
    argv = ["report", str(results_dir), *(["-o", str(output)] if output else [])]
    return parser.parse_args(argv)


def test_nodeconf_report_regenerates_html(results_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(generate, "allure_cli", lambda: None)
    html = results_dir.parent / "html" / "nodeconf-report.html"
    html.parent.mkdir()
    html.write_text("stale", encoding="utf-8")
    (html.parent / "allure-report.html").write_text("stale", encoding="utf-8")
    assert report_cli.run(_report_args(results_dir)) == 0
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert not (html.parent / "allure-report.html").exists()
    out, err = capsys.readouterr()
    assert out.splitlines()[:3] == [
        "nodeconf: 4 checks: 1 failed, 1 broken, 1 skipped, 1 passed",
        '  FAILED  suites.x#test_memory_high: AssertionError: value of cgroup "memory.high" was "max"; '
        'expected "510025728"',
        "  BROKEN  suites.x#test_swap_<unreachable>: ConnectionError: ssh: Connection refused",
    ]
    assert f"report: {html}" in out
    assert "Allure 3 is not installed" in err


def test_nodeconf_report_without_results_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such results directory"):
        report_cli.run(_report_args(tmp_path / "nowhere", tmp_path / "out"))


@pytest.mark.skipif(allure_cli() is None, reason="Allure 3 not installed (nodeconf/report/install-tool.sh)")
def test_allure_single_file_html(results_dir: Path, tmp_path: Path) -> None:
    cli = allure_cli()
    assert cli is not None
    page = write_allure_html(cli, results_dir, tmp_path / "allure.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert 'src="http' not in page and 'href="http' not in page
    assert "googletagmanager" not in page and "gtag(" not in page


def test_allure_analytics_tag_is_removed() -> None:
    page = (
        '<body><div id="app"></div>\n<script async src="https://www.googletagmanager.com/gtag/js?id=G-X"></script>\n'
        "    <script>\n window.dataLayer = window.dataLayer || [];\n function gtag(){dataLayer.push(arguments);}\n"
        "gtag('config', 'G-X', {\"report\": \"awesome\"});\n    </script>\n<script>window.data=1</script></body>"
    )
    assert without_analytics(page) == '<body><div id="app"></div>\n\n<script>window.data=1</script></body>'


def test_failures_are_grouped_by_cause_before_the_totals(results_dir: Path) -> None:
    parser, page = _parse(results_dir)
    rows = _table(parser, "causes").rows
    assert [row[:3] for row in rows] == [["checks", "status", "about"],
                                         ["1", "broken", "ConnectionError: ssh: Connection refused"],
                                         ["1", "failed", 'value of cgroup "memory.high" for container']]  # its table
    assert 'value of cgroup "memory.high" for container "hello" of pod "res-demo" was "max"; expected "510025728"' \
        in rows[2][3]
    assert page.index('id="causes"') < page.index('id="totals"') and 'href="#causes"' in page


def test_a_run_without_failures_has_no_causes(tmp_path: Path) -> None:
    results = tmp_path / "allure-results"
    results.mkdir()
    _result(results, "u-pass", "test_swap_limit", "passed", _labels("KEP-5359", "swap", "limited swap", "suites.swap"))
    page = render_html(load_results(results))
    assert 'id="causes"' not in page and 'href="#causes"' not in page
