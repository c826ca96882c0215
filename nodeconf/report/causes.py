"""Failed and broken checks grouped by cause: what each of their mismatches is about (`value of cgroup "cpu.weight"
for container`), so that 80 checks failing for one reason read as one line, with one example that names the reason.

A check's mismatches are the structured rows of its comparison tables (nodeconf.report.comparison), never its
message: the message is for people and may be worded anew.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from nodeconf.report.comparison import Mismatch
from nodeconf.report.results import first_line

MAX_EXAMPLE = 400
# What to check or change, by what a cause is about (first match wins). Versions: RUNTIME-FACTS.md §3a (runc
# CHANGELOG "[1.3.2]", crun NEWS "crun-1.23"); the kubelet settings are KubeletConfiguration fields.
ADVICE: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), text) for pattern, text in (
    (r'"cpu\.weight" for container', "container cpu.weight is the runtime's shares→weight formula; a runtime "
     "writing the linear one fails here: upgrade to runc ≥ 1.3.2 / crun ≥ 1.23, or accept it with "
     "--cpu-weight-formula linear"),
    (r'"cpu\.weight"', "pod, QoS and kubepods cpu.weight are the kubelet's (linear formula of the cpu requests "
     "and of allocatable cpu): check systemReserved/kubeReserved and the kubelet's cgroup driver"),
    (r'"cpu\.max"', "check the cpu limits reached the runtime and CFS bandwidth control (CONFIG_CFS_BANDWIDTH)"),
    (r'"memory\.swap\.', "check memorySwap.swapBehavior (and the WorkloadControlledSwap gate for limits.swap), "
     "swap accounting in the kernel (memory.swap.* files) and that the runtime writes OCI memory.swap"),
    (r'"memory\.(?:high|min|low)"', "check the MemoryQoS gate, memoryThrottlingFactor and memoryReservationPolicy "
     "in the kubelet config (memory.high needs a 5.9+ kernel to be safe)"),
    (r'"memory\.oom\.group"', "check singleProcessOOMKill in the kubelet config (cgroup v2 containers get "
     "memory.oom.group=1 unless it is true)"),
    (r'"memory\.max"', "check the memory limits reached the runtime and systemReserved/kubeReserved for kubepods"),
    (r'"oom_score_adj"', "check the kubelet's QoS → oom_score_adj policy reached the runtime (and "
     "restrict_oom_score_adj in containerd's CRI config)"),
    (r'"hugetlb\.', "check huge pages are reserved on the node and containerd's disable_hugetlb_controller"),
    (r'"pids\.', "check podPidsLimit in the kubelet config and the pids controller (CONFIG_CGROUP_PIDS)"),
    (r"^path", "the cgroup layout differs: check the kubelet's cgroupDriver matches the runtime's (SystemdCgroup)"),
))
BROKEN_ADVICE = ("no verdict was reached: check the node is reachable and its prerequisites (see the message and "
                 "the enforcer log), then run again")


@dataclass(frozen=True)
class Failure:
    """One failed or broken check: its id, status, whole message, and the compared values that differ."""

    check: str
    status: str
    message: str
    mismatches: tuple[Mismatch, ...] = ()


@dataclass(frozen=True)
class Cause:
    """Checks that share a cause: their status, what their mismatches are about, and one mismatch line."""

    status: str
    about: str
    checks: tuple[str, ...]
    example: str

    @property
    def advice(self) -> str:
        """What to check or change for this cause ("" when nodeconf has no advice for it)."""
        return advice(self.status, self.about)


def advice(status: str, about: str) -> str:
    """The ADVICE for what a cause is about; for a broken check without a mismatch, BROKEN_ADVICE."""
    found = next((text for pattern, text in ADVICE if pattern.search(about)), "")
    return found or (BROKEN_ADVICE if status == "broken" else "")


def causes(failures: Iterable[Failure]) -> list[Cause]:
    """The failures grouped by status and by what each mismatch is about (a check counts once in each group its
    mismatches name); a check without mismatches is grouped by its message's first line. Largest group first,
    each with the first mismatch met as its example, its cgroup path left out."""
    groups: dict[tuple[str, str], tuple[list[str], str]] = {}
    for failure in failures:
        found: dict[str, str] = {}
        for mismatch in failure.mismatches:
            found.setdefault(mismatch.about, mismatch.line(at_path=False))
        if not failure.mismatches:
            first = first_line(failure.message) or "(no message)"
            found[first[:MAX_EXAMPLE]] = first
        for about, line in found.items():
            checks, _ = groups.setdefault((failure.status, about), ([], line[:MAX_EXAMPLE]))
            checks.append(failure.check)
    return sorted((Cause(status, about, tuple(checks), example)
                   for (status, about), (checks, example) in groups.items()),
                  key=lambda cause: (-len(cause.checks), cause.status, cause.about))
