"""docs/upstream-coverage.md: each in-scope upstream node e2e case, the checks that mirror it or why none does.

Source: the suites' upstream_e2e(file=, case=) markers (nodeconf/fixtures/markers.py) and tools/upstream_cases.yaml.
Run from the repository root: python -m tools.upstream_coverage [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import string
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CASES_FILE = ROOT / "tools" / "upstream_cases.yaml"
DOC = ROOT / "docs" / "upstream-coverage.md"
MARKER = "upstream_e2e"
NODE_PARAM = "node"  # nodeconf/fixtures/node.py parametrizes every check by its node; not part of a check's name here

# (upstream file, case) → the checks whose upstream_e2e markers name it
Mirrors = Mapping[tuple[str, str], Sequence[str]]


@dataclass(frozen=True)
class UpstreamCase:
    """One in-scope upstream case; a reason when nodeconf does not mirror it, a note on how it mirrors it."""

    text: str
    reason: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class UpstreamFile:
    """An upstream test file, the commit of the version read, and its in-scope cases."""

    path: str
    commit: str
    cases: tuple[UpstreamCase, ...]


def expand(template: str, values: Mapping[str, Sequence[str]]) -> list[str]:
    """Every case text a template names: one per combination of its placeholders' values, in the data's order."""
    names = list(dict.fromkeys(field for _, field, _, _ in string.Formatter().parse(template) if field))
    if set(names) != set(values):
        raise ValueError(f"case {template!r}: placeholders {sorted(names)} but values for {sorted(values)}")
    return [template.format(**dict(zip(names, combination, strict=True)))
            for combination in itertools.product(*(values[name] for name in names))]


def load_cases(path: Path = CASES_FILE) -> list[UpstreamFile]:
    """The data file's upstream files with their cases expanded and reason keys resolved; a duplicate is an error."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    reasons: Mapping[str, str] = data.get("reasons", {})
    files = []
    for file, entry in data["files"].items():
        cases: dict[str, UpstreamCase] = {}
        for item in entry["cases"]:
            texts = expand(item["case"], item["values"]) if "values" in item else [item["case"]]
            reason = item.get("reason")
            for text in texts:
                if text in cases:
                    raise ValueError(f"{file}: case {text!r} is listed twice")
                cases[text] = UpstreamCase(text, reasons.get(reason, reason), item.get("note"))
        files.append(UpstreamFile(file, str(entry["commit"]), tuple(cases.values())))
    return files


class _Items:
    """A pytest plugin keeping the collected items."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    def pytest_configure(self, config: pytest.Config) -> None:
        """Select every check, the opt-in ones (markers.OPT_IN_MARKERS) included."""
        from nodeconf.fixtures.markers import OPT_IN_MARKERS  # loaded as pytest's plugin by then

        names = " or ".join(OPT_IN_MARKERS)
        config.option.markexpr = f"{names} or not ({names})"

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.items = list(items)


def _params(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    params = callspec.params.items() if callspec is not None else ()
    return ", ".join(f"{name}={value}" for name, value in params if name != NODE_PARAM)


def mirrors_of(items: Iterable[pytest.Item]) -> dict[tuple[str, str], list[str]]:
    """Each marked (file, case) → its checks: `path::function`, or `path::function[params]` for the parametrized
    instances that carry the marker when not all of the function's instances do."""
    by_function: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_function[item.nodeid.split("[")[0]].append(item)
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for function, instances in by_function.items():
        marked: dict[tuple[str, str], list[pytest.Item]] = defaultdict(list)
        for item in instances:
            for key in dict.fromkeys((m.kwargs["file"], m.kwargs["case"]) for m in item.iter_markers(MARKER)):
                marked[key].append(item)
        for key, carriers in marked.items():
            if len(carriers) == len(instances):
                found[key].append(function)
            else:
                found[key].extend(f"{function}[{_params(item)}]" for item in carriers)
    return found


def collect_items(suites: Path = ROOT / "suites") -> list[pytest.Item]:
    """The suites' checks as pytest collects them, opt-in ones included (nothing runs, no node is opened)."""
    plugin = _Items()
    output = io.StringIO()
    argv = ["--collect-only", "-q", "-p", "no:cacheprovider", str(suites)]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = pytest.main(argv, plugins=[plugin])
    if code != pytest.ExitCode.OK:
        raise RuntimeError(f"collecting {suites} failed ({code}):\n{output.getvalue()}")
    return plugin.items


