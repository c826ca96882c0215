"""Node facts from a Node object and the helper probe; the live kubelet config from /configz; kind configs."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from nodeconf.errors import InputError
from nodeconf.infra.kind.configs import KIND_DIR, kind_advice, kind_configs
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.loader import load_kubelet_config
from nodeconf.nodes.kube.facts import (
    COMPARED_FIELDS,
    NOT_COMPARED_FIELDS,
    is_kind_node,
    kubelet_config_differences,
    kubelet_minor_version,
    live_kubelet_config,
    node_facts,
)
from nodeconf.resources import SOURCE_DIR
from tests.unit.nodes.kube.fakes import CONFIGZ, node_doc

PROBE = {"pageSize": 4096, "meminfo": "MemTotal:  8148820 kB\nSwapTotal:  1048576 kB\nHugePages_Total:  0\n",
         "kernelRelease": "6.1.0-28-amd64",
         "kubepods": "kubelet.slice/kubelet-kubepods.slice", "controllers": ["cpuset", "cpu", "memory", "pids"]}


def test_node_facts_from_node_object_and_probe() -> None:
    facts = node_facts(node_doc(), PROBE, "linear")
    assert facts.memory_capacity == 3479660 * 1024
    assert facts.cpu_capacity_milli == 2000
    assert facts.swap_capacity == 4 * 1024**3  # nodeInfo.swap wins over /proc/meminfo
    assert facts.page_size == 4096
    assert facts.kernel_version == "6.1.0-28-amd64"
    assert facts.cgroup_controllers == ("cpuset", "cpu", "memory", "pids")
    assert (facts.cpu_weight_formula, facts.measured_cpu_weight_formula) == ("nonlinear", "linear")
    assert (facts.runtime, facts.runtime_version, facts.kubelet_version) == ("containerd", "2.1.1", "v1.34.2")


def test_huge_page_pools_come_from_the_node_capacity() -> None:
    """status.capacity hugepages-<size> (the kubelet's CapacityFromMachineInfo) → (size, bytes), smallest first."""
    doc = node_doc()
    doc["status"]["capacity"].update({"hugepages-1Gi": "0", "hugepages-2Mi": "16Mi"})
    assert node_facts(doc, PROBE, "linear").hugepages == ((2 * 1024**2, 16 * 1024**2), (1024**3, 0))
    assert node_facts(node_doc(), PROBE, "linear").hugepages == ()


def test_swap_falls_back_to_meminfo_without_node_swap_status() -> None:
    doc = node_doc()
    del doc["status"]["nodeInfo"]["swap"]
    assert node_facts(doc, PROBE, "linear").swap_capacity == 1024**3


@pytest.mark.parametrize(("doc", "field"), [
    pytest.param(node_doc(capacity={"cpu": "2", "memory": "lots"}), "status.capacity.memory", id="bad-memory"),
    pytest.param(node_doc(nodeInfo={"swap": {"capacity": "4Gi"}}), "status.nodeInfo.swap.capacity",
                 id="bad-swap"),
])
def test_bad_node_fields_are_named(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        node_facts(doc, PROBE, "linear")
    assert err.value.field == field
    assert "Node/kind-control-plane" in str(err.value)


def test_odd_page_size_from_probe_is_an_input_error() -> None:
    with pytest.raises(InputError, match="page size"):
        node_facts(node_doc(), {**PROBE, "pageSize": 3000}, "linear")


@pytest.mark.parametrize(("version", "minor"), [("v1.34.2", "1.34"), ("v1.38.0-alpha.1", "1.38"),
                                                ("v1.31.0+k3s1", "1.31"), ("1.36.1", "1.36")])
def test_kubelet_minor_version(version: str, minor: str) -> None:
    assert kubelet_minor_version(node_doc(nodeInfo={"kubeletVersion": version})) == minor


def test_unreadable_kubelet_version() -> None:
    with pytest.raises(InputError, match="kubeletVersion"):
        kubelet_minor_version(node_doc(nodeInfo={"kubeletVersion": "unknown"}))


def test_kind_nodes_are_recognised_by_provider_id() -> None:
    assert is_kind_node(node_doc())
    assert not is_kind_node({**node_doc(), "spec": {"providerID": "aws:///eu-west-1a/i-0abc"}})


def test_live_config_from_configz() -> None:
    live = live_kubelet_config(json.dumps(CONFIGZ), "kind-control-plane")
    assert live.swap_behavior == "LimitedSwap"
    assert live.feature_gates == {"MemoryQoS": True}
    assert live.memory_throttling_factor == 0.9
    assert live.cpu_cfs_quota_period_us == 100_000


@pytest.mark.parametrize("text", ["not json", json.dumps({"other": {}}), json.dumps([1])])
def test_bad_configz_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError, match="node n1 /configz"):
        live_kubelet_config(text, "n1")


def requested(**doc: Any) -> KubeletConfig:
    return kubelet_config_from_dict({"kind": "KubeletConfiguration", **doc}, "test.yaml")


LIVE = live_kubelet_config(json.dumps(CONFIGZ), "kind-control-plane")


@pytest.mark.parametrize(("doc", "differences"), [
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}}, [], id="same-mode"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "memoryThrottlingFactor": 0.9,
                  "evictionHard": {"memory.available": "104857600"}}, [], id="defaults-spelled-out"),
    pytest.param({"memorySwap": {"swapBehavior": "NoSwap"}},
                 ["memorySwap.swapBehavior: requested NoSwap, node has LimitedSwap"], id="other-mode"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "memoryThrottlingFactor": 0.8},
                 ["memoryThrottlingFactor: requested 0.8, node has 0.9"], id="factor"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "featureGates": {"WorkloadControlledSwap": True}},
                 ["featureGates.WorkloadControlledSwap: requested True, node has unset"], id="gate-missing"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "featureGates": {"MemoryQoS": False}},
                 ["featureGates.MemoryQoS: requested False, node has True"], id="gate-differs"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "systemReserved": {"memory": "1Gi"}},
                 ["systemReserved: requested {memory: 1Gi}, node has {}"], id="reserve"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "evictionHard": {"memory.available": "500Mi"}},
                 ["evictionHard.memory.available: requested 500Mi, node has 100Mi"], id="eviction"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "maxPods": 20},
                 ["maxPods: requested 20, node has 110"], id="max-pods"),
    pytest.param({"memorySwap": {"swapBehavior": "LimitedSwap"}, "memoryReservationPolicy": "TieredReservation"},
                 ["memoryReservationPolicy: requested TieredReservation, node has None"], id="reservation"),
])
def test_config_differences(doc: dict[str, Any], differences: list[str]) -> None:
    assert kubelet_config_differences(requested(**doc), LIVE) == differences


