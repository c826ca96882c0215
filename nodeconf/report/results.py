"""Allure results read back from a results directory: checks, their evidence, the run's environment.

Source: allure-python-commons' result model (`*-result.json`, `*-container.json`, `*-attachment.*`).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from nodeconf.report.allure_json import ReportError, load_json, mapping, millis, sequence, shown, text
from nodeconf.report.properties import read_properties
from nodeconf.report.run_state import RUN_CHECK_FULL_NAME, RunState, read_run_state

__all__ = ["STATUS_ORDER", "Attachment", "Check", "NodeEnvironment", "ReportError", "RunResults", "RunState",
           "SharedFixture", "Status", "Step", "first_line", "load_results"]

NODE_LABEL = "node"  # nodeconf.fixtures.evidence labels each check of a several-node run with its node's name
NODE_ENVIRONMENT_GLOB = "environment-*.properties"


def first_line(message: str) -> str:
    """The first non-blank line of a message, stripped ("" for none)."""
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


class Status(StrEnum):
    """Allure's test statuses, in the order a reader needs them: failures first."""

    FAILED = "failed"
    BROKEN = "broken"
    SKIPPED = "skipped"
    PASSED = "passed"


STATUS_ORDER: tuple[Status, ...] = tuple(Status)


@dataclass(frozen=True)
class Attachment:
    """One attached file: its title, MIME type and where it lies in the results directory."""

    name: str
    mime: str
    path: Path


@dataclass(frozen=True)
class Step:
    """An Allure step or fixture: name, status, nested steps and its attachments."""

    name: str
    status: Status
    steps: tuple["Step", ...]
    attachments: tuple[Attachment, ...]


@dataclass(frozen=True)
class Check:
    """One test result with its labels, outcome and evidence."""

    name: str
    full_name: str
    status: Status
    message: str
    trace: str
    labels: tuple[tuple[str, str], ...]
    parameters: tuple[tuple[str, str], ...]
    steps: tuple[Step, ...]
    attachments: tuple[Attachment, ...]
    fixtures: tuple[Step, ...]
    duration_ms: int

    def label(self, name: str, default: str = "") -> str:
        """The first value of label `name`, or `default`."""
        return next((value for key, value in self.labels if key == name), default)

    @property
    def source(self) -> str:
        """The source document (Allure epic)."""
        return self.label("epic", "(no source)")

    @property
    def area(self) -> str:
        """The area (Allure feature)."""
        return self.label("feature", "(no area)")

    @property
    def rule(self) -> str:
        """The rule (Allure story)."""
        return self.label("story")

    @property
    def suite(self) -> str:
        """The suite: the test's package below `suites/` (Allure parentSuite), else its module."""
        suite = self.label("parentSuite") or self.label("suite", "(no suite)")
        return suite.removeprefix("suites.")

    @property
    def node(self) -> str:
        """The name of the node the check ran on ("" in a single-node run)."""
        return self.label(NODE_LABEL)

    @property
    def first_line(self) -> str:
        """The first line of the failure or skip message."""
        return first_line(self.message)


@dataclass(frozen=True)
class SharedFixture:
    """A fixture shared by several checks (session or module scope) with its own evidence."""

    fixture: Step
    checks: int


@dataclass(frozen=True)
class NodeEnvironment:
    """One node of a several-node run: its name and its environment-NAME.properties entries (spec, facts)."""

    name: str
    entries: tuple[tuple[str, str], ...]

    def get(self, key: str) -> str:
        return next((value for name, value in self.entries if name == key), "")


@dataclass(frozen=True)
class RunResults:
    """Everything read from one results directory."""

    results_dir: Path
    checks: tuple[Check, ...]
    shared_fixtures: tuple[SharedFixture, ...]
    environment: tuple[tuple[str, str], ...]
    run_state: RunState | None = None
    nodes: tuple[NodeEnvironment, ...] = ()

    @property
    def node_names(self) -> tuple[str, ...]:
        """The nodes of a several-node run: those with an environment file, then any other a check names."""
        names = [node.name for node in self.nodes]
        names += sorted({check.node for check in self.checks if check.node} - set(names))
        return tuple(names)

    @property
    def interrupted(self) -> bool:
        """True when the run recorded that it did not finish."""
        return self.run_state is not None and not self.run_state.complete

    def count(self, status: Status) -> int:
        """How many checks ended with `status`."""
        return sum(1 for check in self.checks if check.status is status)


def _status(value: object) -> Status:
    """Allure's status string; a missing or unknown status counts as broken (no verdict was reached)."""
    try:
        return Status(str(value))
    except ValueError:
        return Status.BROKEN


