"""Swap through `expect()` and `nodeconf explain`: cgroup files, events, refusals and the allocated-swap metric."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config, load_objects
from nodeconf.manifest import Container, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for

ROOT = Path(__file__).resolve().parents[3]
KEP = ROOT / "workloads" / "kep-5359"
CONFIGS = {mode: KEP / "kubelet-config" / f"{name}.yaml" for mode, name in (
    ("NoSwap", "no-swap"), ("LimitedSwap", "limited-swap"), ("WorkloadControlledSwap", "workload-controlled-swap"))}
NODE = NodeFacts(memory_capacity=8 * 2**30, swap_capacity=4 * 2**30)
PROFILE = profile_for("1.38", KubeletConfig(feature_gates={"WorkloadControlledSwap": True}))  # alpha: off by default
MIXED = KEP / "use-case-4-pod-level-swap-mixed.yaml"


def pods(*paths: Path) -> list[Pod]:
    return [o for o in load_objects(paths) if isinstance(o, Pod)]


def test_mixed_pod_on_each_mode_through_expect() -> None:
    for mode, path in CONFIGS.items():
        config = load_kubelet_config(path)
        assert config.swap_behavior == mode
        result = expect(pods(MIXED), NODE, config, PROFILE).pod("pod-level-swap-mixed")
        assert result.admitted and result.cgroup is not None
        swap_files = {c.name: c.cgroup.files["memory.swap.max"].value for c in result.containers}
        if mode == "NoSwap":
            assert set(swap_files.values()) == {"0"}
            assert result.cgroup.files["memory.swap.max"].value == "max"
            assert [e.reason for e in result.events] == ["SwapNotSupported"]
        else:
            assert swap_files == {"c1-latency-sensitive": "0", "c2-swap-worker": "536870912",
                                  "c3-helper-a": "2147483648", "c4-helper-b": "2147483648"}
            assert result.cgroup.files["memory.swap.max"].value == "2147483648"
            assert result.events == ()


def ctr(name: str, requests: dict[str, str], limits: dict[str, str]) -> Container:
    return Container(name, resources=Resources(requests={k: Quantity.parse(v) for k, v in requests.items()},
                                               limits={k: Quantity.parse(v) for k, v in limits.items()}))


@pytest.mark.parametrize(
    "container, message",
    [
        pytest.param(ctr("a", {"swap": "0"}, {}), "spec.containers[0].resources.requests[swap]: Forbidden: swap may "
                     "only be specified in limits, not requests", id="requests-swap-zero"),
        pytest.param(ctr("a", {}, {"swap": "-1Gi"}), 'spec.containers[0].resources.limits[swap]: Invalid value: '
                     '"-1Gi": must be greater than or equal to 0', id="negative"),
    ],
)
def test_invalid_swap_pod_is_reported_not_admitted(container: Container, message: str) -> None:
    config = load_kubelet_config(CONFIGS["WorkloadControlledSwap"])
    result = expect([Pod("bad", containers=(container,))], NODE, config, PROFILE).pod("bad")
    assert not result.admitted
    assert result.errors.count(message) == 1 and len(result.errors) == 1


def test_allocated_swap_metric_over_admitted_pods() -> None:
    # Admitted: the mixed pod (pod-level 2Gi counts once) and use case 2 (1Gi); the invalid pod adds nothing.
    invalid = Pod("refused", containers=(ctr("a", {"swap": "1Gi"}, {"swap": "1Gi"}),))
    config = load_kubelet_config(CONFIGS["LimitedSwap"])
    result = expect([*pods(MIXED, KEP / "use-case-2-swap-enabled.yaml"), invalid], NODE, config, PROFILE)
    assert result.metrics["kubelet_node_swap_allocated_bytes"] == 3 * 2**30


def explain(*args: str | Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "nodeconf", "explain", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_explain_json_shows_swap_files_events_and_metric() -> None:
    out = explain(MIXED, KEP / "limits-memory-unset.yaml", "--kubelet-config", CONFIGS["WorkloadControlledSwap"],
                  "--memory", "8Gi", "--swap", "4Gi")
    assert out["node"]["swapBehavior"] == "WorkloadControlledSwap"
    by_name = {p["name"]: p for p in out["pods"]}
    mixed = by_name["pod-level-swap-mixed"]
    assert mixed["qosClass"] == "Burstable" and mixed["cgroup"]["files"]["memory.swap.max"] == "2147483648"
    assert [c["cgroup"]["files"]["memory.swap.max"] for c in mixed["containers"]] == [
        "0", "536870912", "2147483648", "2147483648"]
    unset = by_name["memory-unset"]
    assert unset["qosClass"] == "BestEffort"
    assert unset["containers"][0]["cgroup"]["files"]["memory.swap.max"] == "1073741824"
    assert unset["containers"][0]["cgroup"]["files"]["memory.max"] == "max"
    assert out["metrics"]["kubelet_node_swap_allocated_bytes"] == 3 * 2**30


@pytest.mark.parametrize(("gate", "events"), [
    pytest.param("true", [("Warning", "SwapNotSupported")], id="gate-on"),
    # KEP-5359 "Version Skew": a node without the feature falls back to its swapBehavior, limits.swap unread.
    pytest.param(None, [], id="default-gates"),
])
def test_explain_json_warns_on_noswap_node(tmp_path: Path, gate: str | None, events: list[tuple[str, str]]) -> None:
    kubelet = tmp_path / "kubelet.yaml"
    kubelet.write_text("kind: KubeletConfiguration\nmemorySwap: {swapBehavior: NoSwap}\n"
                       + (f"featureGates: {{WorkloadControlledSwap: {gate}}}\n" if gate else ""))
    out = explain(KEP / "use-case-2-swap-enabled.yaml", "--kubelet-config", kubelet)
    (pod,) = out["pods"]
    assert pod["admitted"] is True
    assert [(e["type"], e["reason"]) for e in pod["events"]] == events
    assert pod["containers"][0]["cgroup"]["files"]["memory.swap.max"] == "0"
    assert out["metrics"]["kubelet_node_swap_allocated_bytes"] == 0


@pytest.mark.parametrize(
    "name, memory_max, swap_max",
    [
        ("limits-memory-unset.yaml", "max", "1073741824"),
        ("limits-memory-lt-swap.yaml", "1073741824", "4294967296"),
        ("limits-memory-eq-swap.yaml", "2147483648", "2147483648"),
        ("limits-memory-gt-swap.yaml", "2147483648", "1073741824"),
    ],
    ids=["memory-unset", "memory-lt-swap", "memory-eq-swap", "memory-gt-swap"],
)
def test_kep_limits_memory_vs_limits_swap_table(name: str, memory_max: str, swap_max: str) -> None:
    # KEP-5359 "Relationship between limits.swap and limits.memory": the cgroup v2 settings column.
    config = load_kubelet_config(CONFIGS["WorkloadControlledSwap"])
    (pod,) = expect(pods(KEP / name), NODE, config, PROFILE).pods
    files = pod.containers[0].cgroup.files
    assert (files["memory.max"].value, files["memory.swap.max"].value) == (memory_max, swap_max)


def test_mixed_pod_memory_max_from_pod_level_limit() -> None:
    # KEP table, first row: memory.max = max "(or pod-level limits.memory if set)": the helpers get the pod's 8Gi.
    config = load_kubelet_config(CONFIGS["WorkloadControlledSwap"])
    result = expect(pods(MIXED), NODE, config, PROFILE).pod("pod-level-swap-mixed")
    assert result.cgroup is not None and result.cgroup.files["memory.max"].value == "8589934592"
    assert [c.cgroup.files["memory.max"].value for c in result.containers] == [
        "1073741824", "2147483648", "8589934592", "8589934592"]
