"""Two runs compared: which checks changed verdict, which node facts changed, and for checks failing in both
whether the mismatch changed. The regression gate for a new node image (issue 33 item 2).

A check's mismatches are the structured rows of its comparison tables (nodeconf.report.comparison), never its
message: the message is for people and may be worded anew (issue 27 item 4).

Source: issue 33; a check is the same check in both runs when its id is (`module#name[params]`, the JUnit
classname and name, Allure's fullName with pytest's parameter id).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeconf.report.comparison import Mismatch

PASSED, FAILED, BROKEN, SKIPPED = "passed", "failed", "broken", "skipped"
# Verdict changes, in the order a reader needs them: their ids in summary.json, and how the text says them.
PASS_TO_FAIL, FAIL_TO_PASS, NEW, GONE, OTHER = "pass_to_fail", "fail_to_pass", "new", "gone", "other"
KINDS = (PASS_TO_FAIL, FAIL_TO_PASS, NEW, GONE, OTHER)
KIND_LABELS = {PASS_TO_FAIL: "pass → fail", FAIL_TO_PASS: "fail → pass", NEW: "new", GONE: "gone", OTHER: "other"}
# environment*.properties entries that change with every run and say nothing about the node or the judge.
VOLATILE_FACTS = frozenset({"started", "finished", "controller", "command", "position"})
# What makes two runs' mismatches the same: what it is about, whose value, expected and actual (not the cgroup path:
# it holds the pod's uid, new every run; not the rule: words for people).
MismatchKey = tuple[str, str, str, str, str]


def mismatch_key(mismatch: Mismatch) -> MismatchKey:
    return (mismatch.about, mismatch.pod, mismatch.container, mismatch.expected, mismatch.actual)


@dataclass(frozen=True)
class CheckVerdict:
    """One check's outcome in a run: its id, status (passed, failed, broken, skipped), failure message (for people,
    never compared) and the compared values that differ from the oracle (None: the run kept no comparison tables,
    a junit.xml without Allure results)."""

    id: str
    status: str
    message: str = ""
    mismatches: tuple[Mismatch, ...] | None = None

    @property
    def compared(self) -> tuple[MismatchKey, ...] | None:
        """The mismatches as the diff compares them, in a fixed order."""
        return None if self.mismatches is None else tuple(sorted(mismatch_key(m) for m in self.mismatches))


@dataclass(frozen=True)
class RunRecord:
    """What one run left: its checks' verdicts, each node's facts ("" for a single-node run), whether it finished."""

    label: str
    checks: Mapping[str, CheckVerdict]
    facts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    interrupted: str = ""  # why the run did not finish, "" when it did


@dataclass(frozen=True)
class VerdictChange:
    id: str
    kind: str
    before: str  # "" when the check is new
    after: str  # "" when the check is gone


@dataclass(frozen=True)
class MismatchChange:
    """A check failing in both runs whose mismatches differ: the lines, for people, of those only in OLD and only in
    NEW (the cgroup path left out)."""

    id: str
    before: tuple[str, ...]
    after: tuple[str, ...]

    @classmethod
    def of(cls, check_id: str, before: tuple[Mismatch, ...], after: tuple[Mismatch, ...]) -> MismatchChange:
        old, new = {mismatch_key(m) for m in before}, {mismatch_key(m) for m in after}
        return cls(check_id, tuple(m.line(at_path=False) for m in before if mismatch_key(m) not in new),
                   tuple(m.line(at_path=False) for m in after if mismatch_key(m) not in old))


@dataclass(frozen=True)
class FactChange:
    node: str
    key: str
    before: str
    after: str


@dataclass(frozen=True)
class RunDiff:
    old: str
    new: str
    verdicts: tuple[VerdictChange, ...]
    mismatches: tuple[MismatchChange, ...]
    facts: tuple[FactChange, ...]

    def of_kind(self, kind: str) -> tuple[VerdictChange, ...]:
        return tuple(change for change in self.verdicts if change.kind == kind)

    @property
    def regressed(self) -> bool:
        """True when a check went from pass to fail (the gate: exit 1)."""
        return bool(self.of_kind(PASS_TO_FAIL))

    @property
    def summary(self) -> str:
        """`2 pass → fail, 1 fail → pass; 1 mismatch changed; 3 node facts changed`, or `no difference`."""
        parts = [f"{len(self.of_kind(kind))} {KIND_LABELS[kind]}" for kind in KINDS if self.of_kind(kind)]
        if self.mismatches:
            parts.append(f"{len(self.mismatches)} mismatch{'es' if len(self.mismatches) > 1 else ''} changed")
        if self.facts:
            parts.append(f"{len(self.facts)} node fact{'s' if len(self.facts) > 1 else ''} changed")
        return ", ".join(parts) if parts else "no difference"

    def to_json(self) -> dict[str, Any]:
        """The `diff` key of summary.json."""
        return {
            "old": self.old,
            "new": self.new,
            "summary": self.summary,
            "regressed": self.regressed,
            "verdicts": [{"id": c.id, "change": c.kind, "before": c.before, "after": c.after} for c in self.verdicts],
            "mismatches": [{"id": c.id, "before": list(c.before), "after": list(c.after)} for c in self.mismatches],
            "facts": [{"node": c.node, "key": c.key, "before": c.before, "after": c.after} for c in self.facts],
        }

    def lines(self) -> list[str]:
        """The terminal listing: summary, then each group of changes."""
        lines = [f"nodeconf: {self.old} → {self.new}: {self.summary}"]
        for kind in KINDS:
            for c in self.of_kind(kind):
                shown = f"{c.before} → {c.after}" if kind == OTHER else KIND_LABELS[kind]
                lines.append(f"  {shown:<13} {c.id}")
        for m in self.mismatches:
            lines.append(f"  mismatch      {m.id}")
            lines += [f"    - {line}" for line in m.before]
            lines += [f"    + {line}" for line in m.after]
        lines += [f"  fact          {f.node + ': ' if f.node else ''}{f.key}: {f.before or '(none)'} → "
                  f"{f.after or '(none)'}" for f in self.facts]
        return lines


def _kind(before: str, after: str) -> str:
    if before == PASSED and after == FAILED:
        return PASS_TO_FAIL
    if before == FAILED and after == PASSED:
        return FAIL_TO_PASS
    return OTHER


def _fact_changes(old: Mapping[str, Mapping[str, str]], new: Mapping[str, Mapping[str, str]]) -> list[FactChange]:
    changes = []
    for node in [*old, *(name for name in new if name not in old)]:
        before, after = old.get(node, {}), new.get(node, {})
        for key in [*before, *(k for k in after if k not in before)]:
            if key not in VOLATILE_FACTS and before.get(key, "") != after.get(key, ""):
                changes.append(FactChange(node, key, before.get(key, ""), after.get(key, "")))
    return changes


def compare_runs(old: RunRecord, new: RunRecord) -> RunDiff:
    """What changed from `old` to `new`: verdicts (in `new`'s order, gone ones last), the mismatches of checks
    failing in both (when both runs kept their comparison tables), and the node facts."""
    verdicts = []
    mismatches = []
    for check_id, after in new.checks.items():
        before = old.checks.get(check_id)
        if before is None:
            verdicts.append(VerdictChange(check_id, NEW, "", after.status))
        elif before.status != after.status:
            verdicts.append(VerdictChange(check_id, _kind(before.status, after.status), before.status, after.status))
        elif (after.status == FAILED and before.mismatches is not None and after.mismatches is not None
              and before.compared != after.compared):
            mismatches.append(MismatchChange.of(check_id, before.mismatches, after.mismatches))
    verdicts += [VerdictChange(check_id, GONE, before.status, "") for check_id, before in old.checks.items()
                 if check_id not in new.checks]
    return RunDiff(old.label, new.label, tuple(verdicts), tuple(mismatches), tuple(_fact_changes(old.facts, new.facts)))
