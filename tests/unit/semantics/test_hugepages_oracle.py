"""Huge pages in the oracle: node capacity and allocatable (setters.go MachineInfo), admission of pods asking for
them (validation.go ValidateResourceRequirements, the kubelet's fit check) and what they leave unchanged (kubepods
memory.max, the memory.high fallback). Every expected figure is worked out by hand from those rules."""

from __future__ import annotations

import pytest

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics import allocatable, hugepages
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import GI, MI, pod
from suites.toolkit.builders import container as ctr

PROFILE = profile_for("1.38")
# 8 GiB of RAM of which 32 × 2 MiB pages (64 MiB) are reserved, and the 1 GiB size offered with none.
NODE = NodeFacts(memory_capacity=8 * GI, cpu_capacity_milli=4000, hugepages=((2 * MI, 64 * MI), (GI, 0)))
NO_POOL = NodeFacts(memory_capacity=8 * GI, cpu_capacity_milli=4000)
RESERVES = KubeletConfig(system_reserved={"memory": Quantity.parse("1Gi"), "hugepages-2Mi": Quantity.parse("4Mi")},
                         enforce_node_allocatable=("pods",))


def _run(*pods: Pod, node: NodeFacts = NODE, config: KubeletConfig | None = None) -> NodeExpectation:
    return expect(list(pods), node, config or KubeletConfig(), PROFILE)


def test_names_of_a_size() -> None:
    assert (hugepages.hugepage_resource(2 * MI), hugepages.hugetlb_file(2 * MI)) == ("hugepages-2Mi", "hugetlb.2MB.max")
    assert (hugepages.hugepage_resource(GI), hugepages.hugetlb_file(GI)) == ("hugepages-1Gi", "hugetlb.1GB.max")
    assert [hugepages.page_size(n) for n in ("hugepages-2Mi", "hugepages-1Gi", "hugepages-x", "hugepages-0")] == [
        2 * MI, GI, None, None]


def test_capacity_is_every_offered_size_with_its_reserved_bytes() -> None:
    """CapacityFromMachineInfo: pages × size per size, a size with no pages reported as 0."""
    assert hugepages.capacity(NODE) == {"hugepages-2Mi": 64 * MI, "hugepages-1Gi": 0}
    assert hugepages.capacity(NO_POOL) == {}


@pytest.mark.parametrize(("config", "memory", "huge"), [
    # 8192 Mi − 100 Mi (default memory.available) − 64 Mi of huge pages.
    (KubeletConfig(), 8028 * MI, {"hugepages-2Mi": 64 * MI, "hugepages-1Gi": 0}),
    # The hugepages-2Mi reserve lowers allocatable hugepages-2Mi; memory loses the whole 2 Mi capacity all the same.
    (RESERVES, 7004 * MI, {"hugepages-2Mi": 60 * MI, "hugepages-1Gi": 0}),
], ids=["defaults", "reserves"])
def test_allocatable_memory_loses_the_huge_page_capacity(config: KubeletConfig, memory: int,
                                                         huge: dict[str, int]) -> None:
    assert allocatable.allocatable_memory(NODE, config) == memory
    assert allocatable.allocatable_hugepages(NODE, config) == huge
    assert _run(config=config).node.allocatable_memory == memory


def test_allocatable_memory_is_floored_at_zero() -> None:
    small = NodeFacts(memory_capacity=256 * MI, hugepages=((2 * MI, 200 * MI),))
    assert allocatable.allocatable_memory(small, KubeletConfig()) == 0  # 256 − 100 − 200 < 0


def test_kubepods_memory_max_and_the_memory_high_base_keep_the_huge_pages() -> None:
    """getNodeAllocatableAbsoluteImpl subtracts only the reserves: 8 Gi − 1 Gi, huge pages or not."""
    for node in (NODE, NO_POOL):
        assert allocatable.kubepods_memory_bytes(node, RESERVES) == 7 * GI
        assert allocatable.allocatable_absolute_memory(node, RESERVES) == 7 * GI
    kubepods = _run(config=RESERVES).cgroups["kubepods.slice"].files["memory.max"]
    assert kubepods.value == str(7 * GI)


