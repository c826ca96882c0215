"""KubeletConfiguration v1beta1 subset: defaults, values, and errors naming the field."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from nodeconf.errors import InputError
from nodeconf.kubelet_config import FIELDS, KubeletConfig, kubelet_config_from_dict, kubelet_config_to_dict
from nodeconf.quantity import Quantity

KIND = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}


def test_defaults_of_an_empty_config() -> None:
    config = kubelet_config_from_dict(dict(KIND))
    assert config == KubeletConfig()
    assert (config.swap_behavior, config.cgroup_driver) == ("NoSwap", "systemd")
    assert config.cpu_cfs_quota_period_us == 100_000
    assert config.eviction_hard is None and config.enforce_node_allocatable == ("pods",)


def test_fields() -> None:
    config = kubelet_config_from_dict({
        **KIND,
        "memorySwap": {"swapBehavior": "LimitedSwap"},
        "featureGates": {"MemoryQoS": True},
        "memoryThrottlingFactor": 0.8,
        "memoryReservationPolicy": "TieredReservation",
        "systemReserved": {"cpu": "200m", "memory": "512Mi"},
        "evictionHard": {"memory.available": "200Mi"},
        "mergeDefaultEvictionSettings": True,
        "enforceNodeAllocatable": ["pods", "system-reserved"],
        "systemReservedCgroup": "/system.slice",
        "cgroupDriver": "cgroupfs",
        "singleProcessOOMKill": True,
        "cpuCFSQuota": False,
        "cpuCFSQuotaPeriod": "50ms",
    })
    assert config.swap_behavior == "LimitedSwap" and config.gate("MemoryQoS") is True
    assert config.memory_throttling_factor == 0.8 and config.memory_reservation_policy == "TieredReservation"
    assert config.system_reserved["memory"] == Quantity.parse("512Mi")
    assert config.eviction_hard == {"memory.available": "200Mi"} and config.merge_default_eviction_settings
    assert config.enforce_node_allocatable == ("pods", "system-reserved")
    assert (config.cgroup_driver, config.single_process_oom_kill, config.cpu_cfs_quota) == ("cgroupfs", True, False)
    assert config.cpu_cfs_quota_period_us == 50_000
    assert kubelet_config_from_dict(kubelet_config_to_dict(config), config.source) == config


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param({"memorySwap": {"swapBehavior": "UnlimitedSwap"}}, "memorySwap.swapBehavior", id="swap-enum"),
        pytest.param({"cgroupDriver": "lxc"}, "cgroupDriver", id="driver-enum"),
        pytest.param({"memoryReservationPolicy": "All"}, "memoryReservationPolicy", id="reservation-enum"),
        pytest.param({"memoryThrottlingFactor": 2}, "memoryThrottlingFactor", id="factor-range"),
        pytest.param({"systemReserved": {"memory": "lots"}}, "systemReserved.memory", id="bad-quantity"),
        pytest.param({"featureGates": {"MemoryQoS": "yes"}}, "featureGates", id="gate-not-bool"),
        pytest.param({"singleProcessOOMKill": "true"}, "singleProcessOOMKill", id="flag-not-bool"),
        pytest.param({"cpuCFSQuotaPeriod": "fast"}, "cpuCFSQuotaPeriod", id="bad-duration"),
        pytest.param({"enforceNodeAllocatable": ["everything"]}, "enforceNodeAllocatable", id="enforce-enum"),
        pytest.param({"kind": "Pod"}, "kind", id="wrong-kind"),
        pytest.param({"maxPods": -1}, "maxPods", id="max-pods-negative"),
        pytest.param({"runtimeRequestTimeout": "2 minutes"}, "runtimeRequestTimeout", id="timeout-not-a-duration"),
        pytest.param({"runtimeRequestTimeout": 120}, "runtimeRequestTimeout", id="timeout-not-a-string"),
        pytest.param({"runtimeRequestTimeout": "-1m"}, "runtimeRequestTimeout", id="timeout-negative"),
    ],
)
def test_bad_values_name_the_field(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        kubelet_config_from_dict({**KIND, **patch}, "kubelet.yaml")
    assert err.value.field == field
    assert str(err.value).startswith("kubelet.yaml: KubeletConfiguration: " + field)


def test_the_field_table_covers_every_attribute_once() -> None:
    attrs = [f.attr for f in FIELDS]
    assert sorted(attrs) == sorted(f.name for f in fields(KubeletConfig) if f.name != "source")
    assert len({f.path for f in FIELDS}) == len(FIELDS)


def test_every_field_survives_writing_and_parsing() -> None:
    config = KubeletConfig(
        swap_behavior="LimitedSwap", feature_gates={"MemoryQoS": True}, memory_throttling_factor=0.8,
        memory_reservation_policy="TieredReservation", system_reserved={"memory": Quantity.parse("1Gi")},
        kube_reserved={"cpu": Quantity.parse("100m")}, eviction_hard={"memory.available": "200Mi"},
        merge_default_eviction_settings=True, enforce_node_allocatable=("pods", "kube-reserved"),
        cgroup_driver="cgroupfs", single_process_oom_kill=True, cpu_cfs_quota=False, cpu_cfs_quota_period_us=50_000,
        max_pods=20, pod_pids_limit=1024, system_reserved_cgroup="", kube_reserved_cgroup="/kube.slice",
        cpu_manager_policy="static", cpu_manager_policy_options={"full-pcpus-only": "true"}, reserved_system_cpus="0",
        runtime_request_timeout_ns=600 * 10**9,
    )
    assert all(getattr(config, f.attr) != getattr(KubeletConfig(), f.attr) for f in FIELDS
               if f.attr != "system_reserved_cgroup"), "each field must differ from its default to be tested"
    assert kubelet_config_from_dict(kubelet_config_to_dict(config)) == config


# runtimeRequestTimeout is a metav1.Duration: time.ParseDuration text; v1beta1 defaults.go
# SetDefaults_KubeletConfiguration makes an unset (zero) one 2m0s. Values from Go's time package documentation
# (ParseDuration's examples "1h10m10s" and "1.5h"; Duration.String's "1h15m30.918273645s"; "2m0s" as the
# kubelet's flag help prints its default).
@pytest.mark.parametrize(("text", "seconds", "written"), [
    (None, 120, None), ("0s", 120, None), ("2m0s", 120, None), ("10m", 600, "10m0s"), ("1h10m10s", 4210, "1h10m10s"),
    ("1.5h", 5400, "1h30m0s"), ("1h15m30.918273645s", 4530.918273645, "1h15m30.918273645s"), ("300ms", 0.3, "300ms"),
])
def test_runtime_request_timeout_is_a_go_duration_defaulting_to_two_minutes(text: str | None, seconds: float,
                                                                          written: str | None) -> None:
    config = kubelet_config_from_dict({**KIND, **({} if text is None else {"runtimeRequestTimeout": text})})
    assert config.runtime_request_timeout == pytest.approx(seconds)
    assert kubelet_config_to_dict(config).get("runtimeRequestTimeout") == written
