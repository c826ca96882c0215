"""The self-contained HTML conformance report: failures by cause, totals, conformance matrix, node facts, evidence,
failures first."""

import html
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from nodeconf.report.allure_json import ReportError, read_bounded, shown
from nodeconf.report.categories import category_name
from nodeconf.report.citations import REFERENCES, UPSTREAM_CASE_LABEL, UPSTREAM_URL
from nodeconf.report.comparison import COMPARISON_MIME, parse_comparison
from nodeconf.report.html_diff import diff_section
from nodeconf.report.html_nodes import node_facts, node_matrix
from nodeconf.report.html_run import header_facts, run_header
from nodeconf.report.node_display import fact_rows, neutral_paths
from nodeconf.report.results import STATUS_ORDER, Attachment, Check, RunResults, Status, Step
from nodeconf.report.run_diff import RunDiff
from nodeconf.report.summary import run_causes
from nodeconf.report.verdict import results_verdict

MAX_EMBEDDED_CHARS = 200_000
MAX_ATTACHMENT_BYTES = 16 * 1024 * 1024
TEXT_MIMES = ("application/json", "application/yaml", "application/xml", "application/x-yaml")
COMPARISON_HEAD = (
    '<colgroup><col class="where"><col class="file"><col class="value"><col class="value"><col class="rule"></colgroup>'
    "<thead><tr><th>pod/container</th><th>file</th><th>expected</th><th>actual</th><th>rule</th></tr></thead>"
)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _sort_key(check: Check) -> tuple[int, str, str, str]:
    return (STATUS_ORDER.index(check.status), check.source, check.area, check.full_name)


def _counts_row(label: str, counter: Counter[Status]) -> str:
    cells = "".join(
        f'<td class="n {status.value if counter[status] else "zero"}">{counter[status]}</td>'
        for status in STATUS_ORDER
    )
    return f"<tr><th>{_e(label)}</th>{cells}<td class=\"n\">{sum(counter.values())}</td></tr>"


