"""CPU: shares, CFS quota, `cpu.max` and the two shares→`cpu.weight` formulas (SEMANTICS.md "CPU")."""

from __future__ import annotations

import math

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import CPU, Container, Pod
from nodeconf.node_facts import NEITHER_FORMULA, NodeFacts
from nodeconf.semantics.documents import ARTICLE
from nodeconf.semantics.expectation import Expected, QosClass
from nodeconf.semantics.pod_resources import (
    every_container_limits,
    milli,
    pod_level_limits_set,
    pod_limits,
    pod_requests,
)
from nodeconf.semantics.profile import Profile

# pkg/kubelet/cm/helpers_linux.go constants.
MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100_000
MIN_QUOTA_PERIOD = 1000
# cgroup v2 cpu.weight range (kernel Documentation/admin-guide/cgroup-v2.rst "cpu.weight").
MIN_WEIGHT = 1
MAX_WEIGHT = 10_000
# systemd keeps CPUQuota as a whole percent: 10 ms of CPU per second (opencontainers/cgroups systemd addCPUQuota).
SYSTEMD_QUOTA_STEP_USEC = 10_000
USEC_PER_SEC = 1_000_000
SYSTEMD_ROUNDING = ("opencontainers/runc#4622: under the systemd cgroup driver runc >= 1.3.2 (opencontainers/cgroups "
                    "v0.0.4 addCPUQuota) writes the quota rounded up to 10 ms per second to cpu.max too; upstream e2e "
                    "(GetCPULimitCgroupExpectations) accepts both values")


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """pkg/kubelet/cm/helpers_linux.go MilliCPUToShares: m*1024/1000, clamped to [2, 262144]."""
    if milli_cpu == 0:
        return MIN_SHARES
    shares = milli_cpu * SHARES_PER_CPU // MILLI_CPU_TO_CPU
    return min(max(shares, MIN_SHARES), MAX_SHARES)


