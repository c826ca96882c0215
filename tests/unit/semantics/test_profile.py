"""Profiles: per-version gate defaults, the default memoryThrottlingFactor and known shipped deviations."""

from __future__ import annotations

import pytest

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.semantics.profile import MEMORY_HIGH_WITHOUT_MEMORY, gate_warnings, profile_for


@pytest.mark.parametrize(
    "version, memory_qos, workload_swap, factor, ships_137685",
    [
        ("1.34", False, False, 0.9, True),
        ("1.35", False, False, 0.9, True),
        ("1.36", False, False, 0.9, True),  # article: Memory QoS "in 1.36 ... still alpha and disabled by default"
        ("1.37", True, False, None, False),  # v1.37 blog: beta, on by default, factor null; #138139 merged
        ("1.38", True, False, None, False),  # KEP-5359 alpha in 1.38: off on a default node (issue 32)
    ],
)
def test_version_table(version: str, memory_qos: bool, workload_swap: bool, factor: float | None,
                       ships_137685: bool) -> None:
    profile = profile_for(version)
    assert profile.gate("MemoryQoS") is memory_qos
    assert profile.gate("WorkloadControlledSwap") is workload_swap
    assert profile.default_memory_throttling_factor == factor
    assert profile.ships(MEMORY_HIGH_WITHOUT_MEMORY) is ships_137685


def test_config_gates_override_only_existing_gates() -> None:
    config = KubeletConfig(feature_gates={"MemoryQoS": True, "WorkloadControlledSwap": True})
    assert profile_for("1.36", config).gate("MemoryQoS")
    assert not profile_for("1.37", config).gate("WorkloadControlledSwap")  # the gate does not exist before 1.38
    off = KubeletConfig(feature_gates={"WorkloadControlledSwap": False})
    assert not profile_for("1.38", off).gate("WorkloadControlledSwap")


def test_unknown_issue_is_not_shipped() -> None:
    assert not profile_for("1.34").ships("kubernetes#1")


def test_unknown_version_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"1\.33"):
        profile_for("1.33")


def test_gates_the_profile_does_not_know_are_warned_by_name() -> None:
    config = KubeletConfig(feature_gates={"MemoryQoS": True, "WorkloadControlledSwap": True, "NoSuchGate": False})
    warnings = gate_warnings(config, profile_for("1.37", config))
    assert [w.split(":")[0] for w in warnings] == ["featureGates.WorkloadControlledSwap", "featureGates.NoSuchGate"]
    assert "Kubernetes 1.37; ignored" in warnings[0]
    assert gate_warnings(config, profile_for("1.38", config)) == (warnings[1].replace("1.37", "1.38"),)


# Alpha gates of the newest profile, from their sources: KEP-5359 "Milestones: Alpha v1.38"; CustomCPUCFSQuotaPeriod
# alpha (pkg/features/kube_features.go). Kubernetes docs "Feature Gates": an alpha gate is disabled by default.
NEWEST_ALPHA_GATES = ("WorkloadControlledSwap", "CustomCPUCFSQuotaPeriod")


def test_the_default_profile_describes_a_node_with_default_gates() -> None:
    """The default is the newest profile with every alpha gate off (issue 32): explain's default is a default node."""
    default = profile_for()
    assert default.version == "1.38"
    assert {gate: default.gate(gate) for gate in NEWEST_ALPHA_GATES} == dict.fromkeys(NEWEST_ALPHA_GATES, False)


def test_the_kubelet_config_turns_an_alpha_gate_on() -> None:
    config = KubeletConfig(feature_gates={"WorkloadControlledSwap": True})
    assert profile_for("1.38", config).gate("WorkloadControlledSwap") is True
