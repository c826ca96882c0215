"""Root pytest configuration: nodeconf's command-line options and fixture plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.nodes.spec import declare_node_option

pytest_plugins: list[str] = [
    "nodeconf.fixtures.markers", "nodeconf.fixtures.vm", "nodeconf.fixtures.evidence", "nodeconf.fixtures.node",
    "nodeconf.fixtures.concurrency", "nodeconf.fixtures.session", "nodeconf.fixtures.matrix",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nodeconf")
    declare_node_option(group.addoption)
    group.addoption("--matrix", default=None, type=Path, metavar="FILE",
                    help="YAML list of nodes ({node: SPEC, kubeletConfig: FILE, profile: X.Y, name: NAME})")
    group.addoption("--kubelet-config", default=None, help="KubeletConfiguration YAML the node starts with")
    group.addoption("--profile", default=None, help="Kubernetes profile X.Y the oracle uses (default: newest)")
    group.addoption("--cpu-weight-formula", default="nonlinear", choices=("linear", "nonlinear"),
                    help="container shares→weight formula the run accepts (default: the profile's non-linear one)")
