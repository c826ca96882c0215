"""Expected-vs-actual tables of compared cgroup files, carried as a CSV attachment that Allure shows as a table and
the report reads back (the structured rows a failure's causes come from), and the words a mismatch is told in.

Source: STYLE.md "Failure messages built for triage" (one line per mismatch: `value of cgroup "F" for container "c"
of pod "p" at PATH was "a"; expected "b" (rule: …)`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from nodeconf.report.allure_json import ReportError, read_bounded
from nodeconf.report.results import Attachment, Check, Step

COMPARISON_COLUMNS: tuple[str, ...] = (
    "pod", "container", "cgroup_path", "file", "expected", "actual", "rule", "ok",
)
COMPARISON_MIME = "text/csv"
ABSENT = "(absent)"  # a value the node did not have
PATH_FILE = "(cgroup path)"  # the row comparing a cgroup's place in the hierarchy
PAUSE = "(pause)"  # the container column of the pause container's rows
# A comparison table is read up to this size (a table of every value of one check is a few KiB).
MAX_COMPARISON_BYTES = 4 * 1024 * 1024


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
        return ABSENT
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, set | frozenset | list | tuple):
        return " | ".join(sorted(cell(item) for item in value))
    return str(value)


def comparison_csv(rows: Iterable[ComparedFile]) -> str:
    """The rows as CSV with the COMPARISON_COLUMNS header."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COMPARISON_COLUMNS)
    for row in rows:
        writer.writerow(cell(getattr(row, column)) for column in COMPARISON_COLUMNS)
    return out.getvalue()


def parse_comparison(text: str) -> list[dict[str, str]] | None:
    """The rows of a comparison CSV, or None when `text` is not one (other header)."""
    reader = csv.reader(io.StringIO(text))
    if tuple(next(reader, ())) != COMPARISON_COLUMNS:
        return None
    return [dict(zip(COMPARISON_COLUMNS, row, strict=False)) for row in reader if row]


def owner_kind(pod: str, container: str) -> str:
    """What kind of owner a value has: `the node`, `pod`, `the pause container` or `container`."""
    if not pod:
        return "the node"
    if not container:
        return "pod"
    return "the pause container" if container == PAUSE else "container"


def owner(pod: str, container: str) -> str:
    """Who a value belongs to, as a mismatch line names it: `container "c" of pod "p"`, `pod "p"`, `the node`."""
    kind = owner_kind(pod, container)
    if kind == "the node":
        return kind
    if kind == "pod":
        return f'pod "{pod}"'
    return f'{kind} "{container}" of pod "{pod}"' if kind == "container" else f'{kind} of pod "{pod}"'


def _value_kind(file: str) -> str:
    if file == "oom_score_adj":
        return "process setting"
    if file.startswith("kubelet_"):
        return "metric"
    if " " in file:
        return "measurement"
    return "cgroup"


def what(file: str) -> str:
    """What a compared file is, as a mismatch line names it: `value of cgroup "cpu.weight"`, `path`, `event "E"`."""
    if file.startswith("event "):
        return f'event "{file.removeprefix("event ")}"'
    return "path" if file == PATH_FILE else f'value of {_value_kind(file)} "{file}"'


@dataclass(frozen=True)
class Mismatch:
    """One compared value that differs from the oracle, as its comparison table recorded it (every field a cell)."""

    pod: str
    container: str
    cgroup_path: str
    file: str
    expected: str
    actual: str
    rule: str

    @property
    def about(self) -> str:
        """What the mismatch is about: the value and the kind of its owner (`value of cgroup "cpu.weight" for
        container`), so that a container's value and a pod's are two causes."""
        return f"{what(self.file)} for {owner_kind(self.pod, self.container)}"

    def line(self, at_path: bool = True) -> str:
        """The mismatch as one line for people; without `at_path`, the cgroup path (long, in every line of a cause)
        left out."""
        return mismatch_line(self.file, self.pod, self.container, self.cgroup_path if at_path else None,
                             self.actual, self.expected, self.rule)


def mismatch_line(file: str, pod: str, container: str, path: str | None, actual: str, expected: str,
                  rule: str) -> str:
    """`WHAT for OWNER at PATH was "ACTUAL"; expected "EXPECTED" (rule: RULE)`: ACTUAL unquoted when absent, no
    `at PATH` when `path` is None."""
    shown = actual if actual == ABSENT else f'"{actual}"'
    at = "" if path is None else f" at {path}"
    return f'{what(file)} for {owner(pod, container)}{at} was {shown}; expected "{expected}" (rule: {rule})'


def _attachments(steps: Sequence[Step]) -> Iterator[Attachment]:
    for step in steps:
        yield from step.attachments
        yield from _attachments(step.steps)


def comparison_rows(check: Check) -> Iterator[dict[str, str]]:
    """The rows of every comparison table the check attached (fixtures, steps, body), in that order; a table that
    cannot be read (a link out of the results, too large) is passed over."""
    for attachment in (*_attachments(check.fixtures), *_attachments(check.steps), *check.attachments):
        if attachment.mime != COMPARISON_MIME:
            continue
        try:
            text = read_bounded(attachment.path, MAX_COMPARISON_BYTES, attachment.path.parent).decode("utf-8")
        except (ReportError, UnicodeDecodeError):
            continue
        yield from parse_comparison(text) or ()


def mismatches(check: Check) -> tuple[Mismatch, ...]:
    """The compared values of the check's comparison tables that differ from the oracle, in table order."""
    return tuple(Mismatch(*(row.get(column, "") for column in COMPARISON_COLUMNS[:-1]))
                 for row in comparison_rows(check) if row.get("ok", "").lower() in ("no", "false", "0"))
