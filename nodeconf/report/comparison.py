"""Expected-vs-actual tables of compared cgroup files, carried as a CSV attachment that Allure shows as a table."""

import csv
import io
from collections.abc import Iterable
from typing import Protocol

from nodeconf.report.citations import readable

COMPARISON_COLUMNS: tuple[str, ...] = (
    "pod", "container", "cgroup_path", "file", "expected", "actual", "rule", "ok",
)
COMPARISON_MIME = "text/csv"


class ComparedFile(Protocol):
    """One compared file: where it is, what the oracle expected, what the node had, the rule, and the verdict."""

    @property
    def pod(self) -> str: ...
    @property
    def container(self) -> str: ...
    @property
    def cgroup_path(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def expected(self) -> object: ...
    @property
    def actual(self) -> object: ...
    @property
    def rule(self) -> str: ...
    @property
    def ok(self) -> bool: ...


def cell(value: object) -> str:
    """A value as the table shows it: a set of accepted values as `a | b`, None as `(absent)`."""
    if value is None:
        return "(absent)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, set | frozenset | list | tuple):
        return " | ".join(sorted(cell(item) for item in value))
    return str(value)


def comparison_csv(rows: Iterable[ComparedFile]) -> str:
    """The rows as CSV with the COMPARISON_COLUMNS header, each rule as a reader can follow it (citations)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COMPARISON_COLUMNS)
    for row in rows:
        writer.writerow(readable(cell(getattr(row, column))) if column == "rule" else cell(getattr(row, column))
                        for column in COMPARISON_COLUMNS)
    return out.getvalue()


def parse_comparison(text: str) -> list[dict[str, str]] | None:
    """The rows of a comparison CSV, or None when `text` is not one (other header)."""
    reader = csv.reader(io.StringIO(text))
    if tuple(next(reader, ())) != COMPARISON_COLUMNS:
        return None
    return [dict(zip(COMPARISON_COLUMNS, row, strict=False)) for row in reader if row]