def live_with_gates(gates: dict[str, bool]) -> KubeletConfig:
    return live_kubelet_config(json.dumps({"kubeletconfig": dict(CONFIGZ["kubeletconfig"], featureGates=gates)}), "n")


@pytest.mark.parametrize(("version", "doc", "live", "differences"), [
    # MemoryQoS is off by default through 1.36 and on from 1.37 (seed article; v1.37 Memory QoS blog).
    pytest.param("1.34", {}, LIVE, ["featureGates.MemoryQoS: profile 1.34 has False, node has True"],
                 id="node-sets-a-gate-the-profile-leaves-off"),
    pytest.param("1.37", {}, LIVE, [], id="profile-default-matches-node"),
    pytest.param("1.34", {"featureGates": {"MemoryQoS": True}}, LIVE, [], id="request-names-the-gate"),
    # A check that asks for a gate at its default runs on a node that leaves the gate unset (issue 29).
    pytest.param("1.36", {"featureGates": {"MemoryQoS": False}}, live_with_gates({}), [],
                 id="request-names-the-default-the-node-leaves-unset"),
    pytest.param("1.36", {"featureGates": {"MemoryQoS": True}}, live_with_gates({}),
                 ["featureGates.MemoryQoS: requested True, node has unset (profile 1.36: False)"],
                 id="request-needs-a-gate-the-node-leaves-at-its-default"),
    pytest.param("1.38", {}, live_with_gates({"MemoryQoS": False}),
                 ["featureGates.MemoryQoS: profile 1.38 has True, node has False"],
                 id="node-turns-a-profile-gate-off"),
    # WorkloadControlledSwap is alpha in 1.38 (KEP-5359): off in the profile, so a node that turns it on differs.
    pytest.param("1.38", {}, live_with_gates({"MemoryQoS": True, "WorkloadControlledSwap": True}),
                 ["featureGates.WorkloadControlledSwap: profile 1.38 has False, node has True"],
                 id="node-turns-an-alpha-gate-on"),
])
def test_profile_gates_are_compared(version: str, doc: dict[str, Any], live: KubeletConfig,
                                    differences: list[str]) -> None:
    wanted = requested(memorySwap={"swapBehavior": "LimitedSwap"}, **doc)
    assert kubelet_config_differences(wanted, live, version) == differences


def test_kind_default_eviction_drops_the_memory_threshold() -> None:
    """kind writes evictionHard with disk signals only: the memory.available default (100Mi) is then gone."""
    kind_live = dict(CONFIGZ["kubeletconfig"], evictionHard={"nodefs.available": "0%", "imagefs.available": "0%"})
    live = live_kubelet_config(json.dumps({"kubeletconfig": kind_live}), "kind-control-plane")
    assert kubelet_config_differences(requested(memorySwap={"swapBehavior": "LimitedSwap"}), live) == [
        "evictionHard.memory.available: requested 100Mi, node has None"]


