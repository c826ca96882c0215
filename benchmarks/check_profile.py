"""Where each check's time goes (issue 31): a pytest plugin that suites_bench.py `--profile` loads
(`-p benchmarks.check_profile --check-profile=FILE`).

Per check (its test id) it records the time of setup, call and teardown (pytest's own durations), every agent
request outside the node's open and close (operation, wall seconds in the driver, the agent's own `agentMs`: the
rest is transport), the seconds slept in polling loops (time.sleep in the main thread: the driver's and the
toolkit's waits), and the start and stop of the enforced node (`start`: push, serve, bridge; `open`: the VM boot
and `start`, inside the first check's setup; what they request and sleep counts as theirs). What is left of a
check's duration is pytest and the driver's own Python. With each check its concurrency rule (runs_alone,
independent): how much of the run side-by-side checks could overlap.

Per run it reads the node's /proc/stat (its CPUs' busy and idle jiffies) right after the node opens, at each test
module's first check and right before the node closes: the guest's busy fraction over the run and per suite. No agent
request reads a file of the node's (by design: `exec_node` runs only in a reserve cgroup the agent made, evidence
reads cgroup files), so the profile runs `cat /proc/stat` through the node's transport, the connection that pushes
and serves the agent. Under TCG a vCPU is idle only when the guest has nothing to run (halted): its idle time is
what checks side by side could use, however loaded the host. Written as JSON ({"checks": ..., "cpu": [readings]})
to FILE at the end of the session.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Generator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from nodeconf.errors import InfrastructureError
from nodeconf.fixtures.markers import concurrency
from nodeconf.nodes.enforced.agent_client import AgentClient
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.registry import open_node

OUTSIDE = "(outside checks)"
CLOSE = "(node close)"
# /proc/stat's cpu lines (proc_stat(5)): user nice system idle iowait irq softirq steal guest guest_nice, in jiffies;
# guest and guest_nice are counted in user and nice already. Idle = idle + iowait (nothing runnable on the CPU).
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
IDLE_FIELDS = (3, 4)


def cpu_jiffies(stat: str) -> dict[str, tuple[int, int]]:
    """The cpu lines of /proc/stat: per line (`cpu`, all CPUs; `cpu0`, ...) its busy and idle jiffies."""
    found = {}
    for line in stat.splitlines():
        name, *fields = line.split() or [""]
        if name.startswith("cpu"):
            values = [int(v) for v in fields] + [0] * 10  # an older kernel has fewer columns
            found[name] = (sum(values[i] for i in BUSY_FIELDS), sum(values[i] for i in IDLE_FIELDS))
    return found


def process_cpu_seconds(stat: str) -> float:
    """A process's user + system CPU seconds, all its threads, from its /proc/PID/stat (fields 14 and 15)."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_reading(proc: Path = Path("/proc")) -> dict[str, Any]:
    """The host's side of a reading: its /proc/stat cpu lines, and the CPU seconds so far of this driver and of
    the qemu processes it started (the VM: every vCPU thread and qemu's own)."""
    me, qemu = os.getpid(), 0.0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm, after = stat[stat.find("(") + 1:stat.rfind(")")], stat.rsplit(")", 1)[1].split()
        if comm.startswith("qemu-system") and int(after[1]) == me:
            qemu += process_cpu_seconds(stat)
    return {"jiffies": cpu_jiffies((proc / "stat").read_text()), "qemu": qemu,
            "driver": process_cpu_seconds((proc / "self" / "stat").read_text())}


def busy_fraction(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, float]:
    """Per cpu line of both readings, the busy share of the jiffies between them (a CPU with none is left out)."""
    shares = {}
    for name in before.keys() & after.keys():
        busy, idle = (after[name][i] - before[name][i] for i in (0, 1))
        if busy + idle > 0:
            shares[name] = busy / (busy + idle)
    return dict(sorted(shares.items()))


class Profile:
    """The figures of the run so far, keyed by test id; `current` is the check whose protocol runs now."""

    def __init__(self) -> None:
        self.current = OUTSIDE
        self.in_node = 0  # inside the node's open or close: their requests count as theirs
        self.checks: dict[str, dict[str, Any]] = defaultdict(_empty)
        # The node's /proc/stat: {"mark": the test module whose time starts here (CLOSE at the end), "at":
        # monotonic seconds, "read": seconds the reading took, "jiffies": cpu_jiffies}.
        self.cpu: list[dict[str, Any]] = []

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
        self.node: EnforcedNode | None = None  # the open node whose /proc/stat is read

    def read_cpu(self, mark: str) -> None:
        """Append a reading of the open node's /proc/stat (none when it cannot be read: the run goes on)."""
        if self.node is None:
            return
        began = time.monotonic()
        try:
            result = self.node.transport.run(["cat", "/proc/stat"], timeout=30)
        except (InfrastructureError, OSError):
            return
        if result.rc == 0:
            self.profile.cpu.append({"mark": mark, "at": began, "read": time.monotonic() - began,
                                     "jiffies": cpu_jiffies(result.stdout.decode()), "host": host_reading()})

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

        def opened(*args: Any, **kwargs: Any) -> Any:
            node = timed("open", open_node)(*args, **kwargs)
            if isinstance(node, EnforcedNode):
                self.node = node
                self.read_cpu(module(profile.current))
            return node

        def closing(node: EnforcedNode) -> None:
            if node is self.node:
                self.read_cpu(CLOSE)
                self.node = None
            close(node)

        self.patch.setattr(AgentClient, "call", timed_call)
        self.patch.setattr(time, "sleep", timed_sleep)
        self.patch.setattr(EnforcedNode, "start", timed("start", start))
        self.patch.setattr(EnforcedNode, "close", timed("close", closing))
        self.patch.setattr("nodeconf.fixtures.node.open_node", opened)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.profile.current = item.nodeid
        self.profile.checks[item.nodeid]["rule"] = concurrency(item)  # what may run beside it (issue 31 item 2)
        cpu = self.profile.cpu
        if cpu and cpu[-1]["mark"] != module(item.nodeid):  # a module's first check: the last one's time ends
            self.read_cpu(module(item.nodeid))
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
        self.target.write_text(json.dumps({"checks": self.profile.checks, "cpu": self.profile.cpu}, indent=1))


