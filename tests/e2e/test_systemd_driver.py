"""With systemd as PID 1 the enforcer behaves like the kubelet's systemd cgroup driver (issue 13 item 2): the
kubepods, QoS and pod slices are transient units systemd created, the containers run in transient scopes, and
deleting the pod stops them; a kubepods.slice some other client started is refused and survives. With runc
(`--systemd-cgroup`, as containerd with SystemdCgroup=true) the container scope is the one runc started.

Expectations: the unit properties the driver sets (RUNTIME-FACTS §2c/§3e: Wants= parent slice, DefaultDependencies
=no, Delegate=yes on scopes; CPUWeight/MemoryMax/CPUQuotaPerSecUSec from the oracle's res-demo values, the article's
250m/500m/128Mi), never values read from the node. One trixie + systemd VM for the module, and for the runtimes
the trixie + systemd variant images with trixie's runc 1.1.15 and crun 1.21 (both the linear shares→weight
formula: 10 for 250m), as a user boots them with `vm?debian=trixie&init=systemd&runtime=runc` (or crun).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from test_runtimes import CONFIG, PROFILE

from nodeconf.enforcer import systemd_units
from nodeconf.fixtures.vm import booted
from nodeconf.infra.vm.machine import VirtualMachine
from nodeconf.infra.vm.variant import Variant
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.ssh import SshTransport
from nodeconf.semantics.expect import expect
from suites.toolkit.compare import compare_pod, mismatch_message
from suites.toolkit.pods import pod

pytestmark = pytest.mark.vm

VARIANT = Variant(debian="trixie", init="systemd")
SHOW = ("LoadState", "ActiveState", "Transient", "Description", "ControlGroup", "DefaultDependencies", "Wants",
        "Slice", "Delegate", "CPUWeight", "MemoryMax", "CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec")


@pytest.fixture(scope="module")
def machine() -> Iterator[VirtualMachine]:
    yield from booted("sdriver", VARIANT)


@pytest.fixture(scope="module", params=["runc", "crun"])
def runtime_machine(request: pytest.FixtureRequest) -> Iterator[tuple[str, VirtualMachine]]:
    """The runtime and a VM of the trixie + systemd variant image that has it."""
    for vm in booted(f"sdriver-{request.param}", replace(VARIANT, runtime=request.param)):
        yield request.param, vm


@pytest.fixture
def ssh(machine: VirtualMachine) -> Iterator[SshTransport]:
    with machine.ssh() as transport:
        yield transport


def show(ssh: SshTransport, unit: str) -> dict[str, str]:
    """`systemctl show` of one unit as a mapping."""
    out = ssh.check_output(["systemctl", "show", unit, *(f"--property={p}" for p in SHOW)])
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_slices_and_scopes_are_transient_units_and_stop_with_the_pod(machine: VirtualMachine,
                                                                     ssh: SshTransport) -> None:
    node = EnforcedNode(machine.ssh()).start()
    try:
        demo = node.run(pod("requests-limits/res-demo.yaml"))
        evidence = demo.evidence()
        pod_path = evidence.pod_cgroup.path
        hello = evidence.containers["hello"].cgroup.path
        slices = pod_path.split("/")
        assert slices[:2] == ["kubepods.slice", "kubepods-burstable.slice"]
        units = {name: show(ssh, name) for name in [*slices, Path(hello).name]}
        for name, unit in units.items():
            assert (unit["LoadState"], unit["ActiveState"], unit["Transient"]) == ("loaded", "active", "yes"), name
            assert unit["Description"].startswith("nodeconf agent "), name
            assert unit["DefaultDependencies"] == "no", name
        assert units["kubepods.slice"]["ControlGroup"] == "/kubepods.slice"
        assert units[slices[1]]["Wants"] == "kubepods.slice"
        assert units[slices[2]]["Wants"] == "kubepods-burstable.slice"
        assert units[slices[2]]["ControlGroup"] == "/" + pod_path
        scope = units[Path(hello).name]
        assert (scope["Slice"], scope["Delegate"], scope["ControlGroup"]) == (slices[2], "yes", "/" + hello)
        # res-demo's hello: 250m request (non-linear weight 35), 500m limit (quota 50 ms per 100 ms), 128Mi.
        assert (scope["CPUWeight"], scope["MemoryMax"]) == ("35", str(128 * 1024 * 1024))
        assert (scope["CPUQuotaPerSecUSec"], scope["CPUQuotaPeriodUSec"]) == ("500ms", "100ms")
        status = ssh.check_output(["systemctl", "status", "--no-pager", Path(hello).name])
        assert "Transient: yes" in status and "Active: active (running)" in status
        demo.delete()
        for name in [slices[2], Path(hello).name]:
            gone = show(ssh, name)
            assert gone["ActiveState"] == "inactive" and gone["LoadState"] in ("not-found", "loaded"), name
        assert ssh.run(["test", "-e", f"/sys/fs/cgroup/{pod_path}"]).rc != 0
    finally:
        node.close()
    # close() stopped the agent and its remaining slices.
    assert show(ssh, "kubepods.slice")["ActiveState"] == "inactive"


def test_a_kubepods_slice_started_by_someone_else_is_refused_and_keeps_running(machine: VirtualMachine,
                                                                               ssh: SshTransport) -> None:
    start = systemd_units.start_unit("kubepods.slice", "a kubelet")
    ssh.check_output(start)
    try:
        with pytest.raises(NodeError, match=r"kubepods\.slice was not created by nodeconf"):
            EnforcedNode(machine.ssh()).start()
        unit = show(ssh, "kubepods.slice")
        assert (unit["ActiveState"], unit["Description"]) == ("active", "a kubelet")
    finally:
        ssh.check_output(systemd_units.stop_unit("kubepods.slice"))


DESCRIPTIONS = {"runc": "libcontainer container ", "crun": "libcrun container"}


def test_the_runtime_starts_the_container_scope_itself(runtime_machine: tuple[str, VirtualMachine]) -> None:
    """runc/crun --systemd-cgroup with cgroupsPath `<pod slice>:cri-containerd:<id>` start the scope (the
    Description is the runtime's, RUNTIME-FACTS §3e; crun puts the process in a `container` sub-cgroup); the agent
    adopts it; every res-demo value equals the oracle's under the runtime's formula; OOM kills still come back."""
    runtime, machine = runtime_machine
    with machine.ssh() as ssh:
        _runtime_scope(machine, ssh, runtime)


def _runtime_scope(machine: VirtualMachine, ssh: SshTransport, runtime: str) -> None:
    description = DESCRIPTIONS[runtime]
    node = EnforcedNode(machine.ssh(), EnforcerSettings(runtime=runtime, backoff=2.0)).start()
    try:
        node.configure(CONFIG)
        facts = node.facts()
        assert facts.measured_cpu_weight_formula == "linear"  # trixie's runc 1.1.15 / crun 1.21
        demo = node.run(pod("requests-limits/res-demo.yaml"))
        demo.wait_running()
        evidence = demo.evidence()
        expected = expect([demo.pod], replace(facts, cpu_weight_formula="linear"), CONFIG, PROFILE).pod("res-demo")
        rows = compare_pod(expected, evidence)
        assert all(r.ok for r in rows), mismatch_message("res-demo", rows)
        hello = evidence.containers["hello"]
        if runtime == "crun":  # the values and process in crun's sub-cgroup, the scope read as well (for cadvisor)
            assert hello.scope is not None and hello.cgroup.path == f"{hello.scope.path}/container"
            assert not hello.scope.get("cgroup.procs"), "crun moved the process out of the scope itself"
        else:
            assert hello.scope is None
        unit = Path((hello.scope or hello.cgroup).path).name
        scope = show(ssh, unit)
        assert (scope["ActiveState"], scope["Transient"], scope["Delegate"]) == ("active", "yes", "yes")
        assert scope["Description"].startswith(description)
        assert scope["Slice"] == Path(evidence.pod_cgroup.path).name
        # 256 shares → linear weight 10 as the scope's property too.
        assert scope["CPUWeight"] == "10" and hello.cgroup["cpu.weight"] == "10"
        assert hello.pids, "the container's process sits in the scope the runtime started"
        demo.delete()
        assert show(ssh, unit)["ActiveState"] == "inactive"
        eater = node.run(pod("requests-limits/eater.yaml"))
        status = eater.wait_for(lambda s: s.container("eater").restart_count >= 1, timeout=90,
                                what="eater restarted after its OOM kill")
        last = status.container("eater").last_terminated
        assert last is not None and (last.exit_code, last.reason) == (137, "OOMKilled")
        eater.delete()
    finally:
        node.close()