def milli_cpu_to_quota(milli_cpu: int, period: int) -> int:
    """pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota: m*period/1000, at least 1000; 0 for no limit."""
    if milli_cpu == 0:
        return 0
    return max(milli_cpu * period // MILLI_CPU_TO_CPU, MIN_QUOTA_PERIOD)


def linear_weight(shares: int) -> int:
    """pkg/kubelet/cm/cgroup_manager_linux.go getCPUWeight (and runc ≤ 1.3.1): 1 + ((shares-2)*9999)/262142."""
    shares = min(max(shares, MIN_SHARES), MAX_SHARES)
    return 1 + ((shares - MIN_SHARES) * (MAX_WEIGHT - 1)) // (MAX_SHARES - MIN_SHARES)


def nonlinear_weight(shares: int) -> int:
    """opencontainers/cgroups utils.go ConvertCPUSharesToCgroupV2Value (runc ≥ 1.3.2, crun ≥ 1.23)."""
    if shares <= MIN_SHARES:
        return MIN_WEIGHT
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    exponent_base = math.log2(shares)
    exponent = (exponent_base * exponent_base + 125 * exponent_base) / 612.0 - 7.0 / 34.0
    return math.ceil(math.pow(10, exponent))


def measured_formula(shares: int, observed_weight: int) -> str:
    """Which shares→weight formula a runtime used, from one container's `cpu.weight` (seed article: 250m → 256
    shares → 10 linear, 35 non-linear); NEITHER_FORMULA when it matches neither, so that exactly the cpu.weight checks
    fail on such a node instead of all of them.
    ValueError when the shares cannot tell the formulas apart."""
    linear, nonlinear = linear_weight(shares), nonlinear_weight(shares)
    if linear == nonlinear:
        raise ValueError(f"{shares} shares give weight {linear} under both formulas; probe with another request")
    if observed_weight == nonlinear:
        return "nonlinear"
    if observed_weight == linear:
        return "linear"
    return NEITHER_FORMULA


def runtime_note(node: NodeFacts) -> str:
    """What the node's runtime was measured doing, for a container cpu.weight rule ("" when not measured)."""
    measured = node.measured_cpu_weight_formula
    if not measured:
        return ""
    name = node.runtime or "runtime"
    runtime = name if node.runtime_version in ("", name) else f"{name} {node.runtime_version}"
    if measured == NEITHER_FORMULA:
        return f"; the node's runtime {runtime} follows neither formula (its probe container's cpu.weight matched " \
               "neither)"
    note = f"; the node's runtime {runtime} uses the {measured} formula"
    if measured != node.cpu_weight_formula:
        note += f" (accept it with --cpu-weight-formula {measured})"
    return note


def weight(shares: int, formula: str) -> int:
    """The conversion named by `formula` (SEMANTICS.md "CPU": two formulas)."""
    return nonlinear_weight(shares) if formula == "nonlinear" else linear_weight(shares)


def quota_period(config: KubeletConfig, profile: Profile) -> int:
    """cpuCFSQuotaPeriod applies only with CustomCPUCFSQuotaPeriod (kuberuntime_container_linux.go)."""
    return config.cpu_cfs_quota_period_us if profile.gate("CustomCPUCFSQuotaPeriod") else QUOTA_PERIOD


def cpu_max(quota: int, period: int) -> str:
    """`cpu.max` as read back: "<quota> <period>", "max <period>" when unlimited (cgroup-v2.rst)."""
    return f"{quota if quota > 0 else 'max'} {period}"


def systemd_quota_per_second(quota: int, period: int) -> int:
    """opencontainers/cgroups systemd/common.go addCPUQuota: CPUQuotaPerSecUSec = quota·10⁶/period (integer
    division), rounded up to a multiple of 10 000 µs; quota > 0."""
    per_second = quota * USEC_PER_SEC // period
    return -(-per_second // SYSTEMD_QUOTA_STEP_USEC) * SYSTEMD_QUOTA_STEP_USEC


def systemd_rounded_quota(quota: int, period: int) -> int:
    """The rounded quota converted back to the period (the value cgroups ≥ v0.0.4 also writes to cpu.max)."""
    return systemd_quota_per_second(quota, period) * period // USEC_PER_SEC


def quota_expected(quota: int, period: int, rule: str, config: KubeletConfig) -> Expected:
    """cpu.max for a quota; under the systemd cgroup driver, systemd's rounded quota is an accepted deviation.

    Seed and SEMANTICS give MilliCPUToQuota exactly, which stays the expected value; the rounding is the runtime's
    (cgroupfs driver: none, so a rounded value there fails)."""
    value = cpu_max(quota, period)
    rounded = systemd_rounded_quota(quota, period) if quota > 0 else quota
    if config.cgroup_driver != "systemd" or rounded == quota:
        return Expected(value, rule)
    return Expected(value, rule, accepted={cpu_max(rounded, period): SYSTEMD_ROUNDING})


def container_shares(pod: Pod, container: Container, profile: Profile) -> int:
    """kuberuntime_container_linux.go calculateLinuxResources: the request's shares; the limit's (pod-level
    limit standing in for a missing one) only when no request is given at all, so an explicit `0` gives 2."""
    request = container.resources.request(CPU)
    if request is None:
        return milli_cpu_to_shares(_container_cpu_limit(pod, container, profile))
    return milli_cpu_to_shares(request.milli_value())


def _container_cpu_limit(pod: Pod, container: Container, profile: Profile) -> int:
    """Container cpu limit in millicores, else the pod-level limit (kuberuntime getCPULimit), else 0."""
    limit = container.resources.limit(CPU)
    if (limit is None or limit.is_zero()) and pod_level_limits_set(pod, profile) and pod.resources:
        limit = pod.resources.limit(CPU)
    return limit.milli_value() if limit is not None else 0


def container_files(
    pod: Pod, container: Container, node: NodeFacts, config: KubeletConfig, profile: Profile
) -> dict[str, Expected]:
    """A container cgroup's cpu.weight (runtime formula) and cpu.max (seed requests-limits-qos table)."""
    shares = container_shares(pod, container, profile)
    period = quota_period(config, profile)
    quota = milli_cpu_to_quota(_container_cpu_limit(pod, container, profile), period)
    quota_rule = "kuberuntime calculateLinuxResources: MilliCPUToQuota(limit, period); no limit → max"
    if not config.cpu_cfs_quota:
        quota, period = 0, QUOTA_PERIOD
        quota_rule = "cpuCFSQuota: false → no quota or period sent, kernel default (calculateLinuxResources)"
    return {
        "cpu.weight": Expected(
            str(weight(shares, node.cpu_weight_formula)),
            f"{node.cpu_weight_formula} shares→weight of MilliCPUToShares(request)={shares} "
            f'(runtime formula for containers, {ARTICLE}, section "What the numbers turn into: cgroup v2")'
            f"{runtime_note(node)}",
        ),
        "cpu.max": quota_expected(quota, period, quota_rule, config),
    }


def pod_files(pod: Pod, qos: QosClass, config: KubeletConfig, profile: Profile) -> dict[str, Expected]:
    """The pod cgroup's cpu.weight (kubelet, linear) and cpu.max (helpers_linux.go ResourceConfigForPod)."""
    period = quota_period(config, profile)
    if qos is QosClass.BEST_EFFORT:
        return {
            "cpu.weight": Expected(str(linear_weight(MIN_SHARES)), "ResourceConfigForPod: BestEffort → 2 shares"),
            "cpu.max": Expected(cpu_max(0, QUOTA_PERIOD), "ResourceConfigForPod: BestEffort has no quota"),
        }
    shares = milli_cpu_to_shares(milli(pod_requests(pod, profile).get(CPU, 0)))
    files = {
        "cpu.weight": Expected(
            str(linear_weight(shares)),
            f"kubelet linear weight of MilliCPUToShares(pod requests)={shares} (cgroup_manager_linux getCPUWeight)",
        )
    }
    declared = every_container_limits(pod, CPU) or (
        pod_level_limits_set(pod, profile) and pod.resources is not None and CPU in pod.resources.limits
    )
    if qos is QosClass.GUARANTEED or declared:
        quota = milli_cpu_to_quota(milli(pod_limits(pod, profile).get(CPU, 0)), period)
        rule = "ResourceConfigForPod: MilliCPUToQuota(sum of limits) when every container has a cpu limit"
        if not config.cpu_cfs_quota:
            quota, rule = 0, "cpuCFSQuota: false → quota -1 (ResourceConfigForPod)"
        files["cpu.max"] = quota_expected(quota, period, rule, config)
    else:
        files["cpu.max"] = Expected(
            cpu_max(0, QUOTA_PERIOD), "ResourceConfigForPod: a container without cpu limit → no pod quota"
        )
    return files


def burstable_files(burstable_pods: list[Pod], profile: Profile) -> dict[str, Expected]:
    """kubepods-burstable: shares of the sum of Burstable pod cpu requests (qos_container_manager_linux.go
    setCPUCgroupConfig), linear weight."""
    total = sum(milli(pod_requests(p, profile).get(CPU, 0)) for p in burstable_pods)
    shares = milli_cpu_to_shares(total)
    return {
        "cpu.weight": Expected(
            str(linear_weight(shares)), f"linear weight of MilliCPUToShares(Burstable requests {total}m)"
        ),
        "cpu.max": Expected(cpu_max(0, QUOTA_PERIOD), "QoS cgroups have no cpu quota"),
    }


def besteffort_files() -> dict[str, Expected]:
    """kubepods-besteffort: MinShares → weight 1 (qos_container_manager_linux.go setCPUCgroupConfig)."""
    return {
        "cpu.weight": Expected(str(linear_weight(MIN_SHARES)), "BestEffort QoS cgroup: 2 shares"),
        "cpu.max": Expected(cpu_max(0, QUOTA_PERIOD), "QoS cgroups have no cpu quota"),
    }


def kubepods_files(allocatable_cpu_milli: int) -> dict[str, Expected]:
    """kubepods: shares of node allocatable cpu (node_container_manager_linux.go getCgroupConfig), linear."""
    shares = milli_cpu_to_shares(allocatable_cpu_milli)
    return {
        "cpu.weight": Expected(
            str(linear_weight(shares)),
            f"linear weight of MilliCPUToShares(allocatable {allocatable_cpu_milli}m) (getCgroupConfig)",
        ),
        "cpu.max": Expected(cpu_max(0, QUOTA_PERIOD), "kubepods has no cpu quota"),
    }


def pause_files() -> dict[str, Expected]:
    """The sandbox (pause) container: 2 shares → weight 1, no quota (seed requests-limits-qos hands-on)."""
    return {
        "cpu.weight": Expected("1", f"pause container: minimum shares ({ARTICLE})"),
        "cpu.max": Expected(cpu_max(0, QUOTA_PERIOD), f"pause container: no quota ({ARTICLE})"),
    }