def test_a_huge_page_reserve_above_its_capacity_stops_the_kubelet() -> None:
    too_much = KubeletConfig(system_reserved={"hugepages-2Mi": Quantity.parse("66Mi")})
    error = allocatable.reservation_error(NODE, too_much)
    assert error is not None and f"hugepages-2Mi reservation {66 * MI} > capacity {64 * MI}" in error
    with pytest.raises(InputError):
        _run(config=too_much)
    # A size the kernel does not offer is no capacity key: its reserve is not counted.
    assert allocatable.reservation_error(NODE, KubeletConfig(
        system_reserved={"hugepages-32Mi": Quantity.parse("64Mi")})) is None


def _huge(name: str, amount: str, memory: str = "64Mi") -> Pod:
    return pod(ctr("c", None, {"memory": memory, name: amount}), name=f"p{amount.lower()}")


def test_admission_counts_huge_pages_against_allocatable() -> None:
    """60 Mi then 8 Mi of hugepages-2Mi on 64 Mi: the second does not fit; 1 Gi pages: none allocatable."""
    result = _run(_huge("hugepages-2Mi", "60Mi"), _huge("hugepages-2Mi", "8Mi"), _huge("hugepages-1Gi", "1Gi"),
                  _huge("hugepages-2Mi", "4Mi"))
    first, second, gigantic, last = result.pods
    assert first.admitted and last.admitted
    assert second.errors == (f"OutOfhugepages-2Mi: Node didn't have enough resource: hugepages-2Mi, requested: "
                             f"{8 * MI}, used: {60 * MI}, capacity: {64 * MI}",)
    assert gigantic.errors == (f"OutOfhugepages-1Gi: Node didn't have enough resource: hugepages-1Gi, requested: "
                               f"{GI}, used: 0, capacity: 0",)


def test_a_node_without_the_size_refuses_the_pod() -> None:
    (p,) = _run(_huge("hugepages-2Mi", "4Mi"), node=NO_POOL).pods
    assert p.errors == (f"OutOfhugepages-2Mi: Node didn't have enough resource: hugepages-2Mi, requested: "
                        f"{4 * MI}, used: 0, capacity: 0",)


def test_memory_fit_uses_memory_without_the_huge_pages() -> None:
    """A request of 8028 Mi fits exactly; 8029 Mi does not, though it would without the huge page pool."""
    fits, too_big = (pod(ctr("c", {"memory": m}), name=n) for n, m in (("a", "8028Mi"), ("b", "8029Mi")))
    assert _run(fits).pods[0].admitted
    (p,) = _run(too_big).pods
    assert p.errors == (f"OutOfmemory: Node didn't have enough resource: memory, requested: {8029 * MI}, used: 0, "
                        f"capacity: {8028 * MI}",)
    assert _run(too_big, node=NO_POOL).pods[0].admitted


@pytest.mark.parametrize(("requests", "limits", "error"), [
    ({"hugepages-2Mi": "2Mi"}, {"memory": "64Mi", "hugepages-2Mi": "4Mi"},
     'spec.containers[0].resources.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi'),
    ({"memory": "64Mi", "hugepages-2Mi": "4Mi"}, None,
     "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"),
    (None, {"memory": "64Mi", "hugepages-2Mi": "3Mi"},
     'spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer '
     "multiple of hugepages-2Mi"),
    (None, {"hugepages-2Mi": "4Mi"}, "spec.containers[0].resources: Forbidden: HugePages require cpu or memory"),
], ids=["request-not-limit", "no-limit", "part-of-a-page", "no-cpu-or-memory"])
def test_api_validation_of_huge_pages(requests: dict[str, str] | None, limits: dict[str, str] | None,
                                      error: str) -> None:
    (p,) = _run(pod(ctr("c", requests, limits))).pods
    assert not p.admitted and error in p.errors, p.errors


def test_a_limit_alone_sets_an_equal_request_and_cpu_suffices() -> None:
    (p,) = _run(pod(ctr("c", None, {"cpu": "100m", "hugepages-2Mi": "4Mi"}))).pods
    assert p.admitted, p.errors
