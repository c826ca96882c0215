"""pids.max, hugetlb.<size>.max and .rsvd.max, memory.oom.group and enforced reserve cgroups (semantics.node_limits),
the oracle side of upstream's node e2e areas: test/e2e_node pids_test.go, hugepages_test.go, oomkiller_linux_test.go,
node_container_manager_test.go."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict, kubelet_config_to_dict
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics import cgroup_paths, node_limits
from nodeconf.semantics.expect import expect
from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import GI, MI, pod
from suites.toolkit.builders import container as ctr

PROFILE = profile_for("1.38")
HUGE = ((2 * MI, 64 * MI), (GI, 0))
NODE = NodeFacts(memory_capacity=8 * GI, cpu_capacity_milli=4000, pid_capacity=4194304, hugepages=HUGE)


def values(files: Mapping[str, Any]) -> dict[str, str]:
    return {name: e.value for name, e in files.items()}


def huge(two_mb: int, one_gb: int = 0) -> dict[str, str]:
    """The hugetlb files of NODE's two sizes: each limit in `.max` and again in `.rsvd.max` (fs2 setHugeTlb)."""
    return {"hugetlb.2MB.max": str(two_mb), "hugetlb.2MB.rsvd.max": str(two_mb),
            "hugetlb.1GB.max": str(one_gb), "hugetlb.1GB.rsvd.max": str(one_gb)}


@pytest.mark.parametrize(("limit", "expected"), [(-1, "max"), (0, "max"), (1024, "1024")])
def test_pod_pids_max_follows_pod_pids_limit(limit: int, expected: str) -> None:
    """pids_test.go "should set pids.max for Pod": EnsureExists writes podPidsLimit only when > 0."""
    assert node_limits.pod_pids_max(KubeletConfig(pod_pids_limit=limit)).value == expected


@pytest.mark.parametrize(
    ("enforce", "expected"),
    [(("pods",), str(4194304 - 1000)), ((), "4194304")],
    ids=["pods-enforced-subtracts-reserved-pid", "not-enforced-is-capacity"],
)
def test_kubepods_pids_max(enforce: tuple[str, ...], expected: str) -> None:
    config = KubeletConfig(system_reserved={"pid": Quantity.parse("1000")}, enforce_node_allocatable=enforce)
    assert node_limits.kubepods_files(NODE, config)["pids.max"].value == expected


def test_unknown_pid_capacity_gives_no_kubepods_pids_expectation() -> None:
    assert "pids.max" not in node_limits.kubepods_files(NodeFacts(memory_capacity=GI), KubeletConfig())


def test_kubepods_pids_max_under_upstreams_reserves() -> None:
    """node_container_manager_test.go getAllocatableLimits: MaxPID − (1000 + 738); MaxPID 32768 → 31030."""
    config = KubeletConfig(system_reserved={"pid": Quantity.parse("1000")},
                           kube_reserved={"pid": Quantity.parse("738")}, enforce_node_allocatable=("pods",))
    node = NodeFacts(memory_capacity=8 * GI, pid_capacity=32768)
    assert node_limits.kubepods_files(node, config)["pids.max"].value == "31030"


@pytest.mark.parametrize("node", [
    NodeFacts(memory_capacity=8 * GI, pid_capacity=4194304, hugepages=HUGE, cgroup_controllers=("cpu", "memory")),
    NodeFacts(memory_capacity=8 * GI, pid_capacity=1000, hugepages=()),
], ids=["no-pids-or-hugetlb-controller", "reserve-takes-every-pid"])
def test_kubepods_gets_no_pids_or_hugetlb_expectation(node: NodeFacts) -> None:
    """No pids.max / hugetlb file without the controller; a pid reserve of the whole capacity (allocatable floored
    at 0, PidsLimit 0 = unset to libcontainer) is not modelled."""
    config = KubeletConfig(system_reserved={"pid": Quantity.parse("1000")}, enforce_node_allocatable=("pods",))
    assert node_limits.kubepods_files(node, config) == {}


@pytest.mark.parametrize(("driver", "path"), [("cgroupfs", "kubepods"), ("systemd", "kubepods.slice")])
def test_kubepods_limits_are_keyed_by_the_drivers_kubepods(driver: str, path: str) -> None:
    """expect(): the kubepods node limits under the driver's name (no reserve: pid and hugepage capacity)."""
    result = expect([], NODE, kubelet_config_from_dict({"kind": "KubeletConfiguration", "cgroupDriver": driver}),
                    PROFILE)
    assert values(result.node_limits[path]) == {"pids.max": "4194304", **huge(64 * MI)}


