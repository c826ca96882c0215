"""A termination reason other than OOMKilled is attributed to the node's CRI runtime only on the measured facts
(containerd, exit 137, the kernel's oom_kill count), and the expected value stays the oracle's."""

from __future__ import annotations

import pytest

from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.runtime_oom import reason_note
from suites.toolkit.compare import compare_reason

GI = 2**30
SID = NodeFacts(memory_capacity=4 * GI, runtime="containerd", runtime_version="2.1.9",
                runtime_config=(("SystemdCgroup", "True"), ("disable_hugetlb_controller", "True")))


def test_containerd_reporting_error_for_a_counted_kill_is_named_with_its_version_and_the_fact() -> None:
    note = reason_note(SID, "Error", 137, 1)
    for part in ("containerd 2.1.9", "reported reason Error", "memory.events oom_kill 1", "TaskOOM",
                 "systemd scope"):
        assert part in note


@pytest.mark.parametrize(("node", "reason", "exit_code", "kills"), [
    pytest.param(SID, "OOMKilled", 137, 1, id="runtime-said-oomkilled"),
    pytest.param(SID, "Error", 1, 1, id="not-a-sigkill"),
    pytest.param(SID, "Error", 137, 0, id="kernel-counted-no-kill"),
    pytest.param(NodeFacts(memory_capacity=4 * GI, runtime="direct"), "Error", 137, 1, id="nodeconf-launcher"),
    pytest.param(NodeFacts(memory_capacity=4 * GI, runtime="runc", runtime_version="1.1.5"), "Error", 137, 1,
                 id="oci-runtime"),
])
def test_nothing_is_attributed_without_every_measured_fact(node: NodeFacts, reason: str, exit_code: int,
                                                           kills: int) -> None:
    assert reason_note(node, reason, exit_code, kills) == ""


@pytest.mark.parametrize(("version", "systemd", "how", "where"), [
    ("1.6.20~ds1", "True", "only from its shim's TaskOOM event", "its systemd scope"),
    ("2.3.0", "True", "or the task's metrics at exit", "its systemd scope"),
    ("1.7.24~ds1", "False", "only from its shim's TaskOOM event", "in its cgroup"),
])
def test_the_note_follows_the_version_and_the_cgroup_driver(version: str, systemd: str, how: str,
                                                            where: str) -> None:
    node = NodeFacts(memory_capacity=4 * GI, runtime="containerd", runtime_version=version,
                     runtime_config=(("SystemdCgroup", systemd),))
    note = reason_note(node, "Error", 137, 2)
    assert (how in note, where in note, f"containerd {version}" in note) == (True, True, True)


def test_a_compared_reason_keeps_the_oracles_value_and_fails_with_the_runtime_named() -> None:
    """The fact never becomes the expected value: the row still fails, its rule names containerd."""
    row = compare_reason("eater", "eater", "kubepods.slice/x", "last termination reason",
                         Expected("OOMKilled", "article: reason OOMKilled"), "Error", ("Error", 137), SID, 1)
    assert (row.expected, row.actual, row.ok) == ("OOMKilled", "Error", False)
    assert row.rule.startswith("article: reason OOMKilled; the node's runtime containerd 2.1.9 reported reason Error")


def test_a_reason_that_matches_gets_no_note() -> None:
    row = compare_reason("eater", "eater", "p", "last termination reason", Expected("OOMKilled", "rule"),
                         "OOMKilled", ("OOMKilled", 137), SID, 1)
    assert (row.ok, row.rule) == (True, "rule")
