"""CPU: upstream MilliCPUToShares/MilliCPUToQuota tables, both shares→weight formulas, cgroup files."""

from __future__ import annotations

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import cpu
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import GI, pod
from suites.toolkit.builders import container as ctr

PROFILE = profile_for()
CONFIG = KubeletConfig()


# pkg/kubelet/cm/helpers_linux_test.go TestMilliCPUToShares (both table generations).
@pytest.mark.parametrize(
    ("milli", "shares"),
    [(0, 2), (1, 2), (2, 2), (3, 3), (5, 5), (10, 10), (100, 102), (200, 204), (500, 512), (1000, 1024),
     (2000, 2048), (255999, 262142), (256000, 262144), (256001, 262144), (1000000, 262144)],
)
def test_milli_cpu_to_shares_upstream_table(milli: int, shares: int) -> None:
    assert cpu.milli_cpu_to_shares(milli) == shares


# pkg/kubelet/cm/helpers_linux_test.go TestMilliCPUToQuota.
@pytest.mark.parametrize(
    ("milli", "period", "quota"),
    [(0, 0, 0), (5, 100000, 1000), (9, 100000, 1000), (10, 100000, 1000), (200, 100000, 20000),
     (500, 100000, 50000), (1000, 100000, 100000), (1500, 100000, 150000)],
)
def test_milli_cpu_to_quota_upstream_table(milli: int, period: int, quota: int) -> None:
    assert cpu.milli_cpu_to_quota(milli, period) == quota


# opencontainers/cgroups utils_test.go TestConvertCPUSharesToCgroupV2Value; 256 → 35 from the article.
@pytest.mark.parametrize(
    ("shares", "weight"),
    [(1, 1), (2, 1), (3, 2), (256, 35), (1024, 100), (262143, 10000), (262144, 10000), (262145, 10000)],
)
def test_nonlinear_weight(shares: int, weight: int) -> None:
    assert cpu.nonlinear_weight(shares) == weight


# 1 + ((s-2)*9999)//262142: 256 → 10 and 2048 → 79 (article), 1024 → 39 (article "one core 39");
# 51 → 2 and 102 → 4 (kubelet helpers_linux_test.go TestCPUSharesEqualAfterV2RoundTrip: still linear upstream).
@pytest.mark.parametrize(
    ("shares", "weight"), [(2, 1), (51, 2), (102, 4), (256, 10), (1024, 39), (2048, 79), (262144, 10000)]
)
def test_linear_weight(shares: int, weight: int) -> None:
    assert cpu.linear_weight(shares) == weight


RES_DEMO = pod(ctr("hello", {"cpu": "250m", "memory": "128Mi"}, {"cpu": "500m", "memory": "128Mi"}), name="res-demo")


@pytest.mark.parametrize(("formula", "weight"), [("nonlinear", "35"), ("linear", "10")])
def test_res_demo_container_files(formula: str, weight: str) -> None:
    node = NodeFacts(memory_capacity=4 * GI, cpu_weight_formula=formula)
    p = with_api_defaults(RES_DEMO)
    files = cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)
    assert (files["cpu.weight"].value, files["cpu.max"].value) == (weight, "50000 100000")


def test_res_demo_pod_files_use_the_linear_formula() -> None:
    p = with_api_defaults(RES_DEMO)
    files = cpu.pod_files(p, QosClass.BURSTABLE, CONFIG, PROFILE)
    assert (files["cpu.weight"].value, files["cpu.max"].value) == ("10", "50000 100000")


def test_no_limit_means_max() -> None:
    p = with_api_defaults(pod(ctr("a", {"cpu": "250m"}), ctr("b", {"cpu": "100m"}, {"cpu": "1"})))
    node = NodeFacts(memory_capacity=4 * GI)
    assert cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)["cpu.max"].value == "max 100000"
    assert cpu.container_files(p, p.containers[1], node, CONFIG, PROFILE)["cpu.max"].value == "100000 100000"
    pod_files = cpu.pod_files(p, QosClass.BURSTABLE, CONFIG, PROFILE)
    # 350m → 358 shares → 1 + (356*9999)//262142 = 14; one container has no limit → no pod quota.
    assert (pod_files["cpu.weight"].value, pod_files["cpu.max"].value) == ("14", "max 100000")


def test_limit_alone_gives_request_shares() -> None:
    p = with_api_defaults(pod(ctr("a", None, {"cpu": "1"})))
    node = NodeFacts(memory_capacity=4 * GI)
    assert cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)["cpu.weight"].value == "100"


