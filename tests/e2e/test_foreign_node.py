"""On the reference VM the enforcer touches only what it created: a kubelet's pod (a foreign kubepods.slice with a
live process) makes the node refused with one line and survives; a foreign cgroup inside nodeconf's own tree
survives its stop. The agent's mark is a trusted.* extended attribute, which cgroup2 (kernfs) stores.

Source: issue 10 item 1; xattr(7); cgroup-v2.rst ("cgroup.kill" kills the whole subtree, so it is not used there).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.ownership import OWNER_XATTR, foreign_message
from nodeconf.infra.vm.machine import VirtualMachine
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.bundle import REMOTE_DIR, STATE_DIR
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.ssh import SshTransport

pytestmark = pytest.mark.vm

CGROUP = "/sys/fs/cgroup"
# Start `sleep` inside a cgroup (its path is $1) detached from the SSH session; print its pid once it is inside.
START_IN_CGROUP = r"""
mkdir -p "$1" || exit 1
setsid sh -c 'echo $$ > "$1/cgroup.procs" && exec sleep 3600' sh "$1" </dev/null >/dev/null 2>&1 &
for _ in $(seq 100); do [ -s "$1/cgroup.procs" ] && break; sleep 0.1; done
cat "$1/cgroup.procs"
"""
XATTRS = "import os, sys; print(' '.join(os.listxattr(sys.argv[1])))"


@pytest.fixture
def ssh(reference_vm: VirtualMachine) -> Iterator[SshTransport]:
    with reference_vm.ssh() as transport:
        yield transport


def start_foreign(ssh: SshTransport, cgroup: str) -> int:
    """A live `sleep` in a cgroup made here, as a kubelet's container would be; its pid."""
    (pid,) = ssh.check_output(["sh", "-c", START_IN_CGROUP, "start", f"{CGROUP}/{cgroup}"]).split()
    return int(pid)


def alive_in(ssh: SshTransport, pid: int, cgroup: str) -> bool:
    return str(pid) in ssh.check_output(["cat", f"{CGROUP}/{cgroup}/cgroup.procs"]).split()


def remove_foreign(ssh: SshTransport, pid: int, cgroups: list[str]) -> None:
    """The test's own cleanup of what it made: kill its process, wait until its cgroup is empty, remove the
    cgroups (deepest first)."""
    script = r"""
kill -9 "$1"; shift
for _ in $(seq 100); do [ -s "$1/cgroup.procs" ] || break; sleep 0.1; done
for d; do rmdir "$d"; done
"""
    ssh.check_output(["sh", "-c", script, "rm", str(pid), *(f"{CGROUP}/{c}" for c in cgroups)])


@pytest.mark.parametrize("prefix", ["", "kubelet.slice/kubelet-"], ids=["kubepods", "custom-cgroup-root"])
def test_a_node_running_a_kubelet_is_refused_and_its_pod_survives(reference_vm: VirtualMachine, ssh: SshTransport,
                                                                   prefix: str) -> None:
    """A kubelet's pod in kubepods.slice, or under kind's cgroupRoot /kubelet (kubelet.slice/kubelet-kubepods.slice;
    issue 26 item 9), found on the VM's cgroup2 file system."""
    name = prefix.rsplit("/", 1)[-1]
    kubepods = f"{prefix}kubepods.slice"
    pod = f"{kubepods}/{name}kubepods-burstable.slice/{name}kubepods-burstable-podX.slice"
    scope = f"{pod}/cri-containerd-foreign.scope"
    pid = start_foreign(ssh, scope)
    parents = [scope, pod, pod.rsplit("/", 1)[0], kubepods, *(["kubelet.slice"] if prefix else [])]
    try:
        node = EnforcedNode(reference_vm.ssh(), EnforcerSettings())
        with pytest.raises(NodeError) as refused:
            node.start()
        assert str(refused.value) == foreign_message(Path(CGROUP) / kubepods)
        assert alive_in(ssh, pid, scope), "the kubelet's container process was killed"
        assert ssh.run(["kill", "-0", str(pid)]).rc == 0
        for cgroup in parents:
            assert OWNER_XATTR not in ssh.check_output(["python3", "-c", XATTRS, f"{CGROUP}/{cgroup}"])
        assert ssh.run(["test", "-e", REMOTE_DIR]).rc == 1 and ssh.run(["test", "-e", STATE_DIR]).rc == 1
    finally:
        remove_foreign(ssh, pid, parents)


def test_a_foreign_cgroup_inside_ours_survives_the_stop(reference_vm: VirtualMachine, ssh: SshTransport) -> None:
    node = EnforcedNode(reference_vm.ssh(), EnforcerSettings()).start()
    try:
        owner = ssh.check_output(["python3", "-c", f"import os; print(os.getxattr('{CGROUP}/kubepods.slice', "
                                                   f"{OWNER_XATTR!r}).decode())"])
        assert owner == f"nodeconf agent {STATE_DIR}"
        intruder = "kubepods.slice/intruder.scope"
        pid = start_foreign(ssh, intruder)
    finally:
        node.close()
    try:
        assert alive_in(ssh, pid, intruder), "a process of a cgroup nodeconf did not create was killed"
        left = ssh.check_output(["sh", "-c", f"cd {CGROUP} && find kubepods.slice -type d | sort"]).split()
        assert left == ["kubepods.slice", intruder], "only the intruder and the parent holding it stay"
    finally:
        remove_foreign(ssh, pid, [intruder, "kubepods.slice"])
    assert ssh.run(["test", "-e", f"{CGROUP}/kubepods.slice"]).rc == 1