def module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def suite_of(nodeid: str) -> str:
    """The directory under suites/ a check (or module) belongs to."""
    return nodeid.split("/")[1] if nodeid.startswith("suites/") else OUTSIDE


def guest_cpu(readings: list[dict[str, Any]]) -> dict[str, Any]:
    """The node's busy fraction from its first reading to its last (all CPUs and each), and per suite over the
    spans from each module's first check to the next module's (jiffies summed, so a suite's share is
    busy / (busy + idle) over its own time); with the seconds the readings themselves took."""
    if len(readings) < 2:
        return {}
    first, last = readings[0], readings[-1]
    spans: dict[str, dict[str, list[int]]] = defaultdict(dict)
    seconds: dict[str, float] = defaultdict(float)
    for start, end in pairwise(readings):
        suite = suite_of(start["mark"])
        seconds[suite] += end["at"] - start["at"]
        for name in start["jiffies"].keys() & end["jiffies"].keys():
            total = spans[suite].setdefault(name, [0, 0])
            for i in (0, 1):
                total[i] += end["jiffies"][name][i] - start["jiffies"][name][i]
    suites = {suite: {"seconds": round(seconds[suite], 1),
                      "busy": {name: round(busy / (busy + idle), 3)
                               for name, (busy, idle) in sorted(jiffies.items()) if busy + idle > 0}}
              for suite, jiffies in sorted(spans.items())}
    return {"seconds": round(last["at"] - first["at"], 1), "readings": len(readings),
            "read_seconds": round(sum(r["read"] for r in readings), 2),
            "busy": {name: round(v, 3) for name, v in busy_fraction(first["jiffies"], last["jiffies"]).items()},
            "suites": suites, "host": host_cpu(first.get("host"), last.get("host"))}


def host_cpu(first: dict[str, Any] | None, last: dict[str, Any] | None) -> dict[str, Any]:
    """Between two host readings: the host's busy fraction (all CPUs and each) and the CPU seconds the VM's qemu
    and this driver used, against the CPU seconds the host had (its CPUs × the jiffies between the readings)."""
    if not first or not last:
        return {}
    busy, idle = (last["jiffies"]["cpu"][i] - first["jiffies"]["cpu"][i] for i in (0, 1))
    cpus = sum(1 for name in last["jiffies"] if name != "cpu")
    return {"busy": {name: round(v, 3) for name, v in busy_fraction(first["jiffies"], last["jiffies"]).items()},
            "cpu_seconds": round((busy + idle) / os.sysconf("SC_CLK_TCK"), 1), "cpus": cpus,
            "qemu": round(last["qemu"] - first["qemu"], 1), "driver": round(last["driver"] - first["driver"], 1)}


def split(entry: dict[str, Any]) -> dict[str, float]:
    """One check's seconds: in total, in the agent, in transport, asleep, in the node's open and close."""
    agent_wall = sum(o["wall"] for o in entry["agent"].values())
    agent_own = sum(o["agent"] for o in entry["agent"].values())
    return {"seconds": sum(entry["phases"].values()), "agent": agent_own, "transport": agent_wall - agent_own,
            "sleep": entry["sleep"],
            "node_open_close": entry["node"].get("open", 0.0) + entry["node"].get("close", 0.0)}


def breakdown(checks: dict[str, dict[str, Any]], slowest: int = 10,
              cpu: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Totals per suite (the directory under suites/) and for the run: seconds in agent requests (the agent's own
    and the transport's), in sleeps, in the node's start and close, in kubelet configure, and the rest (pytest and
    the driver's Python); request counts per operation; checks, seconds, the agent's and the node's open and close
    per concurrency rule; the node's busy fraction (guest_cpu) from its readings."""
    suites: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    ops: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    rules: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for nodeid, entry in checks.items():
        row = suites[suite_of(nodeid)]
        parts = split(entry)
        if entry["phases"]:
            by_rule = rules[entry.get("rule") or "(none)"]
            by_rule["checks"] += 1
            for key in ("seconds", "agent", "node_open_close"):
                by_rule[key] += parts[key]
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
                                                                              key=lambda i: -i[1]["wall"])},
            "rules": {rule: {k: round(v, 2) for k, v in row.items()} for rule, row in sorted(rules.items())},
            "guest_cpu": guest_cpu(cpu or [])}