@pytest.mark.parametrize("limits", [None, {"cpu": "1"}], ids=["no-limit", "with-limit"])
def test_explicit_zero_request_is_minimum(limits: dict[str, str] | None) -> None:
    """calculateLinuxResources takes the limit's shares only when the request is absent (cpuRequest == nil)."""
    p = with_api_defaults(pod(ctr("a", {"cpu": "0"}, limits)))
    assert cpu.container_shares(p, p.containers[0], PROFILE) == 2


def test_pod_level_limit_gives_shares_to_a_container_without_request() -> None:
    p = pod(ctr("a"), resources={"limits": {"cpu": "1", "memory": "1Gi"}})
    assert cpu.container_shares(p, p.containers[0], PROFILE) == 1024


# kubernetes test/e2e/framework/pod GetCPULimitCgroupExpectations (opencontainers/runc#4622): 15m → 1500 or 2000,
# 20m → 2000 only; 25m is systemd's 3000 measured on sid + systemd + runc 1.3.6 after a resize.
@pytest.mark.parametrize(("milli", "accepted"), [(15, {"2000 100000"}), (20, set()), (25, {"3000 100000"}),
                                                 (1234, {"124000 100000"}), (1000, set())])
def test_systemd_driver_accepts_the_rounded_quota(milli: int, accepted: set[str]) -> None:
    p = with_api_defaults(pod(ctr("a", {"cpu": f"{milli}m"}, {"cpu": f"{milli}m", "memory": "64Mi"})))
    node = NodeFacts(memory_capacity=4 * GI)
    for config, extra in ((CONFIG, accepted), (KubeletConfig(cgroup_driver="cgroupfs"), set())):
        container = cpu.container_files(p, p.containers[0], node, config, PROFILE)["cpu.max"]
        pod_level = cpu.pod_files(p, QosClass.GUARANTEED, config, PROFILE)["cpu.max"]
        for expected in (container, pod_level):
            assert expected.value == f"{milli * 100} 100000"
            assert set(expected.accepted) == extra
            assert all("runc#4622" in issue for issue in expected.accepted.values())


def test_cpu_cfs_quota_off() -> None:
    p = with_api_defaults(RES_DEMO)
    config = KubeletConfig(cpu_cfs_quota=False)
    node = NodeFacts(memory_capacity=4 * GI)
    assert cpu.container_files(p, p.containers[0], node, config, PROFILE)["cpu.max"].value == "max 100000"
    assert cpu.pod_files(p, QosClass.BURSTABLE, config, PROFILE)["cpu.max"].value == "max 100000"


def test_besteffort_pod() -> None:
    p = with_api_defaults(pod(ctr("a")))
    files = cpu.pod_files(p, QosClass.BEST_EFFORT, CONFIG, PROFILE)
    assert (files["cpu.weight"].value, files["cpu.max"].value) == ("1", "max 100000")


def test_sidecar_and_init_containers_in_pod_shares() -> None:
    """Pod requests: max(sum(regular + sidecars), largest init + earlier sidecars) (PodRequests)."""
    p = with_api_defaults(pod(
        ctr("app", {"cpu": "100m"}, {"cpu": "200m"}),
        init=(ctr("side", {"cpu": "100m"}, {"cpu": "100m"}, restartPolicy="Always"),
              ctr("setup", {"cpu": "500m"}, {"cpu": "500m"})),
    ))
    files = cpu.pod_files(p, QosClass.BURSTABLE, CONFIG, PROFILE)
    # requests max(200m, 500m+100m) = 600m → 614 shares → 1 + (612*9999)//262142 = 24;
    # limits max(300m, 600m) = 600m → quota 60000.
    assert (files["cpu.weight"].value, files["cpu.max"].value) == ("24", "60000 100000")


def test_pod_level_limit_gives_pod_quota_and_container_ceiling() -> None:
    p = with_api_defaults(pod(ctr("a", {"cpu": "100m"}), ctr("b", {"cpu": "100m"}),
                              resources={"limits": {"cpu": "1", "memory": "1Gi"}}))
    node = NodeFacts(memory_capacity=4 * GI)
    assert cpu.pod_files(p, QosClass.BURSTABLE, CONFIG, PROFILE)["cpu.max"].value == "100000 100000"
    assert cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)["cpu.max"].value == "100000 100000"


@pytest.mark.parametrize(
    ("total_milli", "weight"), [(0, "1"), (250, "10"), (1000, "39")], ids=["no-burstable", "res-demo", "one-core"]
)
def test_burstable_slice(total_milli: int, weight: str) -> None:
    pods = [with_api_defaults(pod(ctr("a", {"cpu": f"{total_milli}m"})))] if total_milli else []
    assert cpu.burstable_files(pods, PROFILE)["cpu.weight"].value == weight