def problems(files: Sequence[UpstreamFile], mirrors: Mirrors) -> list[str]:
    """Every disagreement between the data and the markers, one line each."""
    lines = []
    listed = {(f.path, c.text) for f in files for c in f.cases}
    for file in files:
        for case in file.cases:
            checks = mirrors.get((file.path, case.text), ())
            if case.reason is None and not checks:
                lines.append(f"{file.path}: {case.text!r} is in scope, but no check's upstream_e2e marker names it "
                             f"and {CASES_FILE.name} gives no reason")
            if case.reason is not None and checks:
                lines.append(f"{file.path}: {case.text!r} has a reason not to be mirrored, but {', '.join(checks)} "
                             "mirror it")
    for (path, text), checks in mirrors.items():
        if (path, text) not in listed:
            lines.append(f"{', '.join(checks)}: upstream_e2e names {text!r} of {path}, which {CASES_FILE.name} does "
                         "not list")
    return lines


def _share(mirrored: int, total: int) -> str:
    return f"{100 * mirrored // total} %" if total else "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def coverage(files: Sequence[UpstreamFile], mirrors: Mirrors) -> list[tuple[str, str, int, int]]:
    """Per upstream file: path, commit, mirrored cases, in-scope cases."""
    return [(f.path, f.commit, sum(1 for c in f.cases if mirrors.get((f.path, c.text))), len(f.cases))
            for f in files]


def render(files: Sequence[UpstreamFile], mirrors: Mirrors) -> str:
    """The document: a summary table, then every case of every file with its checks or its reason."""
    rows = coverage(files, mirrors)
    mirrored, total = sum(r[2] for r in rows), sum(r[3] for r in rows)
    out = [
        "# Upstream coverage",
        "",
        "Generated by `python -m tools.upstream_coverage` from the suites' `upstream_e2e(file=, case=)` markers and "
        "`tools/upstream_cases.yaml`; `tests/unit/docs/test_upstream_coverage.py` fails when this file is stale. "
        "Do not edit it by hand.",
        "",
        "The cases are the in-scope upstream node e2e cases of issue 30. A case is the text Ginkgo runs it under: the "
        "string literals of its Describe / Context / When / DescribeTable containers and of its It or Entry, joined "
        "by ` / `. Each file was read at the commit named: the stored version of that file, so commits differ "
        "between files.",
        "",
        "| upstream file | commit | mirrored | in scope | share |",
        "|---|---|---:|---:|---:|",
        *(f"| `{path}` | `{commit[:12]}` | {m} | {t} | {_share(m, t)} |" for path, commit, m, t in rows),
        f"| all | | {mirrored} | {total} | {_share(mirrored, total)} |",
    ]
    for file in files:
        out += ["", f"## `{file.path}`", "", f"Read at kubernetes/kubernetes@{file.commit}.", "",
                "| case | mirrored by, or why not |", "|---|---|"]
        for case in file.cases:
            checks = mirrors.get((file.path, case.text), ())
            if checks:
                answer = "<br>".join(f"`{check}`" for check in checks)
                if case.note:
                    answer += f"<br>note: {case.note}"
            else:
                answer = f"not mirrored: {case.reason}"
            out.append(f"| {_cell(case.text)} | {_cell(answer)} |")
    return "\n".join(out) + "\n"


def stale(current: str | None, generated: str) -> str | None:
    """Why the document on disk differs from the generated one, else None."""
    if current is None:
        return f"{DOC.relative_to(ROOT)} is missing: run python -m tools.upstream_coverage"
    if current != generated:
        return f"{DOC.relative_to(ROOT)} is stale: run python -m tools.upstream_coverage"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.upstream_coverage", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the document is stale, write nothing")
    args = parser.parse_args(argv)
    try:
        files = load_cases()
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as error:
        print(f"python -m tools.upstream_coverage: {CASES_FILE.name}: {error}", file=sys.stderr)
        return 2
    mirrors = mirrors_of(collect_items())
    issues = problems(files, mirrors)
    for issue in issues:
        print(issue, file=sys.stderr)
    if issues:
        return 1
    generated = render(files, mirrors)
    if args.check:
        reason = stale(DOC.read_text(encoding="utf-8") if DOC.exists() else None, generated)
        if reason:
            print(reason, file=sys.stderr)
            return 1
    else:
        DOC.write_text(generated, encoding="utf-8")
    for path, _, m, t in coverage(files, mirrors):
        print(f"{path}: {m} / {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