def _counts_table(title: str, groups: dict[str, Counter[Status]]) -> str:
    head = "".join(f"<th>{status.value}</th>" for status in STATUS_ORDER)
    rows = "".join(_counts_row(label, groups[label]) for label in sorted(groups))
    return (
        f'<table class="counts"><caption>{_e(title)}</caption>'
        f"<thead><tr><th></th>{head}<th>total</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _grouped(checks: Iterable[Check], key: str) -> dict[str, Counter[Status]]:
    groups: dict[str, Counter[Status]] = {}
    for check in checks:
        groups.setdefault(getattr(check, key), Counter())[check.status] += 1
    return groups


def _bar(counter: Counter[Status]) -> str:
    total = sum(counter.values()) or 1
    parts = "".join(
        f'<span class="{status.value}" style="width:{100 * counter[status] / total:.1f}%"></span>'
        for status in STATUS_ORDER
        if counter[status]
    )
    return f'<div class="bar">{parts}</div>'


def _matrix(checks: Iterable[Check]) -> str:
    cells: dict[tuple[str, str], Counter[Status]] = {}
    for check in checks:
        cells.setdefault((check.source, check.area), Counter())[check.status] += 1
    head = "".join(f"<th>{status.value}</th>" for status in STATUS_ORDER)
    rows = []
    for source, area in sorted(cells):
        counter = cells[(source, area)]
        verdict = next((status for status in STATUS_ORDER if counter[status]), Status.PASSED)
        marks = "".join(
            f'<td class="n {status.value if counter[status] else "zero"}">{counter[status] or ""}</td>'
            for status in STATUS_ORDER
        )
        rows.append(
            f'<tr><td>{_e(source)}</td><th>{_e(area)}</th><td class="verdict {verdict.value}">'
            f"{verdict.value}</td>{marks}<td>{_bar(counter)}</td></tr>"
        )
    return (
        '<table class="matrix"><thead><tr><th>source</th><th>area</th><th>verdict</th>'
        f"{head}<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _node(results: RunResults) -> str:
    """The facts of a one-node run that its header does not show, as node_display shows them (several nodes: each
    in node_facts)."""
    if results.nodes:
        return ""
    facts = fact_rows(results.environment, header_facts())
    rows = "".join(f"<tr><th>{_e(key)}</th><td>{_e(value)}</td></tr>" for key, value in facts)
    if not rows:
        return '<p class="none">No node facts were recorded (environment.properties is missing).</p>'
    return f'<table class="facts"><tbody>{rows}</tbody></table>'


def _read_text(attachment: Attachment) -> str | None:
    """The attachment's text, cut to MAX_EMBEDDED_CHARS; a note instead when it is not a regular file inside the
    results directory (a link out of it is never followed) or is larger than MAX_ATTACHMENT_BYTES."""
    if not (attachment.mime.startswith("text/") or attachment.mime in TEXT_MIMES):
        return None
    try:
        data = read_bounded(attachment.path, MAX_ATTACHMENT_BYTES, attachment.path.parent)
    except ReportError as error:
        return f"(attachment not embedded: {error})"
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_EMBEDDED_CHARS:
        return text[:MAX_EMBEDDED_CHARS] + f"\n... ({len(text) - MAX_EMBEDDED_CHARS} more characters cut)"
    return text


def _step_evidence(where: str, step: Step) -> Iterator[tuple[str, Attachment]]:
    for attachment in step.attachments:
        yield where, attachment
    for child in step.steps:
        yield from _step_evidence(f"{where} › {child.name}", child)


def _evidence(check: Check) -> list[tuple[str, Attachment]]:
    """Every attachment of a check with where it came from: its fixtures, its steps, the test body."""
    found: list[tuple[str, Attachment]] = []
    for fixture in check.fixtures:
        found.extend(_step_evidence(f"fixture {fixture.name}", fixture))
    for step in check.steps:
        found.extend(_step_evidence(f"step {step.name}", step))
    found.extend(("test", attachment) for attachment in check.attachments)
    return found


def _matches(row: dict[str, str]) -> bool:
    return row.get("ok", "").lower() not in ("no", "false", "0")


def _where(row: dict[str, str]) -> str:
    return f"{row.get('pod', '')}/{row.get('container', '')}".rstrip("/")


def _comparison_table(cls: str, rows: list[dict[str, str]]) -> str:
    """Rows grouped by cgroup path: the path once as a group's sub-header, then pod/container, file, values, rule."""
    groups: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(row.get("cgroup_path", ""), []).append(row)
    bodies = []
    for path, members in groups.items():
        body = "".join(
            f'<tr class="{cls}"><td>{_e(_where(row))}</td>'
            f"<td><code>{_e(row.get('file', ''))}</code></td>"
            f'<td class="expected"><code>{_e(row.get("expected", ""))}</code></td>'
            f'<td class="actual"><code>{_e(row.get("actual", ""))}</code></td>'
            f'<td>{_e(row.get("rule", ""))}</td></tr>'
            for row in members
        )
        bodies.append(
            f'<tbody><tr class="path"><th colspan="5" scope="rowgroup"><code>{_e(path)}</code></th></tr>{body}</tbody>'
        )
    return f'<table class="comparison {cls}">{COMPARISON_HEAD}{"".join(bodies)}</table>'


def _comparison(rows: list[dict[str, str]]) -> str:
    """Mismatching rows first, in full; the matching rows below, collapsed."""
    mismatches = [row for row in rows if not _matches(row)]
    matching = [row for row in rows if _matches(row)]
    shown = _comparison_table("mismatch", mismatches) if mismatches else ""
    collapsed = (
        f'<details class="matching"><summary>{len(matching)} matching value{"" if len(matching) == 1 else "s"}'
        f"</summary>{_comparison_table('ok', matching)}</details>"
        if matching
        else ""
    )
    return shown + collapsed


def _attachment_block(origin: str, attachment: Attachment) -> str:
    text = _read_text(attachment)
    title = f"{_e(attachment.name)} <span class=\"meta\">{_e(attachment.mime)} · {_e(origin)}</span>"
    if text is None:
        return f'<p class="binary">{title}: binary attachment <code>{_e(attachment.path.name)}</code></p>'
    if attachment.mime == COMPARISON_MIME:
        rows = parse_comparison(text)
        if rows is not None:
            return f'<div class="evidence"><h4>{title}</h4>{_comparison(rows)}</div>'
    return f'<details class="attachment"><summary>{title}</summary><pre>{_e(text)}</pre></details>'


def _steps(steps: tuple[Step, ...]) -> str:
    if not steps:
        return ""
    items = "".join(
        f'<li><span class="dot {step.status.value}"></span>{_e(step.name)}{_steps(step.steps)}</li>'
        for step in steps
    )
    return f'<ol class="steps">{items}</ol>'


def _check(check: Check) -> str:
    evidence = _evidence(check)
    comparisons = [block for block in evidence if block[1].mime == COMPARISON_MIME]
    others = [block for block in evidence if block[1].mime != COMPARISON_MIME]
    meta = " · ".join(_e(part) for part in (check.source, check.area, check.rule) if part)
    category = category_name(check.status.value)
    params = "".join(f"<span class=\"param\">{_e(name)}={_e(value)}</span>" for name, value in check.parameters)
    params += f'<span class="category {check.status.value}">{_e(category)}</span>' if category else ""
    text = neutral_paths(check.message.strip())
    message = f'<pre class="message">{_e(text)}</pre>' if text else ""
    trace = (
        f'<details class="trace"><summary>details</summary><pre>{_e(neutral_paths(check.trace))}</pre></details>'
        if check.trace
        else ""
    )
    upstream = "".join(
        f'<p class="upstream">mirrors upstream <a href="{_e(UPSTREAM_URL.format(file=file))}"><code>{_e(file)}'
        f"</code></a> case “{_e(case)}”</p>"
        for file, _, case in (value.partition(": ") for key, value in check.labels if key == UPSTREAM_CASE_LABEL))
    is_open = " open" if check.status in (Status.FAILED, Status.BROKEN) else ""
    reason = f'<span class="reason">{_e(check.first_line)}</span>' if check.status is Status.SKIPPED else ""
    return (
        f'<details class="check {check.status.value}"{is_open}><summary>'
        f'<span class="badge {check.status.value}">{check.status.value}</span>'
        f'<span class="name">{_e(check.name)}</span><span class="meta">{meta}</span>{reason}'
        f'<span class="duration">{check.duration_ms / 1000:.1f} s</span></summary>'
        f'<div class="body"><p class="id"><code>{_e(check.full_name)}</code> {params}</p>{upstream}{message}'
        f"{''.join(_attachment_block(origin, a) for origin, a in comparisons)}"
        f"{_steps(check.steps)}"
        f"{''.join(_attachment_block(origin, a) for origin, a in others)}{trace}</div></details>"
    )


def _shared(results: RunResults) -> str:
    if not results.shared_fixtures:
        return ""
    blocks = "".join(
        _attachment_block(origin, attachment)
        for shared in results.shared_fixtures
        for origin, attachment in _step_evidence(
            f"fixture {shared.fixture.name}, shared by {shared.checks} checks", shared.fixture
        )
    )
    return f'<section id="shared"><h2>Evidence shared by several checks</h2>{blocks}</section>'


BANNER_CLASS = {"PASS": "passed", "FAIL": "failed", "ERROR": "broken", "NOTHING RAN": "skipped",
                "INTERRUPTED": "broken"}


def _banner(results: RunResults) -> str:
    outcome = results_verdict(results)
    chips = "".join(
        f'<span class="chip {status.value}">{results.count(status)} {status.value}</span>' for status in STATUS_ORDER
    )
    note = f'<p class="interrupted">{_e(outcome.reason)}</p>' if results.interrupted else ""
    return (
        f'<div class="banner {BANNER_CLASS[outcome.label]}"><span class="verdict">{outcome.label}</span>'
        f'<span class="total">{len(results.checks)} checks</span>{chips}</div>{note}'
    )


def _causes(results: RunResults) -> str:
    """Failed and broken checks grouped by cause, largest first, each with one example line and its checks."""
    found = run_causes(results)
    if not found:
        return ""
    rows = "".join(
        f'<tr><td class="n {c.status}">{len(c.checks)}</td><td>{_e(c.status)}</td><th>{_e(c.about)}</th>'
        f'<td><code>{_e(neutral_paths(c.example))}</code>'
        + (f'<p class="advice">what to check: {_e(c.advice)}</p>' if c.advice else "")
        + "<details><summary>the checks</summary><ul>"
        + "".join(f"<li><code>{_e(check)}</code></li>" for check in c.checks)
        + "</ul></details></td></tr>"
        for c in found)
    return ('<section id="causes"><h2>Failures by cause</h2><table class="causes"><thead><tr><th>checks</th>'
            f"<th>status</th><th>about</th><th>example</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _references() -> str:
    """The documents the rules cite by name, in full."""
    items = "".join(f"<li><b>{_e(name)}</b>: {_e(full)}</li>" for name, full in REFERENCES)
    return f'<section id="references"><h2>References</h2><ul class="references">{items}</ul></section>'


def render_html(results: RunResults, generated: datetime | None = None, diff: RunDiff | None = None) -> str:
    """The whole report as one HTML document with inline CSS and no scripts or external resources; with `diff`,
    the changes since an earlier run come first."""
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    css = resources.files("nodeconf.report").joinpath("report.css").read_text(encoding="utf-8")
    checks = sorted(results.checks, key=_sort_key)
    nodes = node_matrix(results)  # several nodes: node × check above the details
    nodes_link = '<a href="#nodes">nodes</a>' if nodes else ""
    causes = _causes(results)
    causes_link = '<a href="#causes">causes</a>' if causes else ""
    changes = diff_section(diff) if diff is not None else ""
    changes_link = '<a href="#diff">changes</a>' if changes else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>nodeconf conformance report</title><style>{css}</style></head><body>"
        f"<header><h1>nodeconf conformance report</h1><p class=\"meta\">generated {_e(when)} from "
        f"<code>{_e(neutral_paths(str(results.results_dir)))}</code></p>{_banner(results)}"
        f"{run_header(results.environment)}"
        f'<nav>{changes_link}{causes_link}{nodes_link}<a href="#totals">totals</a><a href="#matrix">matrix</a>'
        f'<a href="#node">node</a><a href="#checks">checks</a></nav></header><main>{changes}{causes}{nodes}'
        '<section id="totals"><h2>Totals</h2><div class="side">'
        f"{_counts_table('per suite', _grouped(checks, 'suite'))}"
        f"{_counts_table('per source', _grouped(checks, 'source'))}</div></section>"
        f'<section id="matrix"><h2>Conformance matrix</h2>{_matrix(checks)}</section>'
        f'<section id="node"><h2>Node</h2>{_node(results)}{node_facts(results)}</section>'
        f'<section id="checks"><h2>Checks, failures first</h2>{"".join(_check(c) for c in checks)}</section>'
        f"{_shared(results)}{_references()}</main></body></html>\n"
    )


def write_html(results: RunResults, path: Path, diff: RunDiff | None = None) -> Path:
    """Write the report to `path` (parents created) and return it; ReportError when it cannot be written."""
    page = render_html(results, diff=diff)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(page.encode("utf-8", "replace"))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ReportError(f"{shown(path)}: cannot write the report ({reason})") from None
    return path
