"""The suites judge a deliberately wrong node: exactly the right tests fail, and their messages name what is wrong.

Each case starts the reference VM's enforcer with one fault (it computes with the fault yet reports true facts),
runs a selection of the suites against it in a subprocess, and reads the JUnit results; a few pairs of cases share
one VM (SHARED_VM), each fault still failing exactly its own checks. Which tests must fail is
worked out by hand from the seeds below, not taken from the code under test. Every check's id starts with the
node's name (`[vm-…]`).
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.vm

ROOT = Path(__file__).resolve().parents[2]
RES_DEMO = "suites/resources/test_res_demo.py"
HIGH = "suites/memory_qos/test_memory_qos.py::test_memory_high_formula"
RATIOS_WITH_HIGH = ("32Mi-128Mi", "64Mi-128Mi", "96Mi-128Mi", "64Mi-nolimit")


@dataclass(frozen=True)
class FaultCase:
    """A fault, the tests to run against it, and the ones that must fail with what their messages must name."""

    fault: str
    selection: tuple[str, ...]
    must_fail: dict[str, tuple[str, ...]]


CPU_WEIGHT = 'value of cgroup "cpu.weight" for container'
MEMORY_HIGH = ('value of cgroup "memory.high" for container "app"', "; expected ", "(rule: ")
SWAP_MAX = ('value of cgroup "memory.swap.max" for container', "; expected ", "(rule: ")
TABLE = "suites/swap/test_semantics_table.py"
PRESSURE = "suites/swap/test_pressure.py"
PIDS = "suites/upstream/test_pids.py"
OOM_GROUP = "suites/upstream/test_oom_group.py"
HUGEPAGES = "suites/upstream/test_hugepages.py"
ALLOCATABLE = "suites/upstream/test_node_allocatable.py"
PSI = "suites/upstream/test_psi.py"
BELOW_USAGE = "suites/upstream/test_resize_below_usage.py"
SIDECAR_RESIZE = "suites/upstream/test_sidecar_resize.py"
OOM_INIT = "suites/upstream/test_oom_init.py"
DEFERRED = "suites/upstream/test_resize_deferred.py"
DEFERRED_RETRIED = "test_deferred_resize_completes_after_another_pod_shrinks"
EVICTION = "suites/resources/test_eviction.py"
PID_EVICTION = "suites/resources/test_pid_eviction.py"
ROLLBACK_TEST = "test_rollback_clears_the_qos_level_and_keeps_the_pod"
ROLLBACK = f"suites/memory_qos/test_rollback.py::{ROLLBACK_TEST}"
OOM_ALLOCATABLE = "suites/upstream/test_oom_allocatable.py"
KUBEPODS_LIMITS = f"{ALLOCATABLE}::test_kubepods_pids_and_hugepages_are_the_allocatable"
OOM_GROUP_VALUE = ('value of cgroup "memory.oom.group" for container "app" of pod "oom-group"', 'was "1"; expected "0"')
# KEP examples with an explicit limits.swap that LimitedSwap's own calculation does not reproduce: all but
# use-case-1 (swap "0" on a pod whose memory request equals its limit, which LimitedSwap also gives 0).
POD_LEVEL = "suites/upstream/test_pod_level_resources.py"
POD_LEVEL_HUGEPAGES = "suites/upstream/test_pod_level_hugepages.py"
# Its entries within 2 MiB pages and the pod cgroup's hugetlb.2MB.max each expects, MiB (upstream's tables: the
# pod-level hugepages-2Mi, or the container's where the pod names none); each pod is named by its id in lower case.
POD_LEVEL_HUGEPAGE_ENTRIES = {"plr-guaranteed-2Mi": 10, "plr-burstable-2Mi": 10, "plr-burstable-2Mi-containers-only": 4,
                              "hp-pod-2Mi": 6, "hp-pod-and-container-2Mi": 6, "hp-container-2Mi": 4,
                              "hp-requests-container-2Mi": 4}
# Pod-level cases whose containers carry a cpu request or inherit a pod-level cpu limit (shares 20..102): their
# runtime weight differs between the formulas; mixed-pod-memory-limit has no cpu request or limit anywhere in its
# containers (2 shares → weight 1 in both), and pod cgroups are written by the kubelet with the linear formula.
POD_LEVEL_CPU_CASES = ("guaranteed-container-resources", "guaranteed-no-container-resources",
                       "guaranteed-pod-and-container-resources", "guaranteed-1-container-with-resources",
                       "burstable-no-container-resources", "burstable-container-resources",
                       "burstable-1-container-with-resources", "mixed-pod-limits-only")
EXPLICIT_SWAP_EXAMPLES = ("limits-memory-unset", "limits-memory-lt-swap", "limits-memory-eq-swap",
                          "limits-memory-gt-swap", "limits-only-model", "guaranteed-with-swap",
                          "use-case-2-swap-enabled", "use-case-3-unlimited-swap", "use-case-4-pod-level-swap-mixed")


CASES = {
    # Linear weights (SEMANTICS.md CPU): 250m → 10 instead of 35 (the article's table), 500m → 20 instead of 59;
    # containers without a cpu request have 2 shares, weight 1 in both formulas, so memory-only pods pass. Against
    # the pod-level resources suite (upstream pod_level_resources.go): exactly the container cgroup step of every
    # case with a cpu request or a pod-level cpu limit fails; QoS and pod cgroup steps pass.
    "other-cpu-weight-formula": FaultCase("cpu-weight-formula=linear", (RES_DEMO, HIGH, POD_LEVEL), {
        "test_res_demo_container_pod_and_pause[vm]": (CPU_WEIGHT, 'was "10"; expected "35"', "(rule: "),
        "test_qos_class_slice_and_oom_score_adj[vm-guaranteed]": (CPU_WEIGHT, 'was "20"; expected "59"', "(rule: "),
        **{f"test_container_cgroups[vm-{case}]": (CPU_WEIGHT, "(rule: ") for case in POD_LEVEL_CPU_CASES},
    }),
    # Throttling factor 0.5 whatever the config says: every written memory.high differs (the suite's factors are
    # 0.9, 0.6, 0.3); request == limit keeps max. Under profile 1.38 the factor is unset by default, so the
    # QoS-class pods with Memory QoS on get a memory.high they must not have, except Guaranteed (request == limit);
    # res-demo runs with Memory QoS off, as on the article's node.
    "wrong-throttling-factor": FaultCase("memory-throttling-factor=0.5", (RES_DEMO, HIGH), {
        **{f"test_memory_high_formula[vm-{ratio}-factor{factor}]": MEMORY_HIGH
           for ratio in RATIOS_WITH_HIGH for factor in (0.9, 0.6, 0.3)},
        "test_qos_class_slice_and_oom_score_adj[vm-burstable]": (*MEMORY_HIGH[:2], '; expected "max"'),
        "test_qos_class_slice_and_oom_score_adj[vm-besteffort]": (*MEMORY_HIGH[:2], '; expected "max"'),
    }),
    # LimitedSwap that ignores explicit limits (KEP-5359 "workload swap wins"): on LimitedSwap nodes, every row
    # that sets limits.swap (container, pod, or "0") gets the calculated share instead; other modes are untouched.
    "limited-swap-ignores-explicit": FaultCase("limited-swap=ignore-explicit", (TABLE, "-k", "limitedswap"), {
        **{f"test_semantics_table_cell[vm-{row}-limitedswap]": SWAP_MAX
           for row in ("set-container", "set-pod", "set-zero")},
        **{f"test_kep_example[vm-{example}-limitedswap]": SWAP_MAX for example in EXPLICIT_SWAP_EXAMPLES},
    }),
    # LimitedSwap without GetContainerSwapBehavior's request == limit exclusion: a Burstable container whose memory
    # request equals its limit gets its request's share of swap, so its table cell and its pressure check (both
    # expect memory.swap.max 0) fail; the fill-to-the-share check (request 16Mi < limit 32Mi) is untouched.
    "limited-swap-ignores-request-limit": FaultCase("limited-swap=ignore-request-limit", (
        TABLE, PRESSURE, "-k", "request-eq-limit-limitedswap or limitedswap-proportional or limitedswap-request"), {
        "test_semantics_table_cell[vm-omitted-burstable-request-eq-limit-limitedswap]": SWAP_MAX,
        "test_swap_fills_to_its_limit_then_oom_kills[vm-limitedswap-request-eq-limit]": SWAP_MAX,
    }),
    # Three faults in one run (the node option takes `fault` more than once), each failing its own new check and
    # none another's. LimitedSwap without GetContainerSwapBehavior's critical exclusion (upstream swap_test.go "with a
    # critical pod"): the system-node-critical Burstable pod (request below its limit) gets its request's share of
    # swap, so its table cell and its pressure check (both expect memory.swap.max 0) fail; the fault drops the pod's
    # priority, so its oom_score_adj (-997 for a node-critical pod) is named in the same messages. Memory eviction
    # that ranks without priority (upstream eviction_test.go PriorityMemoryEvictionOrdering): the high-priority hog,
    # the larger, goes first; so does the high-priority fork bomb under PID pressure (PriorityPidEvictionOrdering of
    # the same file), which holds 72 processes to the low-priority one's 48 (rankPIDPressure: priority, then
    # processes). A node that does not enforce `pods` (upstream oomkiller_linux_test.go "... more memory
    # than node allocatable"): kubepods keeps the node's capacity as memory.max, so the hog without limits holds its
    # 256 MiB and runs on where it must be OOM-killed at the 160Mi left allocatable, and the LimitedSwap hog without a
    # limit holds its 144 MiB in memory with nothing in swap, where 16 MiB of it must lie beyond kubepods' 128Mi.
    "priority-and-allocatable-ignored": FaultCase(
        "limited-swap=ignore-critical&fault=eviction=ignore-priority&fault=pods-allocatable=ignore",
        (TABLE, PRESSURE, EVICTION, PID_EVICTION, OOM_ALLOCATABLE, "-k",
         "critical-limitedswap or limitedswap-critical or spares_by_priority or oom_killed_at_allocatable or "
         "holds_more_than_the_pods_memory or pid_pressure_evicts_by_priority"), {
            "test_semantics_table_cell[vm-omitted-critical-limitedswap]": SWAP_MAX,
            "test_swap_fills_to_its_limit_then_oom_kills[vm-limitedswap-critical]": SWAP_MAX,
            "test_memory_pressure_spares_by_priority[vm]": (
                'value of measurement "eviction order" for the node',
                'was "high-priority-memory-hog-pod, memory-hog-pod, guaranteed-pod"'),
            "test_pid_pressure_evicts_by_priority[vm]": (
                'value of measurement "eviction order" for the node',
                'was "fork-bomb-container-with-high-priority, fork-bomb-container-with-low-priority"'),
            "test_container_without_limits_is_oom_killed_at_allocatable[vm]": (
                'value of cgroup "memory.max" for the node', f'expected "{160 << 20}"',
                'value of measurement "termination reason (exit code)" for container "hog"',
                'was "running"; expected "OOMKilled (137)"'),
            "test_limitedswap_holds_more_than_the_pods_memory[vm]": (
                'value of cgroup "memory.max" for the node', f'expected "{128 << 20}"',
                'value of measurement "memory.swap.current of the hog" for container "app"'),
        }),
    # A node that ignores podPidsLimit (upstream e2e_node pids_test.go): the pod's pids.max stays "max", so the value
    # check and the fork check (no refusal among twice the limit, no pids.events max) fail; the pod's other cgroup
    # values are right.
    "pids-limit-ignored": FaultCase("pids-limit=ignore", (PIDS,), {
        "test_pod_pids_max_is_pod_pids_limit[vm]": ('value of cgroup "pids.max" for pod "pids"',
                                                    'was "max"; expected "32"', "(rule: podPidsLimit"),
        "test_fork_beyond_pids_max_fails[vm]": ('value of cgroup "pids.max" for pod "pids"',
                                                'was "no refusal"; expected "EAGAIN"', "pids.events max"),
    }),
    # A node that ignores singleProcessOOMKill (upstream oomkiller_linux_test.go): its containers keep
    # memory.oom.group 1, so under the option the pod's value check fails, and the OOM kill takes the whole container
    # (a group kill counted) where only the hog must die; without the option (oom-group) everything passes.
    "single-process-oom-kill-ignored": FaultCase("single-process-oom-kill=ignore", (OOM_GROUP,), {
        "test_pod_matches_the_oracle[vm-single-process]": OOM_GROUP_VALUE,
        "test_oom_kills_the_hog_or_the_whole_container[vm-single-process]": (
            *OOM_GROUP_VALUE, 'value of measurement "memory.events oom_group_kill grew by" for pod "oom-group"'),
    }),
    # A node that writes no hugetlb limit (upstream e2e_node hugepages_test.go): the pods' hugetlb.<size>.max stay
    # "max" where the kubelet writes 0 for every size a pod does not request and the request (4Mi) for the size it
    # does; so the pod holding 2 MiB pages touches all 3 it tries, none refused, no hugetlb.2MB.events max. The
    # container level passes: "max" there is containerd's documented deviation (its default config drops the CRI
    # hugepage limits). The pods themselves are admitted and their other values right. kubepods keeps "max" too where
    # the kubelet writes the pool (8 pages of 2 MiB, none reserved); its pids.max is right. The QoS tiers keep "max"
    # where the kubelet writes its unbounded 1 << 62.
    "hugetlb-ignored": FaultCase("hugetlb=ignore", (HUGEPAGES, KUBEPODS_LIMITS, POD_LEVEL_HUGEPAGES), {
        "test_unrequested_sizes_are_limited_to_zero[vm-pod]": (
            'value of cgroup "hugetlb.2MB.max" for pod "hugepages"', 'was "max"; expected "0"', "maybeSetHugetlb"),
        "test_requested_size_is_the_limit[vm-pod]": (
            'value of cgroup "hugetlb.2MB.max" for pod "hugepages-2mi"', 'was "max"; expected "4194304"',
            "HugePageLimits"),
        "test_pages_beyond_the_limit_fail[vm]": (
            'value of measurement "2 MiB pages touched of 3"', 'was "3"; expected "2"',
            'value of measurement "page 3 refused (not refused)"', 'was "no"; expected "yes"',
            'value of measurement "hugetlb.2MB.events max grew"'),
        "test_kubepods_pids_and_hugepages_are_the_allocatable[vm-hugetlb]": (
            'value of cgroup "hugetlb.2MB.max" for the node', f'was "max"; expected "{16 << 20}"',
            "getCgroupConfig HugePageLimits"),
        # The pod-level hugepages entries (pod_level_resources.go) the VM's 2 MiB pool runs: the pod cgroup keeps
        # "max" where the kubelet writes the pod-level hugepages (10Mi) or the containers' (4Mi).
        **{f"test_pod_level_hugepages_entry[vm-{entry}]": (
            f'value of cgroup "hugetlb.2MB.max" for pod "{entry.lower()}"', f'was "max"; expected "{mib << 20}"',
            "HugePageLimits") for entry, mib in POD_LEVEL_HUGEPAGE_ENTRIES.items()},
        **{f"test_qos_tiers_leave_huge_pages_unbounded[vm-{qos}]": (
            'value of cgroup "hugetlb.2MB.max" for the node', f'was "max"; expected "{1 << 62}"',
            "setHugePagesUnbounded") for qos in ("burstable", "besteffort")},
    }),
    # A node that never makes nor writes the reserve cgroups (upstream e2e_node node_container_manager_test.go): each
    # reserve cgroup's values are absent, the oracle's and upstream's alike, so no process can be held to its
    # memory.max; kubepods (`pods` enforced) is right.
    "reserved-cgroups-ignored": FaultCase("reserved-cgroups=ignore", (ALLOCATABLE,), {
        **{f"test_reserve_cgroup_carries_its_reservation[vm-{reserve}]": (
            'value of cgroup "pids.max" for the node', f'was (absent); expected "{pids}"',
            f"(rule: {reserve} pid (enforceExistingCgroup)", "the reserve cgroup carries its reservation")
           for reserve, pids in (("system-reserved", 1000), ("kube-reserved", 738))},
        "test_a_process_in_system_reserved_is_held_to_its_memory_max[vm]": (
            'value of cgroup "memory.max" for the node', f'was (absent); expected "{100 << 20}"'),
    }),
    # A node whose PSI counters carry the kernel's µs (cadvisor divides by 10^6): the stalled hog's memory counter is
    # 10^6 times the seconds, above the kernel total read after it; the names and the pressure files are right.
    # A node that decides resizes without usage (upstream pod_resize.go "decrease memory limit below usage"): the
    # decrease to 32Mi below the 48 MiB the container holds is Applied where the kubelet keeps it in progress, at
    # container and pod level; the slight decrease before it applies either way.
    "resize-usage-ignored": FaultCase("resize-usage=ignore", (BELOW_USAGE,), {
        f"test_memory_limit_below_usage_waits[vm-{level}]": (
            'value of measurement "resize status" for pod', 'was "Applied"; expected "InProgress"',
            "below usage to 32Mi")
        for level in ("container", "pod")}),
    # A node that leaves sidecars out of a resize (upstream pod_resize.go "... + resize initContainers"): the
    # sidecar keeps its cpu and memory values (and the pod cgroup its share of them) after the resize, so every
    # entry fails at the sidecar's cgroup; the rollback back to the original values then matches again.
    # (the entry that moves cpu and memory in opposite directions, of each policy: the other six fail alike.)
    "sidecar-resize-ignored": FaultCase("sidecar-resize=ignore", (SIDECAR_RESIZE, "-k", "opposite-directions"), {
        f"test_sidecar_resize[vm-{policy}-cpu-mem-opposite-directions]": (
            f'for container "s-{policy}" of pod "resize-sidecar"',)
        for policy in ("no-restart", "cpu-mem-restart")}),
    # A node that misses OOM kills in its container statuses (upstream oomkiller_linux_test.go "init container"):
    # the OOM-killed init container ends with reason Error; its exit code (137) and the rest are right.
    "oom-reason-ignored": FaultCase("oom-reason=ignore", (OOM_INIT,), {
        "test_init_container_oom_killed[vm]": (
            'value of measurement "status reason" for container "init" of pod "oom-init"',
            'was "Error"; expected "OOMKilled"')}),
    # A node that never retries a deferred resize (upstream node/pod_resize.go "pod-resize-retry-deferred-test-1"):
    # B's resize stays Deferred after A's shrink frees room, so its status and its cpu.max (60% of 6 parts' value)
    # stay; the deferral itself and A's resize are right.
    "resize-retry-ignored": FaultCase("resize-retry=ignore", (f"{DEFERRED}::{DEFERRED_RETRIED}",), {
        "test_deferred_resize_completes_after_another_pod_shrinks[vm]": (
            'value of measurement "resize status" for pod "deferred-b"', 'was "Deferred"; expected "Applied"',
            'value of cgroup "cpu.max" for container "cb" of pod "deferred-b"')}),
    # A kubelet restart keeps the running pod's memory.low (upstream memory_qos_test.go "[known limitation]", the
    # pod's and the container's "persist"); the faulty agent rewrites them for the new configuration: 0 under None.
    "memory-qos-restart-ignored": FaultCase("memory-qos-restart=ignore", (ROLLBACK,), {
        f"{ROLLBACK_TEST}[vm-{rollback}]": (
            f'value of cgroup "memory.low" for container "app" of pod "memqos-{rollback}"',
            f'was "0"; expected "{128 * 2**20}"') for rollback in ("gate-off", "policy-none")}),
    "psi-metrics-micro": FaultCase("psi-metrics=micro", (PSI,), {
        "test_kubelet_psi_metrics_follow_the_kernel_counters[vm]": (
            'value of measurement "container_pressure_memory_waiting_seconds_total between the kernel\'s some totals',
            'for container "hog" of pod "psi"', "µs / 1e6"),
    }),
}


# Cases whose selections share no check (no -k either) and whose faults change disjoint rules run on one VM, with
# all their faults and selections: each fault must still fail exactly its own checks, and one boot and agent start
# (~30 s of the test command) is saved per case joined (the rollback fault's two checks add ~10 s to the first run).
SHARED_VM = (("pids-limit-ignored", "psi-metrics-micro", "memory-qos-restart-ignored"),
             ("single-process-oom-kill-ignored", "resize-retry-ignored"),
             ("resize-usage-ignored", "oom-reason-ignored"))
RUNS = {"+".join(names): tuple(CASES[name] for name in names)
        for names in (*SHARED_VM, *((name,) for name in CASES if not any(name in pair for pair in SHARED_VM)))}


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str
    message: str


def _run_suites(cases: tuple[FaultCase, ...], tmp_path: Path) -> tuple[int, list[Outcome], str]:
    """The cases' selections run against one VM with all their faults."""
    junit = tmp_path / "junit.xml"
    node = "vm?" + "&".join(f"fault={case.fault}" for case in cases)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", f"--node={node}",
            f"--junitxml={junit}", *(part for case in cases for part in case.selection)]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    if not junit.exists():
        raise AssertionError(f"no JUnit results from {' '.join(argv)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    outcomes = []
    for testcase in ET.parse(junit).iter("testcase"):
        status, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = testcase.find(kind)
            if found is not None:
                status, message = kind, (found.get("message") or "") + "\n" + (found.text or "")
        outcomes.append(Outcome(testcase.get("name", ""), status, message))
    return proc.returncode, outcomes, proc.stdout[-3000:]


@pytest.mark.parametrize("case", list(RUNS))
def test_a_wrong_node_fails_exactly_the_right_tests(case: str, tmp_path: Path) -> None:
    cases = RUNS[case]
    must_fail = {name: texts for fault_case in cases for name, texts in fault_case.must_fail.items()}
    code, outcomes, tail = _run_suites(cases, tmp_path)
    failed = {o.name for o in outcomes if o.status == "failure"}
    broken = [o for o in outcomes if o.status == "error"]
    assert not broken, f"{case}: infrastructure errors, not check failures:\n" + "\n".join(
        f"{o.name}: {o.message[:500]}" for o in broken)
    assert failed == set(must_fail), (
        f"{case}: failed {sorted(failed)}; expected exactly {sorted(must_fail)}\n{tail}")
    assert code == 1, f"{case}: pytest exit code {code}, expected 1 (some check failed)"
    for o in outcomes:
        if o.status == "failure":
            first = o.message.strip().splitlines()[0]
            assert "compared values differ from the oracle" in first, f"{o.name}: unstable first line {first!r}"
            for name in must_fail[o.name]:
                assert name in o.message, f"{o.name}: the message does not say {name!r}:\n{o.message[:2000]}"
