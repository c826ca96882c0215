"""Where each check's time goes (issue 31): a pytest plugin that suites_bench.py `--profile` loads
(`-p benchmarks.check_profile --check-profile=FILE`).

Per check (its test id) it records the time of setup, call and teardown (pytest's own durations), every agent
request outside the node's open and close (operation, wall seconds in the driver, the agent's own `agentMs`: the
rest is transport), the seconds slept in polling loops (time.sleep in the main thread: the driver's and the
toolkit's waits), and the start and stop of the enforced node (`start`: push, serve, bridge; `open`: the VM boot
and `start`, inside the first check's setup; what they request and sleep counts as theirs). What is left of a
check's duration is pytest and the driver's own Python. Written as JSON to FILE at the end of the session.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from nodeconf.nodes.enforced.agent_client import AgentClient
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.registry import open_node

OUTSIDE = "(outside checks)"


class Profile:
    """The figures of the run so far, keyed by test id; `current` is the check whose protocol runs now."""

    def __init__(self) -> None:
        self.current = OUTSIDE
        self.in_node = 0  # inside the node's open or close: their requests count as theirs
        self.checks: dict[str, dict[str, Any]] = defaultdict(_empty)

    def here(self) -> dict[str, Any]:
        return self.checks[self.current]

    def request(self, op: str, wall: float, agent_ms: float) -> None:
        if self.in_node:
            return
        entry = self.here()["agent"].setdefault(op, {"count": 0, "wall": 0.0, "agent": 0.0})
        entry["count"] += 1
        entry["wall"] += wall
        entry["agent"] += agent_ms / 1000

    def slept(self, seconds: float) -> None:
        if not self.in_node:
            self.here()["sleep"] += seconds

    def node(self, what: str, seconds: float) -> None:
        self.here()["node"][what] = self.here()["node"].get(what, 0.0) + seconds


def _empty() -> dict[str, Any]:
    return {"phases": {}, "agent": {}, "sleep": 0.0, "node": {}, "outcome": "passed"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--check-profile", metavar="FILE", help="write each check's time breakdown to FILE (JSON)")


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("--check-profile")
    if target:
        config.pluginmanager.register(Recorder(Path(target)), "nodeconf-check-profile")


class Recorder:
    """Wraps the agent client's call, time.sleep and the enforced node's start and close for the session."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.profile = Profile()
        self.patch = pytest.MonkeyPatch()

    def pytest_sessionstart(self) -> None:
        profile = self.profile
        call, sleep = AgentClient.call, time.sleep
        start, close = EnforcedNode.start, EnforcedNode.close

        def timed_call(client: AgentClient, op: Any, **args: Any) -> Any:
            began = time.monotonic()
            try:
                return call(client, op, **args)
            finally:
                profile.request(str(op), time.monotonic() - began, client.last_agent_ms)

        def timed_sleep(seconds: float) -> None:
            if threading.current_thread() is threading.main_thread():
                profile.slept(seconds)
            sleep(seconds)

        def timed(what: str, method: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                began = time.monotonic()
                profile.in_node += 1
                try:
                    return method(*args, **kwargs)
                finally:
                    profile.in_node -= 1
                    profile.node(what, time.monotonic() - began)
            return wrapper

        self.patch.setattr(AgentClient, "call", timed_call)
        self.patch.setattr(time, "sleep", timed_sleep)
        self.patch.setattr(EnforcedNode, "start", timed("start", start))
        self.patch.setattr(EnforcedNode, "close", timed("close", close))
        self.patch.setattr("nodeconf.fixtures.node.open_node", timed("open", open_node))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.profile.current = item.nodeid
        try:
            return (yield)
        finally:
            self.profile.current = OUTSIDE

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.profile.checks[report.nodeid]
        entry["phases"][report.when] = report.duration
        if report.outcome != "passed" and (report.when == "call" or report.outcome == "failed"):
            entry["outcome"] = report.outcome

    def pytest_sessionfinish(self) -> None:
        self.patch.undo()
        self.target.write_text(json.dumps(self.profile.checks, indent=1))


def split(entry: dict[str, Any]) -> dict[str, float]:
    """One check's seconds: in total, in the agent, in transport, asleep, in the node's open and close."""
    agent_wall = sum(o["wall"] for o in entry["agent"].values())
    agent_own = sum(o["agent"] for o in entry["agent"].values())
    return {"seconds": sum(entry["phases"].values()), "agent": agent_own, "transport": agent_wall - agent_own,
            "sleep": entry["sleep"],
            "node_open_close": entry["node"].get("open", 0.0) + entry["node"].get("close", 0.0)}


def breakdown(checks: dict[str, dict[str, Any]], slowest: int = 10) -> dict[str, Any]:
    """Totals per suite (the directory under suites/) and for the run: seconds in agent requests (the agent's own
    and the transport's), in sleeps, in the node's start and close, in kubelet configure, and the rest (pytest and
    the driver's Python); request counts per operation."""
    suites: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    ops: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for nodeid, entry in checks.items():
        suite = nodeid.split("/")[1] if nodeid.startswith("suites/") else OUTSIDE
        row = suites[suite]
        parts = split(entry)
        row["checks"] += 1 if entry["phases"] else 0
        for key, value in parts.items():
            row[key] += value
        row["requests"] += sum(o["count"] for o in entry["agent"].values())
        row["node_start"] += entry["node"].get("start", 0.0)
        configure = entry["agent"].get("configure", {})
        row["configures"] += configure.get("count", 0)
        row["configure_seconds"] += configure.get("wall", 0.0)
        # `open` holds the VM boot and `start` (its requests count there, not as the check's)
        row["rest"] += parts["seconds"] - sum(parts[k] for k in ("agent", "transport", "sleep", "node_open_close"))
        for op, figures in entry["agent"].items():
            for key, value in figures.items():
                ops[op][key] += value
    total: dict[str, float] = defaultdict(float)
    for row in suites.values():
        for key, value in row.items():
            total[key] += value
    rounded = {name: {k: round(v, 2) for k, v in row.items()} for name, row in sorted(suites.items())}
    top = sorted(checks.items(), key=lambda item: -sum(item[1]["phases"].values()))[:slowest]
    return {"suites": rounded, "total": {k: round(v, 2) for k, v in total.items()},
            "slowest": [{"check": nodeid, **{k: round(v, 2) for k, v in split(entry).items()},
                         "requests": {op: f["count"] for op, f in entry["agent"].items()}} for nodeid, entry in top],
            "ops": {op: {k: round(v, 2) for k, v in f.items()} for op, f in sorted(ops.items(),
                                                                              key=lambda i: -i[1]["wall"])}}
