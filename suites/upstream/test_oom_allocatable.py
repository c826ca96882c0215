"""A container without limits killed by the OOM killer at the node-allocatable ceiling (kubepods memory.max).

Source: upstream test/e2e_node/oomkiller_linux_test.go "OOMKiller for pod using more memory than node allocatable"
/ "single process container without resource limits" (kubeReserved takes 35 % of the node's memory, a container
without limits allocates beyond what is left; its status must say OOMKilled). On the 2 GiB reference VM under
emulation nodeconf reserves all but ALLOCATABLE_MIB instead, so the hog crosses the ceiling with a few hundred MiB,
not a GiB; the container's own memory.max stays max, so only the ceiling can kill it.

Guarantees relied on (mm/memcontrol.c, mm/oom_kill.c, Documentation/admin-guide/cgroup-v2.rst): memory.max of an
ancestor bounds the whole subtree; a charge above it that reclaim cannot satisfy (anonymous pages, and a BestEffort
container has memory.swap.max 0 in every swap mode) invokes the OOM killer in that ancestor's memcg, which kills the
task of highest badness (the hog: the most memory and oom_score_adj 1000, against the pause processes' -998); the
kill is counted in memory.events oom_kill of the victim's cgroup and its ancestors, from which the runtime and the
kubelet report the container as terminated with reason OOMKilled and exit code 137.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.manifest import MEMORY
from nodeconf.quantity import Quantity
from nodeconf.semantics.cgroup_paths import kubepods
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.builders import container, pod
from suites.toolkit.checks import check_admission, check_qos, deploy_pods
from suites.toolkit.compare import assert_matches, compare_node_cgroups, compare_reason, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle
from suites.toolkit.pods import memhog
from suites.toolkit.pressure import watch_hogs

pytestmark = [pytest.mark.upstream_e2e(
    file="test/e2e_node/oomkiller_linux_test.go",
    case="OOMKiller for pod using more memory than node allocatable [LinuxOnly] [Serial] / single process container "
         "without resource limits / The containers terminated by OOM killer should have the reason set to OOMKilled")]

pytestmark.append(pytest.mark.runs_alone("reserves nearly all the node's memory (kubeReserved) and fills kubepods"))

ALLOCATABLE_MIB = 160
HOG_MIB = 256
# No memory.available threshold, so none is copied to allocatableMemory.available (helpers.go
# addAllocatableThresholds): with the default 100Mi the node would evict the hog once kubepods' working set passed
# 60Mi, racing the OOM kill at 160Mi.
NO_MEMORY_THRESHOLD = {"memory.available": "0%"}
RULE = ("upstream oomkiller_linux_test.go verifyReasonForOOMKilledContainer: a container without limits that "
        "allocates beyond node allocatable ends with reason OOMKilled, exit code 128 + 9 (SIGKILL)")
CEILING = "node_container_manager_linux.go: kubepods memory.max = capacity − kubeReserved (`pods` enforced)"


def test_container_without_limits_is_oom_killed_at_allocatable(deploy: Deploy, oracle: Oracle,
                                                                kubelet: Kubelet) -> None:
    """kubepods is limited to ALLOCATABLE_MIB (the oracle's and the rule's value); a BestEffort hog of HOG_MIB
    under it ends OOMKilled (137) though its own memory.max is max. Everything is judged in one comparison, so a
    node that leaves kubepods unlimited shows both the ceiling and the hog that survived (holding HOG_MIB)."""
    reserved = Quantity.of(oracle.facts.memory_capacity - (ALLOCATABLE_MIB << 20))
    config = kubelet.use(replace(kubelet.config, kube_reserved={MEMORY: reserved}, enforce_node_allocatable=("pods",),
                                 eviction_hard=NO_MEMORY_THRESHOLD))
    workload = pod(container("hog", command=memhog(HOG_MIB)), name="oomkill-nodeallocatable-pod",
                   restartPolicy="Never")
    before = _ceiling_oom_kills(kubelet, config.cgroup_driver)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle = deployed.handle(workload.name)
    check_admission(handle, deployed.expected(workload.name))
    check_qos(handle, deployed.expected(workload.name), QosClass.BEST_EFFORT)
    hog = watch_hogs(handle, ["hog"], HOG_MIB).states["hog"]
    cgroups = kubelet.node.node_cgroups(["memory.events"])
    ceiling = cgroups[kubepods(config.cgroup_driver)]
    oom_kills = ceiling.keyed("memory.events").get("oom_kill", 0) - before
    allocatable = (ALLOCATABLE_MIB << 20) // oracle.facts.page_size * oracle.facts.page_size
    ended = f"{hog.reason} ({hog.exit_code})" if hog.state == "terminated" else hog.state
    assert_matches(f"pod {workload.ref} beyond node allocatable", [
        *compare_node_cgroups(deployed.expectation.cgroups, cgroups),
        compare_value("", "", ceiling.path, "memory.max", Expected(str(allocatable), CEILING),
                      ceiling.get("memory.max")),
        compare_reason(workload.name, "hog", "(status)", "termination reason (exit code)",
                       Expected("OOMKilled (137)", RULE), ended, (hog.reason, hog.exit_code), oracle.facts,
                       oom_kills),
    ])


def _ceiling_oom_kills(kubelet: Kubelet, driver: str) -> int:
    """kubepods' memory.events oom_kill: hierarchical, so it counts kills below it, also of a pod whose cgroup is
    gone once it ended (the check runs alone: the difference across it is the hog's)."""
    return kubelet.node.node_cgroups(["memory.events"])[kubepods(driver)].keyed("memory.events").get("oom_kill", 0)