def test_hugetlb_at_pod_and_container_level() -> None:
    """hugepages_test.go: the pod cgroup carries hugetlb.2MB.max = the pod's hugepages-2Mi, every other size 0;
    the container gets the same through CRI hugepage_limits unless containerd drops them (accepted max)."""
    p = with_api_defaults(pod(ctr("a", {"memory": "64Mi"}, {"memory": "64Mi", "hugepages-2Mi": "6Mi"}),
                              ctr("b", {"memory": "64Mi"}, {"memory": "64Mi", "hugepages-2Mi": "4Mi"})))
    assert values(node_limits.pod_hugetlb(p, NODE, PROFILE)) == huge(10 * MI)
    files = node_limits.container_hugetlb(p.containers[0], NODE)
    assert values(files) == huge(6 * MI)
    assert files["hugetlb.2MB.max"].accepts("max") and files["hugetlb.2MB.rsvd.max"].accepts("max")


@pytest.mark.parametrize(("kernel", "rsvd"), [("5.6.19", False), ("5.7.0", True), ("5.10.0-46-amd64", True)])
def test_the_reservation_limit_is_expected_where_the_kernel_has_it(kernel: str, rsvd: bool) -> None:
    """fs2 setHugeTlb skips hugetlb.<size>.rsvd.max where the file does not exist (kernels before 5.7)."""
    p = with_api_defaults(pod(ctr("a", {"memory": "64Mi"}, {"memory": "64Mi", "hugepages-2Mi": "4Mi"})))
    files = node_limits.pod_hugetlb(p, replace(NODE, kernel_version=kernel), PROFILE)
    assert ("hugetlb.2MB.rsvd.max" in files, files["hugetlb.2MB.max"].value) == (rsvd, str(4 * MI))


def test_hugetlb_floors_to_whole_pages_and_needs_the_controller() -> None:
    p = with_api_defaults(pod(ctr("a", None, {"memory": "64Mi", "hugepages-2Mi": "3Mi"})))
    assert node_limits.pod_hugetlb(p, NODE, PROFILE)["hugetlb.2MB.max"].value == str(2 * MI)
    no_controller = NodeFacts(memory_capacity=8 * GI, hugepages=HUGE, cgroup_controllers=("cpu", "memory"))
    assert node_limits.pod_hugetlb(p, no_controller, PROFILE) == {}


@pytest.mark.parametrize(("enforce", "two_mb"), [(("pods",), 60 * MI), ((), 64 * MI)],
                         ids=["pods-enforced", "not-enforced"])
def test_kubepods_hugetlb_is_allocatable_hugepages(enforce: tuple[str, ...], two_mb: int) -> None:
    """64Mi of 2 MiB pages, 4Mi reserved: 60Mi when `pods` is enforced, else the capacity; the 1 GiB size the
    kernel offers with no page reserved: 0."""
    config = KubeletConfig(system_reserved={"hugepages-2Mi": Quantity.parse("4Mi")}, enforce_node_allocatable=enforce)
    assert values({k: v for k, v in node_limits.kubepods_files(NODE, config).items() if k.startswith("hugetlb")}) == (
        huge(two_mb))


@pytest.mark.parametrize(("driver", "paths"), [
    ("cgroupfs", ("kubepods/burstable", "kubepods/besteffort")),
    ("systemd", ("kubepods.slice/kubepods-burstable.slice", "kubepods.slice/kubepods-besteffort.slice")),
])
def test_qos_tiers_leave_huge_pages_unbounded(driver: str, paths: tuple[str, ...]) -> None:
    """qos_container_manager_linux.go setHugePagesUnbounded: 1 << 62 for every size on both QoS tiers, whatever the
    pods ask; nothing without the hugetlb controller."""
    config = kubelet_config_from_dict({"kind": "KubeletConfiguration", "cgroupDriver": driver})
    result = expect([pod(ctr("c", {"memory": "64Mi"}, {"memory": "64Mi", "hugepages-2Mi": "4Mi"}))], NODE, config,
                    PROFILE)
    assert [values(result.node_limits[path]) for path in paths] == [huge(1 << 62, 1 << 62)] * 2
    no_controller = replace(NODE, cgroup_controllers=("cpu", "memory", "pids"))
    assert not set(paths) & set(expect([], no_controller, config, PROFILE).node_limits)