def _attachments(results_dir: Path, raw: object) -> tuple[Attachment, ...]:
    return tuple(
        Attachment(
            name=text(mapping(item).get("name")) or text(mapping(item).get("source")),
            mime=text(mapping(item).get("type")) or "application/octet-stream",
            path=results_dir / Path(text(mapping(item).get("source"))).name,
        )
        for item in sequence(raw)
        if text(mapping(item).get("source"))
    )


def _step(results_dir: Path, raw: Mapping[str, object]) -> Step:
    return Step(
        name=text(raw.get("name")),
        status=_status(raw.get("status")),
        steps=tuple(_step(results_dir, mapping(child)) for child in sequence(raw.get("steps"))),
        attachments=_attachments(results_dir, raw.get("attachments")),
    )


def _pairs(raw: object) -> tuple[tuple[str, str], ...]:
    return tuple(
        (text(mapping(item).get("name")), text(mapping(item).get("value"))) for item in sequence(raw)
    )


def _check(results_dir: Path, raw: Mapping[str, object], fixtures: tuple[Step, ...]) -> Check:
    details = mapping(raw.get("statusDetails"))
    start, stop = millis(raw.get("start")), millis(raw.get("stop"))
    duration = stop - start if start is not None and stop is not None else 0
    return Check(
        name=text(raw.get("name")),
        full_name=text(raw.get("fullName")) or text(raw.get("name")),
        status=_status(raw.get("status")),
        message=text(details.get("message")),
        trace=text(details.get("trace")),
        labels=_pairs(raw.get("labels")),
        parameters=_pairs(raw.get("parameters")),
        steps=tuple(_step(results_dir, mapping(step)) for step in sequence(raw.get("steps"))),
        attachments=_attachments(results_dir, raw.get("attachments")),
        fixtures=fixtures,
        duration_ms=max(duration, 0),
    )


def _latest_per_history(results: Iterable[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """Keep the last attempt of each test (reruns share a historyId)."""
    latest: dict[str, Mapping[str, object]] = {}
    for raw in results:
        key = text(raw.get("historyId")) or text(raw.get("uuid"))
        stop = millis(raw.get("stop"))
        kept = latest.get(key)
        kept_stop = millis(kept.get("stop")) if kept is not None else None
        if kept is None or (stop is not None and (kept_stop is None or stop >= kept_stop)):
            latest[key] = raw
    return list(latest.values())


def load_results(results_dir: Path) -> RunResults:
    """Read the Allure results in `results_dir`; raise ReportError if there are none."""
    if not results_dir.is_dir():
        raise ReportError(f"{shown(results_dir)}: no such results directory")
    run_state = read_run_state(results_dir)
    raw_results = [load_json(path, results_dir) for path in sorted(results_dir.glob("*-result.json"))]
    raw_results = [raw for raw in raw_results if text(raw.get("fullName")) != RUN_CHECK_FULL_NAME]
    if not raw_results and (run_state is None or run_state.complete):  # an interrupted run may have none
        raise ReportError(f"{shown(results_dir)}: no Allure results (*-result.json) in this directory")
    per_check: dict[str, list[Step]] = {}
    shared: list[SharedFixture] = []
    for path in sorted(results_dir.glob("*-container.json")):
        container = load_json(path, results_dir)
        children = [text(child) for child in sequence(container.get("children"))]
        phases = [*sequence(container.get("befores")), *sequence(container.get("afters"))]
        fixtures = [_step(results_dir, mapping(fixture)) for fixture in phases]
        if len(children) == 1:
            per_check.setdefault(children[0], []).extend(fixtures)
        else:
            shared.extend(SharedFixture(fixture, len(children)) for fixture in fixtures if fixture.attachments)
    checks = tuple(
        _check(results_dir, raw, tuple(per_check.get(text(raw.get("uuid")), ())))
        for raw in _latest_per_history(raw_results)
    )
    return RunResults(
        results_dir=results_dir,
        checks=checks,
        shared_fixtures=tuple(shared),
        environment=tuple(read_properties(results_dir / "environment.properties")),
        run_state=run_state,
        nodes=_node_environments(results_dir),
    )


def _node_environments(results_dir: Path) -> tuple[NodeEnvironment, ...]:
    """Each node's environment-NAME.properties, in the run's order (`position`), named by its `name` entry."""
    found = []
    for path in sorted(results_dir.glob(NODE_ENVIRONMENT_GLOB)):
        entries = tuple(read_properties(path))
        name = next((value for key, value in entries if key == "name"), "")
        found.append(NodeEnvironment(name or path.name[len("environment-"):-len(".properties")], entries))
    return tuple(sorted(found, key=lambda node: (_position(node.get("position")), node.name)))


def _position(text: str) -> int:
    return int(text) if text.isdigit() else 0
