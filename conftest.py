"""Root pytest configuration: nodeconf's command-line options and fixture plugins."""

from __future__ import annotations

import pytest

from nodeconf.nodes.spec import declare_node_option

pytest_plugins: list[str] = [
    "fixtures.markers", "fixtures.vm", "fixtures.node", "fixtures.evidence", "fixtures.session",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nodeconf")
    declare_node_option(group.addoption)
    group.addoption("--kubelet-config", default=None, help="KubeletConfiguration YAML the node starts with")
    group.addoption("--profile", default=None, help="Kubernetes profile X.Y the oracle uses (default: newest)")
    group.addoption("--cpu-weight-formula", default="nonlinear", choices=("linear", "nonlinear"),
                    help="container shares→weight formula the run accepts (default: the profile's non-linear one)")
