"""The agent's last act removes what its runtime imported: the `shutdown` request (how a driver closes a node)
and SIGTERM both end in Agent.stop, which removes the CRI images labelled with the agent's token. Before, only
SIGTERM did, and the driver then removed the token with the state directory: every containerd run left its
workload image behind."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.oci_runtime import OciRuntime, RuntimeCommandError
from nodeconf.enforcer.server import AgentServer
from nodeconf.enforcer.wire import Op
from tests.unit.enforcer.enforcer_support import make_agent


class ImportingRuntime:
    """A runtime that imported images for this agent: records each removal, or fails it."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.removals = 0
        self.bounds: list[float] = []

    def bound_requests(self, configured: float) -> None:
        self.bounds.append(configured)

    def remove_images(self) -> list[str]:
        self.removals += 1
        if self.fail:
            raise RuntimeCommandError("ctr images rm: connection refused")
        return ["nodeconf.local/workload:token"]


def _agent_with(tmp_path: Path, runtime: ImportingRuntime) -> Agent:
    agent = make_agent(tmp_path)
    agent.launcher.runtime = cast(OciRuntime, runtime)
    return agent


def test_the_shutdown_request_removes_the_imported_images(tmp_path: Path) -> None:
    runtime = ImportingRuntime()
    agent = _agent_with(tmp_path, runtime)
    server = AgentServer(tmp_path / "s.sock", agent)
    try:
        assert server.operations[Op.SHUTDOWN](agent, {}) == {"stopped": True}
    finally:
        server.server_close()
    assert runtime.removals == 1 and server.stopping.is_set()


def test_a_failed_removal_is_logged_and_the_agent_still_stops(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    runtime = ImportingRuntime(fail=True)
    agent = _agent_with(tmp_path, runtime)
    assert agent.stop() == {"stopped": True}
    assert runtime.removals == 1
    assert "connection refused" in caplog.text


def test_a_reset_keeps_the_images_the_next_checks_use(tmp_path: Path) -> None:
    runtime = ImportingRuntime()
    agent = _agent_with(tmp_path, runtime)
    agent.reset()
    assert runtime.removals == 0
    assert runtime.bounds == [120]  # back to the default runtimeRequestTimeout, 2m0s
    agent.stop()