def test_kubepods_on_two_cores_is_79() -> None:
    """Article: "kubepods.slice on a two-core node has 79"."""
    assert cpu.kubepods_files(2000)["cpu.weight"].value == "79"


def test_custom_period_needs_its_gate() -> None:
    config = KubeletConfig(cpu_cfs_quota_period_us=50_000)
    assert cpu.quota_period(config, PROFILE) == 100_000


def test_custom_period_with_its_gate() -> None:
    config = KubeletConfig(cpu_cfs_quota_period_us=50_000, feature_gates={"CustomCPUCFSQuotaPeriod": True})
    profile = profile_for("1.38", config)
    p = with_api_defaults(RES_DEMO)
    node = NodeFacts(memory_capacity=4 * GI)
    # 500m × 50000 / 1000 = 25000 µs per 50000 µs period.
    assert cpu.container_files(p, p.containers[0], node, config, profile)["cpu.max"].value == "25000 50000"
    assert cpu.pod_files(p, QosClass.BURSTABLE, config, profile)["cpu.max"].value == "25000 50000"


@pytest.mark.parametrize(("shares", "weight", "formula"), [
    # Seed article: 250m → 256 shares → weight 35 (runc ≥ 1.3.2) or 10 (older runc).
    pytest.param(256, 35, "nonlinear", id="article-new-runc"),
    pytest.param(256, 10, "linear", id="article-old-runc"),
    # 1024 shares → exactly 100 non-linear (SEMANTICS.md); linear 1 + 1022*9999//262142 = 39.
    pytest.param(1024, 100, "nonlinear", id="one-cpu-new"),
    pytest.param(1024, 39, "linear", id="one-cpu-old"),
])
def test_measured_formula_from_one_container(shares: int, weight: int, formula: str) -> None:
    assert cpu.measured_formula(shares, weight) == formula


def test_measured_formula_refuses_ambiguous_shares_and_names_a_foreign_value() -> None:
    with pytest.raises(ValueError, match="both formulas"):
        cpu.measured_formula(2, 1)
    # A probe whose 256 shares left cpu.weight at its default 100 (what crun 0.17's scope showed on bullseye).
    assert cpu.measured_formula(256, 100) == "neither"


def test_a_runtime_that_follows_neither_formula_is_named_without_an_escape() -> None:
    """Neither formula can be declared acceptable for such a runtime: its container cpu.weight checks fail."""
    node = NodeFacts(memory_capacity=4 * GI, runtime="crun", runtime_version="0.17",
                     measured_cpu_weight_formula="neither")
    note = cpu.runtime_note(node)
    assert note == "; the node's runtime crun 0.17 follows neither formula (its probe container's cpu.weight " \
                   "matched neither)"
    p = with_api_defaults(RES_DEMO)
    want = cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)["cpu.weight"]
    assert (want.value, want.rule.endswith(note)) == ("35", True)


# A node whose runtime (bookworm's runc) was measured using the old formula.
LINEAR_RUNC = NodeFacts(memory_capacity=4 * GI, runtime="runc", runtime_version="1.1.5",
                        measured_cpu_weight_formula="linear")


@pytest.mark.parametrize(("declared", "weight"), [(None, "35"), ("nonlinear", "35"), ("linear", "10")])
def test_expectation_follows_the_run_not_the_measurement(declared: str | None, weight: str) -> None:
    """A linear-measured node still expects the non-linear 35 for 250m unless the run declares linear."""
    from suites.toolkit.kubelet import oracle_facts

    node = LINEAR_RUNC if declared is None else oracle_facts(LINEAR_RUNC, declared)
    p = with_api_defaults(RES_DEMO)
    assert cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)["cpu.weight"].value == weight


def test_weight_rule_names_the_runtime_its_version_and_formula() -> None:
    p = with_api_defaults(RES_DEMO)
    rule = cpu.container_files(p, p.containers[0], LINEAR_RUNC, CONFIG, PROFILE)["cpu.weight"].rule
    assert rule.startswith("nonlinear shares→weight of MilliCPUToShares(request)=256")
    assert rule.endswith("the node's runtime runc 1.1.5 uses the linear formula "
                         "(accept it with --cpu-weight-formula linear)")


def test_weight_rule_without_a_measurement_names_no_runtime() -> None:
    p = with_api_defaults(RES_DEMO)
    node = NodeFacts(memory_capacity=4 * GI)
    assert "the node's runtime" not in cpu.container_files(p, p.containers[0], node, CONFIG, PROFILE)["cpu.weight"].rule
