"""Root pytest configuration: nodeconf's command-line options and fixture plugins."""

from __future__ import annotations

import pytest

from nodeconf.run.options import declare_run_options

pytest_plugins: list[str] = [
    "nodeconf.fixtures.markers", "nodeconf.fixtures.vm", "nodeconf.fixtures.evidence", "nodeconf.fixtures.node",
    "nodeconf.fixtures.concurrency", "nodeconf.fixtures.session", "nodeconf.fixtures.matrix",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    declare_run_options(parser.getgroup("nodeconf").addoption, pytest=True)
