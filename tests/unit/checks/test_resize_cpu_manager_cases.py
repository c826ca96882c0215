"""pod_resize_test.go's cases under the static CPU manager as nodeconf's checks build them: the kubelet config, the
case texts the coverage tool counts, and the oracle's answers on a node large enough to run the exclusive cases.

Expected values worked by hand from the kubelet's rules (policy_static.go: reserved {0}, the lowest free ids first;
a resize keeps exactly the CPUs held, Allocate skipping a container already in the state; allocation handlers.go
podResizesAdmitHandler) and from upstream's texts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu_manager import STATIC_RESIZE_MESSAGE
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.resize import decide_resize
from suites.upstream.resize_gate_table import (
    CASES,
    EXTENDED_CASES,
    EXTENDED_DESCRIBE,
    STATIC_POLICIES,
    CpuPolicy,
    Gates,
)
from suites.upstream.resize_steps import expected_restart_counts
from suites.upstream.test_pod_resize_gates import resize_body, with_cpu_manager

NODE8 = NodeFacts(memory_capacity=16 * 2**30, cpu_capacity_milli=8000)
STATIC, FULL = STATIC_POLICIES


def _config(exclusive: bool, policy: CpuPolicy = STATIC) -> KubeletConfig:
    gates = Gates(True, exclusive).feature_gates
    return with_cpu_manager(KubeletConfig(feature_gates=gates), policy)


def test_the_static_policy_config_is_upstreams() -> None:
    config = with_cpu_manager(KubeletConfig(), FULL)
    assert (config.cpu_manager_policy, config.reserved_system_cpus) == ("static", "0")
    assert config.cpu_manager_policy_options["full-pcpus-only"] == "true"
    assert with_cpu_manager(KubeletConfig(), None) == KubeletConfig()


def test_case_texts_are_upstreams() -> None:
    (case,) = [c for c in CASES if c.id == "g-increase-cpu-mem"]
    assert Gates(False, True).case_text(case, STATIC) == (
        "Pod InPlace Resize Container / Guaranteed QoS pod, one container - increase CPU & memory, alongside CPU "
        "Manager Static Policy with no options (InPlacePodVerticalScalingAllocatedStatus=false, "
        "InPlacePodVerticalScalingExclusiveCPUs=true)")
    (full,) = [c for c in EXTENDED_CASES[FULL.id] if c.id == "x-decrease-cpu-mem"]
    assert Gates(True, True).case_text(full, FULL, EXTENDED_DESCRIBE) == (
        "Pod InPlace Resize Container Extended Cases / 1 Guaranteed QoS pod, one container - decrease CPU & memory, "
        "FullPCPUsOnlyOption = true, alongside CPU Manager Static Policy with FullPCPUsOnlyOption "
        "(InPlacePodVerticalScalingAllocatedStatus=true, InPlacePodVerticalScalingExclusiveCPUs=true)")


@pytest.mark.parametrize(("exclusive", "status"), [(False, "Infeasible"), (True, "Applied")])
def test_a_guaranteed_cpu_resize_needs_the_exclusive_cpus_gate(exclusive: bool, status: str) -> None:
    (case,) = [c for c in CASES if c.id == "g-increase-cpu-mem"]  # 100m → 200m, a shared-pool container
    config = _config(exclusive)
    got = decide_resize(case.pod("p"), case.pod("p", resized=True), {}, NODE8, config, profile_for("1.35", config))
    assert (got.status.value, got.message) == (status, STATIC_RESIZE_MESSAGE if status == "Infeasible" else "")


@pytest.mark.parametrize(("policy", "case_id", "cpus"), [
    # Released kubelets keep a container's CPUs through any resize (policy_static.go Allocate: "container already
    # present in state, skipping"); upstream's test counts 1 → 2, 1 → 2 twice, 2 → 1 CPUs (KEP-5554, unmerged).
    (STATIC, "x-increase-cpu-mem", {"c1": "1"}),
    (STATIC, "x-two-increase-cpu-mem", {"c1": "1", "c2": "2"}),
    (STATIC, "x-decrease-cpu-mem", {"c1": "1-2"}),
    # The mustKeepCPUs patches' env is dropped by the resize subresource: plain decreases, the CPUs held kept.
    (STATIC, "x-decrease-cpu-mem-must-keep", {"c1": "1-2"}),
    (FULL, "x-decrease-cpu-must-keep", {"c1": "1-4"}),
    (FULL, "x-decrease-cpu-wrong-must-keep", {"c1": "1-4"}),
])
def test_exclusive_cases_keep_the_cpus_they_were_admitted_with(policy: CpuPolicy, case_id: str,
                                                               cpus: dict[str, str]) -> None:
    (case,) = [c for c in EXTENDED_CASES[policy.id] if c.id == case_id]
    config = _config(True, policy)
    profile = profile_for("1.35", config)
    first = expect([case.pod("p")], NODE8, config, profile)
    resized = expect([case.pod("p", resized=True)], NODE8, config, profile, cpu_assignments=first.cpu_assignments)
    for got in (first, resized):
        assert {c.name: c.cgroup.files["cpuset.cpus"].value for c in got.pods[0].containers} == cpus
        assert all(c.cgroup.files["cpu.max"].value == "max 100000" for c in got.pods[0].containers)


def test_the_must_keep_patches_are_upstreams() -> None:
    """The patch sent is upstream's patchString (testsWithFalseFullCPUs / testsWithTrueFullCPUs), env included."""
    cases = {c.id: c for c in (*EXTENDED_CASES[STATIC.id], *EXTENDED_CASES[FULL.id])}
    sent = {i: resize_body(cases[i], cases[i].patch, cases[i].pod_patch, cases[i].patch_env) for i in
            ("x-decrease-cpu-mem-must-keep", "x-decrease-cpu-must-keep", "x-decrease-cpu-wrong-must-keep")}
    assert sent == {
        "x-decrease-cpu-mem-must-keep": {"spec": {"containers": [
            {"name": "c1", "env": [{"name": "mustKeepCPUs", "value": "11"}],
             "resources": {"requests": {"cpu": "1", "memory": "400Mi"}, "limits": {"cpu": "1", "memory": "400Mi"}}}]}},
        "x-decrease-cpu-must-keep": {"spec": {"containers": [
            {"name": "c1", "env": [{"name": "mustKeepCPUs", "value": "2,12"}],
             "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}]}},
        "x-decrease-cpu-wrong-must-keep": {"spec": {"containers": [
            {"name": "c1", "env": [{"name": "mustKeepCPUs", "value": "1,2"}],
             "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}]}},
    }
    # the rollback (ResizeContainerPatch of the original containers) names no env
    case = cases["x-decrease-cpu-must-keep"]
    assert resize_body(case, {c.name: c.res for c in case.containers}) == {"spec": {"containers": [
        {"name": "c1", "resources": {"requests": {"cpu": "4", "memory": "200Mi"},
                                     "limits": {"cpu": "4", "memory": "200Mi"}}}]}}


def test_the_exclusive_cases_do_not_fit_the_reference_vm() -> None:
    """2 CPUs, reservedSystemCPUs 0: 1000m allocatable, so each case's pod or its resize is beyond the node."""
    vm = replace(NODE8, cpu_capacity_milli=2000)
    config = _config(True)
    profile = profile_for("1.35", config)
    for case in (*EXTENDED_CASES[STATIC.id], *EXTENDED_CASES[FULL.id]):
        admitted = expect([case.pod("p")], vm, config, profile).pods[0].admitted
        fits = admitted and decide_resize(case.pod("p"), case.pod("p", resized=True), {}, vm, config,
                                          profile).status.value == "Applied"
        assert not fits, case.id


@pytest.mark.parametrize(("status", "wanted"), [("Applied", {"c1": 3, "c2": 0}), ("Infeasible", {"c1": 2, "c2": 0})])
def test_restarts_are_expected_only_of_an_applied_resize(status: str, wanted: dict[str, int]) -> None:
    """A resize the kubelet refuses (Infeasible under static without the exclusive CPUs gate) restarts nothing,
    whatever the test's resizePolicy would restart once it is applied."""
    assert expected_restart_counts({"c1": 2, "c2": 0}, {"c1": 1}, status) == wanted
