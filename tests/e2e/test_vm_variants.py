"""A non-reference node variant builds and boots: Debian trixie with systemd as PID 1 (issue 13 items 1, 2, 4).

Expectations come from the variant asked for and the archive it is built from (MEASURED.md "Node layers": trixie
ships kernel 6.12 and systemd 257), never from the node. One image build (≈2 min cold) and one boot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from nodeconf.enforcer.wire import facts_from_dict
from nodeconf.fixtures.vm import booted
from nodeconf.infra.vm.machine import DEFAULT_SWAP_MIB
from nodeconf.infra.vm.variant import Variant
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.enforced.bundle import agent_bundle
from nodeconf.nodes.transport.ssh import SshTransport

pytestmark = pytest.mark.vm

MIB = 1024 * 1024
VARIANT = Variant(debian="trixie", init="systemd")
# Runs the agent's own fact reader on the node (the bundle the enforcer runs from, unpacked under /tmp).
READ_FACTS = ("import json; from pathlib import Path; from nodeconf.enforcer.facts import detect; "
              "from nodeconf.enforcer.wire import facts_to_dict; "
              "print(json.dumps(facts_to_dict(detect(Path('/sys/fs/cgroup'), 'linear'))))")


@pytest.fixture(scope="module")
def node() -> Iterator[SshTransport]:
    """One booted trixie + systemd VM for this module, stopped at the end or on failure."""
    for machine in booted("variant", VARIANT):
        assert machine.image.variant == VARIANT
        transport = machine.ssh()  # the image's pinned host key: a wrong key is refused
        try:
            yield transport
        finally:
            transport.close()


@pytest.fixture(scope="module")
def facts(node: SshTransport) -> NodeFacts:
    node.check_output(["sh", "-c", "rm -rf /tmp/nodeconf-facts && mkdir /tmp/nodeconf-facts && "
                       "tar -x -z -C /tmp/nodeconf-facts"], input=agent_bundle())
    out = node.check_output(["env", "PYTHONPATH=/tmp/nodeconf-facts", "python3", "-c", READ_FACTS])
    return facts_from_dict(json.loads(out))


def test_pid1_is_systemd_and_the_boot_finished_without_failed_units(node: SshTransport) -> None:
    assert node.check_output(["cat", "/proc/1/comm"]) == "systemd"
    failed = node.check_output(["systemctl", "--failed", "--no-legend", "--plain"])
    assert failed == "", f"failed units: {failed}"
    assert node.check_output(["systemctl", "is-active", "ssh.service"]) == "active"
    # The readiness unit is a oneshot: done (inactive again) with success once it printed the line.
    ready = node.check_output(["systemctl", "show", "nodeconf-ready.service", "-p", "Result", "-p", "ExecMainStatus"])
    assert set(ready.split()) == {"Result=success", "ExecMainStatus=0"}


def test_cgroup2_is_the_only_hierarchy_mounted_by_systemd(node: SshTransport) -> None:
    mounts = [line.split() for line in node.check_output(["cat", "/proc/mounts"]).splitlines()]
    cgroup = [m for m in mounts if m[2].startswith("cgroup")]
    assert [(m[1], m[2]) for m in cgroup] == [("/sys/fs/cgroup", "cgroup2")]
    # systemd mounts cgroup2 with nsdelegate and, on kernels ≥ 5.7, memory_recursiveprot (src/shared/mount-setup.c).
    assert {"nsdelegate", "memory_recursiveprot"} <= set(cgroup[0][3].split(","))


def test_swap_is_on(node: SshTransport) -> None:
    swaps = node.check_output(["cat", "/proc/swaps"]).splitlines()[1:]
    assert [line.split()[0] for line in swaps] == ["/dev/vdb"]


def test_facts_name_the_layers_of_the_variant(facts: NodeFacts) -> None:
    assert facts.kernel_version.startswith("6.12.")
    assert facts.debian_release == "trixie"
    assert (facts.init, facts.runtime, facts.runtime_version) == ("systemd", "direct", "direct")
    assert facts.init_version.startswith("systemd 257 ")
    assert {"nsdelegate", "memory_recursiveprot"} <= set(facts.cgroup2_mount_options)
    assert facts.swap_devices == ("/dev/vdb",)
    # mkswap keeps one page for its header.
    assert facts.swap_capacity == DEFAULT_SWAP_MIB * MIB - facts.page_size
    assert facts.psi is True
    # The image carries Debian's config of its kernel; these are built in (y) in Debian's 6.12 amd64 config.
    config = dict(facts.kernel_config)
    for option in ("CONFIG_MEMCG", "CONFIG_SWAP", "CONFIG_CGROUP_SCHED", "CONFIG_CFS_BANDWIDTH", "CONFIG_PSI"):
        assert config[option] == "y", option
    assert facts.has_kernel_feature("memory.swap.peak")
