"""A cluster node is judged as its provider configured it; `--kubelet-config` and `--profile` on it assert what it
runs: a mismatch is this one failure, naming each field and both values, while the other checks judge the node as
it runs (issue 29).

Source: KubeletConfiguration (kubelet.config.k8s.io/v1beta1) as the kubelet serves it on /configz, and
`status.nodeInfo.kubeletVersion`.
"""

from __future__ import annotations

import pytest

from nodeconf.fixtures.session_nodes import opened
from nodeconf.nodes.base import Node, NotApplicable

pytestmark = [pytest.mark.kubelet_config, pytest.mark.independent]  # reads the node's kubelet, changes nothing


def test_node_runs_the_requested_kubelet(node: Node, pytestconfig: pytest.Config) -> None:
    running = node.kubelet_version()
    if running is None:
        pytest.skip("nodeconf configures this node's kubelet from --kubelet-config and --profile: nothing to assert")
    settings = opened(pytestconfig, node).settings  # the node's own (a matrix entry's), else the run's
    path, profile = settings.kubelet_config_path, settings.profile
    if not path and not profile:
        pytest.skip("neither --kubelet-config nor --profile given: the node is judged as it runs")
    try:
        node.running_config()
    except NotApplicable as err:
        pytest.skip(str(err))
    problems = [f"--profile {profile}: the node runs kubelet {running}"] if profile and profile != running else []
    if settings.kubelet_config is not None:
        try:
            node.configure(settings.kubelet_config)
        except NotApplicable as err:
            problems.append(f"--kubelet-config {path}: {err}")
    assert not problems, "; ".join(problems)
