"""Refuse configs the kubelet refuses and expectations no kubelet can write, before anything is printed.

Sources: pkg/kubelet/apis/config/validation/validation.go (cpuCFSQuotaPeriod needs CustomCPUCFSQuotaPeriod);
kernel/sched/core.c tg_set_cfs_bandwidth (cpu.max: quota and period at least 1 ms, period at most 1 s, quota at
most max_cfs_runtime = 2^44-1 µs); cgroup-v2.rst (cpu.weight 1..10000); the kubelet's int64 arithmetic for bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.quantity import INT64_MAX
from nodeconf.semantics.expectation import CgroupExpectation, NodeExpectation
from nodeconf.semantics.profile import Profile

DEFAULT_CFS_PERIOD_US = 100_000
MIN_CFS_US, MAX_CFS_PERIOD_US, MAX_CFS_QUOTA_US = 1_000, 1_000_000, 2**44 - 1
CPU_WEIGHT = (1, 10_000)


def check_kubelet_accepts(config: KubeletConfig, profile: Profile) -> None:
    """The kubelet refuses to start with a non-default cpuCFSQuotaPeriod unless CustomCPUCFSQuotaPeriod is on."""
    if config.cpu_cfs_quota_period_us != DEFAULT_CFS_PERIOD_US and not profile.gate("CustomCPUCFSQuotaPeriod"):
        raise InputError(
            f"invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {config.cpu_cfs_quota_period_us}us "
            "requires feature gate CustomCPUCFSQuotaPeriod", source=config.source, obj="KubeletConfiguration",
            field="cpuCFSQuotaPeriod")


def _problem(name: str, value: str) -> str | None:
    """Why the kernel (or the kubelet's int64) cannot take `value` for cgroup file `name`; None when it can."""
    words = value.split()
    if not all(w == "max" or w.lstrip("-").isdigit() for w in words):
        return None  # not a number file (e.g. cpu.weight formulas' text); nothing to range-check
    numbers = [int(w) for w in words if w != "max"]
    if any(abs(n) > INT64_MAX for n in numbers):
        return f"{name} value beyond int64: the kubelet computes it in int64 and cannot write it"
    if name == "cpu.max" and len(words) == 2:
        quota, period = words
        if not MIN_CFS_US <= int(period) <= MAX_CFS_PERIOD_US:
            return f"cpu.max period {period} µs outside the kernel's 1000..1000000"
        if quota != "max" and not MIN_CFS_US <= int(quota) <= MAX_CFS_QUOTA_US:
            return (f"cpu.max quota {quota} µs outside the kernel's {MIN_CFS_US}..{MAX_CFS_QUOTA_US} "
                    "(max_cfs_runtime): the runtime cannot write it")
    if name == "cpu.weight" and numbers and not CPU_WEIGHT[0] <= numbers[0] <= CPU_WEIGHT[1]:
        return f"cpu.weight {numbers[0]} outside the kernel's 1..10000"
    return None


def _cgroups(result: NodeExpectation) -> Iterator[tuple[str, str, CgroupExpectation]]:
    """(source file, object, cgroup) of every cgroup the expectation names."""
    for cgroup in result.cgroups.values():
        yield "", "node", cgroup
    for p in result.pods:
        obj = f"Pod/{p.pod.ref}"
        if p.cgroup is not None:
            yield p.pod.source, obj, p.cgroup
        for c in (*p.containers, *((p.pause,) if p.pause is not None else ())):
            yield p.pod.source, obj, c.cgroup


def check_writable(result: NodeExpectation) -> None:
    """InputError naming the pod when an expected value is one no kubelet can write (too large for the kernel
    or for int64): such a pod cannot run on any node, so no expectation is printed for it."""
    for source, obj, cgroup in _cgroups(result):
        for name, expected in cgroup.files.items():
            problem = _problem(name, expected.value)
            if problem is not None:
                raise InputError(problem, source=source, obj=obj, field=name)
    for name, value in result.metrics.items():
        if abs(value) > INT64_MAX:
            raise InputError("metric beyond int64: no kubelet can expose it", obj="node", field=name)
