"""Every KEP-5359 example manifest under all three node modes: memory.swap.max per cgroup, events, QoS class."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config, load_objects
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import swap
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.qos import pod_qos

KEP = Path(__file__).resolve().parents[3] / "workloads" / "kep-5359"
NODE = NodeFacts(memory_capacity=8 * 2**30, swap_capacity=4 * 2**30)
PROFILE = profile_for("1.38", KubeletConfig(feature_gates={"WorkloadControlledSwap": True}))  # alpha: off by default
MODES = ("NoSwap", "LimitedSwap", "WorkloadControlledSwap")
CONFIGS = [load_kubelet_config(KEP / "kubelet-config" / f"{name}.yaml")
           for name in ("no-swap", "limited-swap", "workload-controlled-swap")]
GI = "1073741824"
WARN = ("SwapNotSupported",)

# file: (QoS class, {container: (NoSwap, LimitedSwap, WCS)}, pod memory.swap.max per mode, NoSwap events),
# values typed from the KEP's manifests (limits.swap in bytes) and its semantics table.
CASES = {
    "use-case-1-swap-disabled.yaml": (
        QosClass.BURSTABLE, {"app": ("0", "0", "0")}, ("max", "max", "max"), ()),
    "use-case-2-swap-enabled.yaml": (
        QosClass.BURSTABLE, {"app": ("0", GI, GI)}, ("max", "max", "max"), WARN),
    "use-case-3-unlimited-swap.yaml": (
        QosClass.BURSTABLE, {"app": ("0", "8589934592", "8589934592")}, ("max", "max", "max"), WARN),
    "use-case-4-pod-level-swap-mixed.yaml": (
        QosClass.BURSTABLE,
        {
            "c1-latency-sensitive": ("0", "0", "0"),
            "c2-swap-worker": ("0", "536870912", "536870912"),
            "c3-helper-a": ("0", "2147483648", "2147483648"),
            "c4-helper-b": ("0", "2147483648", "2147483648"),
        },
        ("max", "2147483648", "2147483648"),
        WARN,
    ),
    "limits-only-model.yaml": (
        QosClass.BURSTABLE, {"app": ("0", GI, GI)}, ("max", "max", "max"), WARN),
    "guaranteed-with-swap.yaml": (
        QosClass.GUARANTEED, {"app": ("0", "536870912", "536870912")}, ("max", "max", "max"), WARN),
    "limits-memory-unset.yaml": (
        QosClass.BEST_EFFORT, {"app": ("0", GI, GI)}, ("max", "max", "max"), WARN),
    "limits-memory-lt-swap.yaml": (
        QosClass.BURSTABLE, {"app": ("0", "4294967296", "4294967296")}, ("max", "max", "max"), WARN),
    "limits-memory-eq-swap.yaml": (
        QosClass.BURSTABLE, {"app": ("0", "2147483648", "2147483648")}, ("max", "max", "max"), WARN),
    "limits-memory-gt-swap.yaml": (
        QosClass.BURSTABLE, {"app": ("0", GI, GI)}, ("max", "max", "max"), WARN),
}


def load_pod(name: str) -> Pod:
    (pod,) = load_objects([KEP / name])
    assert isinstance(pod, Pod)
    return pod


def test_every_manifest_is_covered() -> None:
    assert sorted(p.name for p in KEP.glob("*.yaml")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_qos_class_unaffected_by_swap(name: str) -> None:
    assert pod_qos(load_pod(name), PROFILE) is CASES[name][0]


@pytest.mark.parametrize("mode_index", range(3), ids=MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_manifest_swap_under_mode(name: str, mode_index: int) -> None:
    pod = load_pod(name)
    qos, containers, pod_values, noswap_events = CASES[name]
    config = CONFIGS[mode_index]
    assert config.swap_behavior == MODES[mode_index]
    assert swap.swap_errors(pod, PROFILE) == ()
    observed = {
        c.name: swap.container_swap_max(pod, c, qos, NODE, config, PROFILE).value for c in pod.containers
    }
    assert observed == {c: values[mode_index] for c, values in containers.items()}
    assert swap.pod_swap_max(pod, qos, NODE, config, PROFILE).value == pod_values[mode_index]
    events = tuple(e.reason for e in swap.swap_events(pod, config, PROFILE))
    assert events == (noswap_events if MODES[mode_index] == "NoSwap" else ())


def test_allocated_bytes_of_all_examples_on_wcs_node() -> None:
    # 1 pod-level 2Gi + 0 + 1Gi + 8Gi + 1Gi + 512Mi + 1Gi + 4Gi + 2Gi + 1Gi = 20.5Gi (hand sum of the files).
    pods = [load_pod(name) for name in sorted(CASES)]
    assert swap.swap_allocated_bytes(pods, CONFIGS[2], PROFILE) == 41 * 2**29