@pytest.mark.parametrize(("single", "expected"), [(False, "1"), (True, "0")])
def test_single_process_oom_kill_decides_memory_oom_group(single: bool, expected: str) -> None:
    """oomkiller_linux_test.go: memory.oom.group 1 (whole container killed) unless singleProcessOOMKill."""
    result = expect([pod(ctr("c", {"memory": "64Mi"}))], NODE, KubeletConfig(single_process_oom_kill=single),
                    PROFILE)
    (container,) = result.pods[0].containers
    assert result.node_limits[container.cgroup.path]["memory.oom.group"].value == expected


def _reserve_config(**fields: Any) -> KubeletConfig:
    """Upstream node_container_manager_test.go setDesiredConfiguration: both reserves enforced (cpu 100m, memory
    100Mi, pid 1000 / 738) on cgroups `system-reserved` and `kube-reserved`."""
    doc = {
        "kind": "KubeletConfiguration", "enforceNodeAllocatable": ["pods", "system-reserved", "kube-reserved"],
        "systemReservedCgroup": "system-reserved", "kubeReservedCgroup": "kube-reserved",
        "systemReserved": {"cpu": "100m", "memory": "100Mi", "pid": "1000"},
        "kubeReserved": {"cpu": "100m", "memory": "100Mi", "pid": "738"}, **fields,
    }
    return kubelet_config_from_dict(doc)


def test_enforced_reserve_cgroups() -> None:
    """node_container_manager_test.go: system-reserved enforced on its cgroup (cpu, memory, pids, and hugetlb 0 for
    every size not reserved), kube-reserved not enforced is left alone."""
    config = kubelet_config_from_dict({
        "kind": "KubeletConfiguration", "enforceNodeAllocatable": ["pods", "system-reserved"],
        "systemReservedCgroup": "/system.slice", "kubeReservedCgroup": "/kube.slice",
        "systemReserved": {"cpu": "500m", "memory": "1Gi", "pid": "1000", "hugepages-2Mi": "5Mi"},
        "kubeReserved": {"memory": "1Gi"},
    })
    files = node_limits.reserved_cgroup_files(NODE, config)
    assert {path: values(f) for path, f in files.items()} == {
        "system.slice": {"cpu.weight": "20", "memory.max": str(GI), "pids.max": "1000", **huge(4 * MI)}}


@pytest.mark.parametrize(("driver", "expected"), [
    ("cgroupfs", {"system-reserved": "1000", "kube-reserved": "738"}),
    ("systemd", {"system.slice/system-reserved.slice": "1000", "kube.slice/kube-reserved.slice": "738"}),
])
def test_upstream_reserves_per_driver(driver: str, expected: dict[str, str]) -> None:
    """Upstream's values: cpu 100m → shares 102 → weight 4 (the e2e's convertSharesToWeight), memory 100Mi; the
    systemd driver expands `kube-reserved` to kube.slice/kube-reserved.slice (ParseSystemdToCgroupName, ToSystemd)."""
    files = node_limits.reserved_cgroup_files(NODE, _reserve_config(cgroupDriver=driver))
    assert {path: values(f)["pids.max"] for path, f in files.items()} == expected
    for f in files.values():
        assert values(f)["cpu.weight"] == "4"
        assert values(f)["memory.max"] == str(100 * MI)


@pytest.mark.parametrize(("name", "driver", "expected"), [
    ("/system.slice", "systemd", "system.slice"),
    ("kube-reserved.slice", "systemd", "kube.slice/kube-reserved.slice"),
    ("/a/b/nodeconf-sys", "systemd", "nodeconf.slice/nodeconf-sys.slice"),
    ("/system-reserved", "cgroupfs", "system-reserved"),
    ("/a//b/", "cgroupfs", "a/b"),
])
def test_reserved_cgroup_path(name: str, driver: str, expected: str) -> None:
    assert cgroup_paths.reserved_cgroup(name, driver) == expected


@pytest.mark.parametrize(("name", "driver"), [("/", "cgroupfs"), ("/a/../b", "cgroupfs"), ("/", "systemd"),
                                              ("-.slice", "systemd"), ("a--b", "systemd"), ("-a", "systemd")])
def test_unnamable_reserve_cgroup_is_input_error(name: str, driver: str) -> None:
    config = _reserve_config(cgroupDriver=driver, systemReservedCgroup=name)
    with pytest.raises(InputError) as caught:
        node_limits.reserved_cgroup_files(NODE, config)
    assert caught.value.field == "systemReservedCgroup"


def test_enforced_reserve_needs_its_cgroup() -> None:
    with pytest.raises(InputError, match="systemReservedCgroup: must be specified when 'system-reserved'"):
        kubelet_config_from_dict({"kind": "KubeletConfiguration",
                                  "enforceNodeAllocatable": ["pods", "system-reserved"]})


