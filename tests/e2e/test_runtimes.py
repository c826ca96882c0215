"""The enforcer with a real OCI runtime (runc, crun) on the reference VM: the container values read back are the
ones the runtime wrote, its shares→weight formula is measured and reported, OOM kills and exits come back through
it, and a resize goes through its `update`.

Each runtime's node is the variant image a user boots with `--node 'vm?runtime=runc'` (or crun): Debian bookworm
with the runtime installed from its package when the image is built, cached like every image (≈1 min cold each).
Source: issue 13 items 1, 3–5; RUNTIME-FACTS §1 (containerd WithResources), §3a (the two formulas).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nodeconf.enforcer.patch import patched_pod
from nodeconf.infra.vm.opener import open_vm_node
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_objects
from nodeconf.manifest import Pod
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS, NodeFacts
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for
from nodeconf.workloads import SLEEPER
from suites.toolkit.compare import ComparedValue, compare_pod, mismatch_message

pytestmark = pytest.mark.vm

WORKLOADS = Path(__file__).resolve().parents[2] / "workloads"
# Memory QoS off, as on the article's 1.36 node (the res-demo hands-on).
CONFIG = KubeletConfig(feature_gates={"MemoryQoS": False})
PROFILE = profile_for("1.38", CONFIG)


def manifest(name: str) -> Pod:
    (pod,) = load_objects([WORKLOADS / "requests-limits" / f"{name}.yaml"])
    assert isinstance(pod, Pod)
    return pod


@pytest.fixture(scope="module", params=["runc", "crun"])
def node(request: pytest.FixtureRequest) -> Iterator[EnforcedNode]:
    """A node of the runtime's variant image, opened from its spec as `nodeconf run --node` does."""
    started = time.monotonic()
    opened = open_vm_node(parse_node_spec(f"vm?runtime={request.param}&backoff=2"))
    assert isinstance(opened, EnforcedNode)
    try:
        opened.configure(CONFIG)
        facts = opened.facts()
        print(f"\n{facts.runtime} {facts.runtime_version} (Debian {facts.debian_release}): "
              f"{facts.measured_cpu_weight_formula} cpu.weight (up in {time.monotonic() - started:.1f} s)")
        yield opened
    finally:
        opened.close()


def oracle_facts(facts: NodeFacts, formula: str) -> NodeFacts:
    """The run's formula, never the measured one (issue 13 item 5)."""
    return replace(facts, cpu_weight_formula=formula)


def test_facts_name_the_runtime_and_its_measured_formula(node: EnforcedNode) -> None:
    facts = node.facts()
    assert facts.runtime == node.settings.runtime
    assert facts.debian_release == "bookworm"
    assert facts.runtime_version and facts.runtime_version[0].isdigit(), facts.runtime_version
    assert facts.measured_cpu_weight_formula in CPU_WEIGHT_FORMULAS
    assert facts.cpu_weight_formula == "nonlinear", "the agent's own claim is not changed by the measurement"


@pytest.mark.parametrize("formula", CPU_WEIGHT_FORMULAS)
def test_res_demo_fails_exactly_cpu_weight_under_another_formula(node: EnforcedNode, formula: str) -> None:
    """res-demo read back against the oracle: every value matches when the run's formula is the runtime's; else
    exactly the container's cpu.weight differs, and the message names the runtime, its version and formula."""
    facts = node.facts()
    handle = node.run(manifest("res-demo"))
    try:
        assert handle.admitted, handle.errors
        handle.wait_running()
        expected = expect([handle.pod], oracle_facts(facts, formula), CONFIG, PROFILE).pod("res-demo")
        rows = compare_pod(expected, handle.evidence())
        wrong = [r for r in rows if not r.ok]
        message = mismatch_message("res-demo", rows)
        print(f"\n{facts.runtime} {facts.runtime_version}, run formula {formula}: {message}")
        if formula == facts.measured_cpu_weight_formula:
            assert not wrong, message
        else:
            assert [(r.container, r.file) for r in wrong] == [("hello", "cpu.weight")], message
            runtime = f"{facts.runtime} {facts.runtime_version} uses the {facts.measured_cpu_weight_formula} formula"
            assert runtime in wrong[0].rule, message
    finally:
        handle.delete()


def test_oom_kill_comes_back_as_oomkilled_137(node: EnforcedNode) -> None:
    """The article's eater (tail /dev/zero against 64Mi) is OOM-killed in the runtime's container: exit 137 from
    the waited-for process, OOMKilled from memory.events, then restarted by the agent."""
    handle = node.run(manifest("eater"))
    try:
        status = handle.wait_for(lambda s: s.container("eater").restart_count >= 1, timeout=90,
                                 what="eater restarted after its OOM kill")
        last = status.container("eater").last_terminated
        assert last is not None and (last.exit_code, last.reason) == (137, "OOMKilled"), last
        assert any(e.reason == "OOMKilling" for e in status.events)
    finally:
        handle.delete()


def test_exec_runs_in_the_container_s_namespaces(node: EnforcedNode) -> None:
    """kubectl exec into a runtime's container sees what the container sees: its pid 1 is the container's process
    (res-demo's sleeper, not the node's init) and a file it writes in /tmp is in the container's /tmp only."""
    handle = node.run(manifest("res-demo"))
    try:
        handle.wait_running()
        shown = handle.exec("hello", ["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo x > /tmp/nodeconf-exec"])
        assert (shown.rc, shown.stdout.split()) == (0, list(SLEEPER)), shown
        assert handle.exec("hello", ["cat", "/tmp/nodeconf-exec"]).stdout == "x\n"
        assert node.transport.run(["test", "-e", "/tmp/nodeconf-exec"], timeout=30).rc == 1, "written on the node"
    finally:
        handle.delete()


def test_resize_goes_through_the_runtime_update(node: EnforcedNode) -> None:
    """A cpu resize of res-demo is applied with the runtime's `update` (whole linux.resources): the new cpu.max
    and the runtime's cpu.weight for the new shares are read back, without a restart."""
    facts = node.facts()
    handle = node.run(manifest("res-demo"))
    try:
        handle.wait_running()
        patch = {"spec": {"containers": [{"name": "hello", "resources": {
            "requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}}}]}}
        started = time.monotonic()
        assert handle.resize(patch).status == "Applied"
        applied = time.monotonic() - started
        resized = handle.status()
        accepted = oracle_facts(facts, facts.measured_cpu_weight_formula)
        expected = expect([patched_pod(handle.pod, patch)], accepted, CONFIG, PROFILE).pod("res-demo")
        rows: list[ComparedValue] = compare_pod(expected, handle.evidence())
        print(f"\n{facts.runtime} resize applied in {applied:.2f} s: {mismatch_message('res-demo', rows)}")
        assert all(r.ok for r in rows), mismatch_message("res-demo resized", rows)
        hello = handle.evidence().container("hello").cgroup
        assert hello["cpu.max"] == "100000 100000"
        assert resized.container("hello").restart_count == 0
    finally:
        handle.delete()