def test_every_kubelet_config_field_is_either_compared_or_explained() -> None:
    assert set(COMPARED_FIELDS) | NOT_COMPARED_FIELDS == {f.name for f in fields(KubeletConfig)}
    assert not set(COMPARED_FIELDS) & NOT_COMPARED_FIELDS


@pytest.mark.parametrize(("name", "swap", "gates", "reservation"), [
    ("noswap.yaml", "NoSwap", {}, "None"),
    ("limitedswap.yaml", "LimitedSwap", {}, "None"),
    ("memoryqos.yaml", "NoSwap", {"MemoryQoS": True}, "TieredReservation"),
])
def test_kind_cluster_configs(name: str, swap: str, gates: dict[str, bool], reservation: str) -> None:
    config = kind_configs()[KIND_DIR / name]
    assert (config.swap_behavior, dict(config.feature_gates), config.memory_reservation_policy) == (
        swap, gates, reservation)
    assert config.cgroup_driver == "systemd"
    assert config.eviction_hard == {"memory.available": "100Mi"}
    header = (KIND_DIR / name).read_text().splitlines()[:3]
    assert any("kind create cluster --name nodeconf-" in line and f"--config nodeconf/infra/kind/{name}" in line
               for line in header)


@pytest.mark.parametrize("kind_file", ["noswap.yaml", "limitedswap.yaml", "memoryqos.yaml"])
def test_each_kind_cluster_accepts_the_kubelet_config_its_header_names(kind_file: str) -> None:
    """`nodeconf run --kubelet-config X` on the cluster the header creates: configure() finds no difference."""
    run_line = next(line for line in (KIND_DIR / kind_file).read_text().splitlines() if line.startswith("# Run:"))
    workload = SOURCE_DIR / run_line.split("--kubelet-config ")[1].strip()
    wanted = load_kubelet_config(workload)
    assert kubelet_config_differences(wanted, kind_configs()[KIND_DIR / kind_file]) == []
    assert kind_file in kind_advice(wanted)


def test_no_kind_config_needs_a_gate_no_released_node_image_knows() -> None:
    """kind passes featureGates to every component unchecked: a WorkloadControlledSwap cluster cannot be created
    (KEP-5359 is not merged), so none is offered and the advice says why."""
    assert all(config.swap_behavior != "WorkloadControlledSwap" and "WorkloadControlledSwap" not in
               config.feature_gates for config in kind_configs().values())
    advice = kind_advice(requested(memorySwap={"swapBehavior": "WorkloadControlledSwap"},
                                   featureGates={"WorkloadControlledSwap": True}))
    assert "kind create cluster" not in advice
    assert "no released kind node image knows the WorkloadControlledSwap feature gate" in advice
    assert "WorkloadControlledSwap" in (KIND_DIR / "README.md").read_text()


def test_kind_advice_names_the_matching_config() -> None:
    advice = kind_advice(requested(memorySwap={"swapBehavior": "LimitedSwap"}))
    assert f"kind create cluster --config {KIND_DIR / 'limitedswap.yaml'}" in advice
    assert "no config" in kind_advice(requested(memorySwap={"swapBehavior": "LimitedSwap"},
                                                systemReserved={"memory": "1Gi"}))


def test_kind_config_without_kubelet_patch_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")
    with pytest.raises(InputError, match="one KubeletConfiguration patch"):
        kind_configs(tmp_path)


@pytest.mark.parametrize(("runtime", "kubepods", "config"), [
    pytest.param("containerd://1.7.27", "kubepods.slice", (("SystemdCgroup", "True"),), id="containerd-systemd"),
    pytest.param("containerd://2.1.4", "kubelet.slice/kubelet-kubepods.slice", (("SystemdCgroup", "True"),),
                 id="containerd-systemd-kind"),
    pytest.param("containerd://1.6.20", "kubepods", (("SystemdCgroup", "False"),), id="containerd-cgroupfs"),
    pytest.param("cri-o://1.34.1", "kubepods.slice", (), id="cri-o-has-no-such-option"),
])
def test_containerds_cgroup_driver_from_the_kubelets_layout(runtime: str, kubepods: str,
                                                            config: tuple[tuple[str, str], ...]) -> None:
    node = node_doc()
    node["status"]["nodeInfo"]["containerRuntimeVersion"] = runtime
    assert node_facts(node, {**PROBE, "kubepods": kubepods}, "linear").runtime_config == config