def test_new_config_fields_round_trip() -> None:
    config = KubeletConfig(pod_pids_limit=256, system_reserved_cgroup="/system.slice", kube_reserved_cgroup="/kube")
    assert kubelet_config_from_dict(kubelet_config_to_dict(config)) == config


def test_expect_keeps_node_limits_out_of_the_checked_cgroups() -> None:
    result = expect([pod(ctr("c", {"memory": "64Mi"}))], NODE, KubeletConfig(pod_pids_limit=64), PROFILE)
    pod_path = result.pods[0].cgroup.path  # type: ignore[union-attr]
    assert result.node_limits[pod_path]["pids.max"].value == "64"
    assert "pids.max" not in result.pods[0].cgroup.files  # type: ignore[union-attr]
    assert "kubepods.slice" in result.node_limits


# Upstream test/e2e/common/node/pod_level_resources.go "Burstable QoS pod hugepages, container resources, single page
# size" (pod 10Mi of hugepages-2Mi at pod level, limit only; c1 4Mi of its own, c2 none).
PLR_HUGE = {"limits": {"cpu": "100m", "memory": "100Mi", "hugepages-2Mi": "10Mi"},
            "requests": {"cpu": "100m", "memory": "50Mi"}}


def test_pod_level_hugepages_are_the_pod_limit() -> None:
    """KEP-2837 "Hugepages": the pod cgroup's hugetlb.2MB.max is the pod-level hugepages (its request, defaulted to
    the limit), not the containers' 4Mi; a container that names none gets 0 (GetHugepageLimitsFromResources) and the
    pod-level limit is accepted for it (kubernetes#132543); one that names its own keeps it."""
    p = with_api_defaults(pod(ctr("c1", {"cpu": "20m"}, {"cpu": "50m", "hugepages-2Mi": "4Mi"}), ctr("c2"),
                              resources=PLR_HUGE))
    assert p.resources is not None and p.resources.requests["hugepages-2Mi"] == Quantity.parse("10Mi")
    assert values(node_limits.pod_hugetlb(p, NODE, PROFILE)) == huge(10 * MI)
    pod_level = p.resources.limits
    own, none = (node_limits.container_hugetlb(c, NODE, pod_level) for c in p.containers)
    assert (values(own), values(none)) == (huge(4 * MI), huge(0))
    assert none["hugetlb.2MB.max"].accepts(str(10 * MI)) and none["hugetlb.2MB.rsvd.max"].accepts(str(10 * MI))
    assert not own["hugetlb.2MB.max"].accepts(str(10 * MI)) and not none["hugetlb.1GB.max"].accepts(str(10 * MI))


def test_pod_level_hugepages_absent_fall_back_to_the_containers() -> None:
    """"… pod level does not specify hugepages": the pod's hugetlb.2MB.max is the containers' aggregate (4Mi)."""
    resources = {"limits": {"cpu": "100m", "memory": "100Mi"}, "requests": {"cpu": "100m", "memory": "50Mi"}}
    p = with_api_defaults(pod(ctr("c1", {"cpu": "20m"}, {"cpu": "50m", "hugepages-2Mi": "4Mi"}), ctr("c2"),
                              resources=resources))
    assert values(node_limits.pod_hugetlb(p, NODE, PROFILE)) == huge(4 * MI)


def test_pod_level_hugepages_validate_against_the_containers() -> None:
    """validatePodResourceConsistency for huge pages: a container's hugepages limit above the pod's is refused; one
    within it is valid (IsSupportedPodLevelResource names hugepages-<size>)."""
    from nodeconf.semantics.validation import pod_errors
    ok = with_api_defaults(pod(ctr("c1", {"cpu": "20m"}, {"cpu": "50m", "hugepages-2Mi": "4Mi"}), resources=PLR_HUGE))
    assert pod_errors(ok, PROFILE) == ()
    big = with_api_defaults(pod(ctr("c1", {"cpu": "20m"}, {"cpu": "50m", "hugepages-2Mi": "12Mi"}),
                                resources=PLR_HUGE))
    assert pod_errors(big, PROFILE) == (
        'spec.resources.requests[hugepages-2Mi]: Invalid value: "10Mi": must be greater than or equal to aggregate '
        "container requests of 12Mi",
        'spec.resources.containers[0][hugepages-2Mi].limits: Invalid value: "12Mi": must be less than or equal to pod '
        "limits of 10Mi")
