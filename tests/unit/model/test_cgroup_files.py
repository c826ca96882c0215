"""Every cgroup file the oracle can expect is read back as evidence, so a new expected file cannot go unchecked."""

from __future__ import annotations

import itertools

import pytest

from nodeconf.cgroup_files import OBSERVED_FILES, evidence_files
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.names import UnsafeName
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.profile import SUPPORTED_VERSIONS, profile_for
from suites.toolkit.builders import GI, pod
from suites.toolkit.builders import container as ctr

NODE = NodeFacts(memory_capacity=8 * GI, swap_capacity=2 * GI, cpu_capacity_milli=4000)
PODS = [
    pod(ctr(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}), name="guaranteed"),
    pod(ctr(requests={"cpu": "250m", "memory": "256Mi"}, limits={"memory": "1Gi"}), name="burstable"),
    pod(ctr(), name="besteffort"),
    pod(ctr("app", requests={"memory": "128Mi"}),
        init=(ctr("side", requests={"cpu": "100m"}, restartPolicy="Always"), ctr("init")), name="sidecar"),
    pod(ctr(), resources={"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        name="pod-level"),
]
CONFIGS = {
    "default": KubeletConfig(),
    "limitedswap-memoryqos": KubeletConfig(swap_behavior="LimitedSwap", feature_gates={"MemoryQoS": True},
                                           memory_reservation_policy="TieredReservation"),
    "cgroupfs-no-cfs-quota": KubeletConfig(cgroup_driver="cgroupfs", cpu_cfs_quota=False),
}


def expected_files(expectation: NodeExpectation) -> set[str]:
    """The files of every cgroup the checks compare: node levels, pods, containers, pause."""
    cgroups = list(expectation.cgroups.values())
    for p in expectation.pods:
        cgroups += [p.cgroup] if p.cgroup else []
        cgroups += [c.cgroup for c in (*p.containers, *([p.pause] if p.pause else []))]
    return {name for cgroup in cgroups for name in cgroup.files}


@pytest.mark.parametrize(("config_name", "version"), list(itertools.product(CONFIGS, SUPPORTED_VERSIONS)))
def test_every_file_the_oracle_expects_is_observed(config_name: str, version: str) -> None:
    config = CONFIGS[config_name]
    profile = profile_for(version, config)
    files = expected_files(expect(PODS, NODE, config, profile))
    assert files, "the oracle expected no file at all: the test would prove nothing"
    assert files <= set(OBSERVED_FILES), f"expected but never read back: {sorted(files - set(OBSERVED_FILES))}"


def test_extra_files_follow_the_observed_set_once_each() -> None:
    assert evidence_files(["memory.stat", "cpu.max"]) == [*OBSERVED_FILES, "memory.stat"]


def test_a_bad_extra_file_name_is_refused() -> None:
    with pytest.raises(UnsafeName):
        evidence_files(["../../etc/passwd"])
