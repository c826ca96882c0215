"""The static CPU manager: reserved CPUs, exclusive CPUs, cpusets, cpu.max without quota, resize feasibility.

Expected values worked by hand from the kubelet's rules (pkg/kubelet/cm/cpumanager policy_static.go,
allocation_manager.go canResizePod, cmd/kubelet/app/server.go reservedSystemCPUs)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict, kubelet_config_to_dict
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.allocatable import allocatable_cpu_milli
from nodeconf.semantics.cpu_manager import STATIC_RESIZE_MESSAGE, assign, format_cpuset, static_policy
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.resize import ResizeStatus, decide_resize

NODE4 = NodeFacts(memory_capacity=8 * 2**30, cpu_capacity_milli=4000)
STATIC = KubeletConfig(cpu_manager_policy="static", reserved_system_cpus="0")
PROFILE = profile_for("1.35")


def pod(name: str, *cpus: str, guaranteed: bool = True, init: str = "", sidecar: bool = False) -> Pod:
    """A pod with one container per cpu value (memory 64Mi; limits = requests when `guaranteed`)."""
    def ctr(n: str, cpu: str) -> dict[str, Any]:
        limits = {"cpu": cpu, "memory": "64Mi"} if guaranteed else {"memory": "128Mi"}
        return {"name": n, "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"},
                                                             "limits": limits}}
    spec: dict[str, Any] = {"containers": [ctr(f"c{i + 1}", cpu) for i, cpu in enumerate(cpus)]}
    if init:
        spec["initContainers"] = [{**ctr("i1", init), **({"restartPolicy": "Always"} if sidecar else {})}]
    made = object_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                             "spec": spec})
    assert isinstance(made, Pod)
    return made


def cpusets(pods: list[Pod], config: KubeletConfig = STATIC, node: NodeFacts = NODE4) -> dict[str, str]:
    got = expect(pods, node, config, PROFILE)
    return {f"{p.pod.name}/{c.name}": c.cgroup.files["cpuset.cpus"].value for p in got.pods if p.admitted
            for c in p.containers}


def test_reserved_system_cpus_replace_the_reserved_cpu_in_allocatable() -> None:
    config = KubeletConfig(cpu_manager_policy="static", reserved_system_cpus="0-1",
                           kube_reserved={"cpu": Quantity.parse("500m")})
    assert allocatable_cpu_milli(NODE4, config) == 2000  # 4 CPUs − |{0,1}|; kubeReserved cpu dropped


def test_reserved_cpus_without_a_set_are_the_ceiling_of_the_reserves_lowest_ids_first() -> None:
    config = KubeletConfig(cpu_manager_policy="static", system_reserved={"cpu": Quantity.parse("300m")},
                           kube_reserved={"cpu": Quantity.parse("800m")})
    policy = static_policy(NODE4, config)
    assert policy is not None and policy.reserved == {0, 1}  # ceil(1.1) = 2


def test_the_static_policy_without_any_reserved_cpu_stops_the_kubelet() -> None:
    with pytest.raises(InputError, match="greater than zero"):
        expect([], NODE4, KubeletConfig(cpu_manager_policy="static"), PROFILE)


def test_integer_guaranteed_containers_get_the_lowest_free_cpus_others_the_shared_pool() -> None:
    # 6 CPUs, reserved {0}: a takes {1, 2}; b's c1 (1 CPU) takes {3}; the shared pool is {0, 4, 5}, where b's c2
    # (500m) and c (Burstable) run.
    node6 = NodeFacts(memory_capacity=8 * 2**30, cpu_capacity_milli=6000)
    got = cpusets([pod("a", "2"), pod("b", "1", "500m"), pod("c", "1", guaranteed=False)], node=node6)
    assert got == {"a/c1": "1-2", "b/c1": "3", "b/c2": "0,4-5", "c/c1": "0,4-5"}


def test_without_exclusive_containers_every_container_runs_on_all_cpus() -> None:
    assert cpusets([pod("a", "100m")]) == {"a/c1": "0-3"}  # the reserved CPU stays in the shared pool


def test_under_policy_none_no_container_gets_a_cpuset() -> None:
    got = expect([pod("a", "2")], NODE4, KubeletConfig(), PROFILE)
    assert "cpuset.cpus" not in got.pods[0].containers[0].cgroup.files


def test_an_exclusive_container_and_its_pod_run_without_quota() -> None:
    got = expect([pod("a", "2", "200m")], NODE4, STATIC, PROFILE).pods[0]
    assert got.containers[0].cgroup.files["cpu.max"].value == "max 100000"
    assert got.containers[1].cgroup.files["cpu.max"].value == "20000 100000"  # shared: its own quota
    assert got.cgroup is not None and got.cgroup.files["cpu.max"].value == "max 100000"


def test_with_disable_cpu_quota_off_the_quota_stays() -> None:
    profile = profile_for("1.35", KubeletConfig(feature_gates={"DisableCPUQuotaWithExclusiveCPUs": False}))
    got = expect([pod("a", "2")], NODE4, STATIC, profile).pods[0]
    assert got.containers[0].cgroup.files["cpu.max"].value == "200000 100000"


def test_a_plain_init_containers_cpus_are_reused_a_sidecars_are_not() -> None:
    # init i1 takes {1, 2}; c1 (1 CPU) takes the lowest of free {3} ∪ reusable {1, 2}: {1}.
    assert cpusets([pod("a", "1", init="2")])["a/c1"] == "1"
    # a sidecar keeps running: c1 takes {3}.
    assert cpusets([pod("a", "1", init="2", sidecar=True)])["a/c1"] == "3"


def test_an_increase_keeps_exactly_the_cpus_held() -> None:
    # Allocate skips a container already in the state ("container already present in state, skipping"): a, grown
    # from 1 to 2 CPUs while holding {2}, keeps {2}; CPU 3 stays free, b keeps {1}.
    policy = static_policy(NODE4, STATIC)
    assert policy is not None
    a, b = pod("a", "2"), pod("b", "1")
    held = {(a.uid, "c1"): frozenset({2}), (b.uid, "c1"): frozenset({1})}
    assert assign(policy, [a, b], PROFILE, held) == held


def test_a_decrease_keeps_every_cpu_held() -> None:
    policy = static_policy(NODE4, STATIC)
    assert policy is not None
    a = pod("a", "1")
    assert assign(policy, [a], PROFILE, {(a.uid, "c1"): frozenset({2, 3})}) == {(a.uid, "c1"): frozenset({2, 3})}


def test_a_container_resized_to_a_fraction_keeps_its_cpus_and_runs_without_quota() -> None:
    # a takes {1}, b {2}; a resized to 500m: Allocate returns before it reads the state when the request is not an
    # integer, so the state keeps a's {1}: a stays on CPU 1 without quota, not on the shared pool {0, 3}.
    a = pod("a", "1")
    first = expect([a], NODE4, STATIC, PROFILE)
    assert first.cpu_assignments == {(a.uid, "c1"): frozenset({1})}
    b = pod("b", "1")
    both = expect([a, b], NODE4, STATIC, PROFILE, cpu_assignments=first.cpu_assignments)
    shrunk = pod("a", "500m")
    after = expect([shrunk, b], NODE4, STATIC, PROFILE, cpu_assignments=both.cpu_assignments).pods
    files = {p.pod.name: p.containers[0].cgroup.files for p in after}
    assert files["a"]["cpuset.cpus"].value == "1"
    assert files["a"]["cpu.max"].value == "max 100000"
    assert files["b"]["cpuset.cpus"].value == "2"


def test_a_container_resized_from_a_fraction_to_an_integer_takes_the_lowest_free() -> None:
    # Not in the state: the resize's admission (topology manager admit handler → Allocate) gives it the lowest
    # free CPUs, {2, 3} beside b's {1}.
    policy = static_policy(NODE4, STATIC)
    assert policy is not None
    a, b = pod("a", "2"), pod("b", "1")
    got = assign(policy, [a, b], PROFILE, {(b.uid, "c1"): frozenset({1})})
    assert got == {(a.uid, "c1"): frozenset({2, 3}), (b.uid, "c1"): frozenset({1})}


def test_a_deleted_pod_gives_its_cpus_back() -> None:
    policy = static_policy(NODE4, STATIC)
    assert policy is not None
    a, b = pod("a", "1"), pod("b", "1")
    assert assign(policy, [b], PROFILE, {(a.uid, "c1"): frozenset({1})}) == {(b.uid, "c1"): frozenset({1})}


def test_the_expectation_hands_back_the_assignments_it_kept() -> None:
    first = expect([pod("a", "1"), pod("b", "1")], NODE4, STATIC, PROFILE)
    # a is gone: b keeps {2}; a new pod c takes the lowest free, {1}.
    after = expect([pod("b", "1"), pod("c", "1")], NODE4, STATIC, PROFILE, cpu_assignments=first.cpu_assignments)
    uids = {p.pod.name: p.pod.uid for p in after.pods}
    assert after.cpu_assignments == {(uids["b"], "c1"): frozenset({2}), (uids["c"], "c1"): frozenset({1})}


@pytest.mark.parametrize(("gate", "desired", "status"), [
    (False, "200m", ResizeStatus.INFEASIBLE),  # any cpu change of a Guaranteed pod
    (True, "200m", ResizeStatus.APPLIED),
    (False, "100m", ResizeStatus.APPLIED),  # memory only: allowed
])
def test_a_guaranteed_pods_cpu_resize_under_static_needs_the_exclusive_cpus_gate(gate: bool, desired: str,
                                                                                  status: ResizeStatus) -> None:
    current = pod("a", "100m")
    wanted = pod("a", desired)
    if desired == "100m":
        doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [
            {"name": "c1", "image": "busybox", "resources": {"requests": {"cpu": "100m", "memory": "96Mi"},
                                                             "limits": {"cpu": "100m", "memory": "96Mi"}}}]}}
        made = object_from_dict(doc)
        assert isinstance(made, Pod)
        wanted = made
    profile = profile_for("1.35", KubeletConfig(feature_gates={"InPlacePodVerticalScalingExclusiveCPUs": gate}))
    got = decide_resize(current, wanted, {}, NODE4, STATIC, profile)
    assert got.status is status
    assert got.message == (STATIC_RESIZE_MESSAGE if status is ResizeStatus.INFEASIBLE else "")


def test_a_burstable_pods_cpu_resize_under_static_is_not_refused() -> None:
    got = decide_resize(pod("a", "100m", guaranteed=False), pod("a", "200m", guaranteed=False), {}, NODE4, STATIC,
                        PROFILE)
    assert got.status is ResizeStatus.APPLIED


@pytest.mark.parametrize(("cpus", "text"), [((), ""), ((3,), "3"), ((0, 1, 2), "0-2"), ((0, 2, 3, 5), "0,2-3,5")])
def test_cpusets_print_as_the_kernel_lists_them(cpus: tuple[int, ...], text: str) -> None:
    assert format_cpuset(cpus) == text


def test_the_cpu_manager_settings_read_and_write_back() -> None:
    doc = {"kind": "KubeletConfiguration", "cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
           "cpuManagerPolicyOptions": {"full-pcpus-only": "True", "align-by-socket": "false"}}
    config = kubelet_config_from_dict(doc)
    assert config.cpu_manager_policy_options == {"full-pcpus-only": "true", "align-by-socket": "false"}
    assert kubelet_config_from_dict(kubelet_config_to_dict(config)) == config


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("cpuManagerPolicy", "None", "unknown value"),
    ("reservedSystemCPUs", "1-0", "invalid cpuset"),
    ("cpuManagerPolicyOptions", {"align-by-socket": "true"}, "does not model"),
    ("cpuManagerPolicyOptions", {"no-such": "true"}, "unknown CPU Manager policy option"),
])
def test_bad_cpu_manager_settings_are_refused(field: str, value: Any, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        kubelet_config_from_dict({"kind": "KubeletConfiguration", field: value})
