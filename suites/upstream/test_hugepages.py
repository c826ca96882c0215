"""Huge pages: hugetlb.<size>.max and hugetlb.<size>.rsvd.max (where the kernel has it) of the pod cgroup and of its
container for every size the node offers, and a pod using reserved 2 MiB pages held to its limit.

Source: upstream test/e2e_node/hugepages_test.go "HugePages" / "start the pod" / "with the resources requests that
contain only one hugepages resource" / "should set correct hugetlb mount and limit under the container cgroup"
(a container limited to cpu 10m, memory 100Mi, hugepages-2Mi 6Mi on 5 reserved pages; makePodToVerifyHugePages
compares the pod cgroup's hugetlb.2MB.max with the limit). nodeconf keeps upstream's container (cpu 10m, memory
100Mi) and puts 4Mi (2 of the reference VM's 8 pages, qemu.py HUGEPAGE_ARGS) on a second container of cpu 1 that
runs the touching program (Python would take minutes to start at 10m), and adds a behaviour check upstream
does not have: pages beyond the limit fail. A size the pod does not request is limited to 0
(cgroup_manager_linux.go maybeSetHugetlb), at pod and container level (where containerd's default config drops the
CRI hugepage limits, the container's `max` is its documented deviation; the pod's limit still binds it; on a node
whose CRI runtime reports `disable_hugetlb_controller=true` the container-level checks are not applicable, named
with the runtime's version). The QoS tiers above the pods are unbounded (the kubelet's 1 << 62), also checked here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import CgroupFiles, Node, PodHandle
from nodeconf.semantics import cgroup_paths
from nodeconf.semantics.expectation import CgroupExpectation, Expected, QosClass
from nodeconf.semantics.hugepages import hugepage_resource
from suites.toolkit.checks import Deployed, check_pod, settled_evidence
from suites.toolkit.compare import assert_matches, compare_node_cgroups, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.toolkit.pods import hugetlb_toucher
from suites.upstream.shared import QUOTA_START_S, Res, container, make_pod, module_kubelet, shared_deployment

HUGEPAGES_TEST = "test/e2e_node/hugepages_test.go"
ONE_SIZE = "HugePages / start the pod / with the resources requests that contain only one hugepages resource "
ONE_SIZE_CASES = tuple(f"{ONE_SIZE} / {api} / should set correct hugetlb mount and limit under the container cgroup"
                       for api in ("with the backward compatible API", "with the new API"))

pytestmark = [pytest.mark.runs_alone("the node's huge page pool and the QoS and kubepods hugetlb limits")]

APP = "app"
NONE_POD = "hugepages"  # asks for no huge pages
HUGE_POD = "hugepages-2mi"  # asks for hugepages-2Mi: LIMIT
TOUCHER = "toucher"
PAGE = 2 * 2**20
LIMIT = 2 * PAGE
# One page more than the limit: a node that writes no limit lets every page through and the check sees no stop.
ATTEMPTS = LIMIT // PAGE + 1
EVENTS_FILE = "hugetlb.2MB.events"
STOPPED = ("kernel cgroup-v2.rst HugeTLB / cgroup-v1 hugetlb.rst: hugetlb.<size>.max limits the pages in use by the "
           "cgroup and its descendants, charged at page fault; a fault beyond it fails and the task gets SIGBUS "
           "(mm/hugetlb.c alloc_hugetlb_folio: hugetlb_cgroup_charge_cgroup fails → -ENOSPC → VM_FAULT_SIGBUS). Where "
           "hugetlb.<size>.rsvd.max is set too (the kubelet's opencontainers/cgroups fs2 setHugeTlb writes both, "
           "as nodeconf's agent does), the reservation is charged at mmap and mmap fails with ENOMEM instead "
           "(hugetlb_reserve_pages): either way no page beyond the limit is touched")
# How the page beyond the limit is refused: SIGBUS at the fault (hugetlb.<size>.max), ENOMEM at mmap (.rsvd.max).
REFUSALS = ("SIGBUS", "ENOMEM")
EVENTS = ("mm/hugetlb_cgroup.c __hugetlb_cgroup_charge_cgroup → hugetlb_event: a charge refused by a limit, of a "
          "fault or of a reservation alike, counts `max` in hugetlb.<size>.events of the charging task's cgroup and of "
          "every ancestor below the root, so the pod cgroup's grows (measured on 5.10 and 6.1: SIGBUS under .max "
          "alone and ENOMEM under .rsvd.max each count 1)")


def _huge_pod() -> Pod:
    """Upstream's container (limits only: requests default to them, Guaranteed) and a second one of cpu 1 that holds
    the 4Mi of hugepages-2Mi and runs the program."""
    toucher = container(TOUCHER, Res(cpu_lim="1", mem_lim="100Mi"))
    toucher["resources"]["limits"][hugepage_resource(PAGE)] = f"{LIMIT // 2**20}Mi"
    return make_pod(HUGE_POD, [container(APP, Res(cpu_lim="10m", mem_lim="100Mi")), toucher])


def _pool_reason(oracle: Oracle) -> str:
    """Why a pod cannot use 2 MiB pages here ("" when it can): the node's measured 2 MiB pool is below the pages the
    behaviour check maps (a measured fact makes the checks not applicable; it is never an expected value)."""
    pool = dict(oracle.facts.hugepages).get(PAGE)
    if pool is None:
        return "the node's kernel offers no 2 MiB huge page size (/sys/kernel/mm/hugepages)"
    if pool < ATTEMPTS * PAGE:
        return (f"the node reserves {pool // PAGE} pages of 2 MiB (nr_hugepages), fewer than the {ATTEMPTS} the check "
                "maps: nodeconf reserves huge pages only on the VM it builds (hugepages=8)")
    return ""


@pytest.fixture(scope="module")
def deployed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Deployed]:
    """A Burstable pod asking for no huge pages and, where the node reserves 2 MiB pages, a Guaranteed pod asking
    for 4Mi of them; not applicable without the hugetlb controller or huge page sizes."""
    if "hugetlb" not in oracle.facts.cgroup_controllers:
        pytest.skip("the node's cgroup v2 root offers no hugetlb controller (CONFIG_CGROUP_HUGETLB off): the kubelet "
                    "writes no hugetlb limit (maybeSetHugetlb)")
    if not oracle.facts.hugepages:
        pytest.skip("the node's kernel offers no huge page size (/sys/kernel/mm/hugepages empty)")
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    pods = [make_pod(NONE_POD, [container(APP, Res(cpu_req="50m", mem_req="16Mi", mem_lim="64Mi"))])]
    if not _pool_reason(oracle):
        pods.append(_huge_pod())
    with shared_deployment(node, oracle, kubelet, pods) as running:
        yield running


@pytest.fixture
def huge(deployed: Deployed, oracle: Oracle) -> Deployed:
    """The deployment, when it holds the pod asking for huge pages."""
    reason = _pool_reason(oracle)
    if reason:
        pytest.skip(reason)
    return deployed


@pytest.mark.parametrize(("name", "qos"), [(NONE_POD, QosClass.BURSTABLE), (HUGE_POD, QosClass.GUARANTEED)],
                         ids=["no-hugepages", "hugepages-2Mi"])
@mirrors(HUGEPAGES_TEST, *ONE_SIZE_CASES)
def test_pod_matches_the_oracle(deployed: Deployed, oracle: Oracle, name: str, qos: QosClass) -> None:
    """The pods run in their QoS class (upstream CreateSync), every cgroup value the oracle's."""
    if name == HUGE_POD and _pool_reason(oracle):
        pytest.skip(_pool_reason(oracle))
    check_pod(deployed.handle(name), deployed.expected(name), qos, start_timeout=QUOTA_START_S)


def _path(deployed: Deployed, name: str, level: str, ctr: str) -> str:
    expected = deployed.expected(name)
    assert expected.cgroup is not None, f"the oracle gives pod {expected.pod.ref} no cgroup"
    return expected.cgroup.path if level == "pod" else next(
        c.cgroup.path for c in expected.containers if c.name == ctr)


def runtime_drops_container_limits(facts: NodeFacts) -> str:
    """Why a container's hugetlb limits say nothing here ("" when they do): the node's CRI runtime reports
    `disable_hugetlb_controller=true`, with which containerd leaves the CRI hugepage_limits the kubelet sends out of
    the container's spec (RUNTIME-FACTS.md §1). A measured fact of the node's runtime makes the container-level
    checks not applicable; it is never an expected value."""
    if dict(facts.runtime_config).get("disable_hugetlb_controller") != "True":
        return ""
    return (f"the node's runtime {facts.runtime} {facts.runtime_version} runs with disable_hugetlb_controller=true: "
            "it drops the hugepage limits the kubelet sends for a container (the pod cgroup's limit still binds)")


def _check_limits(deployed: Deployed, name: str, level: str, ctr: str, facts: NodeFacts) -> Mapping[str, Expected]:
    """hugetlb.<size>.max (and .rsvd.max) of every size the node offers at one level, against the oracle; the
    oracle's files. Not applicable at container level where the runtime drops the limits."""
    reason = runtime_drops_container_limits(facts) if level == "container" else ""
    if reason:
        pytest.skip(reason)
    path = _path(deployed, name, level, ctr)
    want = deployed.expectation.node_limits[path]
    names = tuple(file for file in want if file.startswith("hugetlb."))
    assert names, f"the oracle expects no hugetlb file for {path} on a node with huge page sizes"
    handle = deployed.handle(name)
    settled_evidence(handle)
    evidence = handle.evidence(names)
    got: CgroupFiles = evidence.pod_cgroup if level == "pod" else evidence.container(ctr).cgroup
    assert_matches(f"{level} hugetlb limits", [
        compare_value(name, "" if level == "pod" else ctr, got.path, file, want[file], got.get(file))
        for file in names])
    return want


@pytest.mark.kubelet_code
@pytest.mark.parametrize("level", ["pod", "container"])
def test_unrequested_sizes_are_limited_to_zero(deployed: Deployed, oracle: Oracle, level: str) -> None:
    """hugetlb.<size>.max of every size the node offers: the oracle's (0, as the pod requests none)."""
    _check_limits(deployed, NONE_POD, level, APP, oracle.facts)


@mirrors(HUGEPAGES_TEST, *ONE_SIZE_CASES)
@pytest.mark.parametrize("level", ["pod", "container"])
def test_requested_size_is_the_limit(huge: Deployed, oracle: Oracle, level: str) -> None:
    """Upstream "should set correct hugetlb mount and limit under the container cgroup": hugetlb.2MB.max of the pod
    (the sum of its containers' hugepages-2Mi) and of the container asking for it is the request, 4Mi; every
    other size 0 (oracle)."""
    want = _check_limits(huge, HUGE_POD, level, TOUCHER, oracle.facts)
    assert want["hugetlb.2MB.max"].value == str(LIMIT), f"oracle hugetlb.2MB.max {want['hugetlb.2MB.max'].value}"


@pytest.mark.kubelet_code
@pytest.mark.parametrize("qos", [QosClass.BURSTABLE, QosClass.BEST_EFFORT], ids=["burstable", "besteffort"])
def test_qos_tiers_leave_huge_pages_unbounded(deployed: Deployed, node: Node, base_config: KubeletConfig,
                                              qos: QosClass) -> None:
    """The QoS tiers never bound huge pages: hugetlb.<size>.max (and .rsvd.max) of every size is the oracle's
    1 << 62 on the Burstable and BestEffort cgroups (qos_container_manager_linux.go setHugePagesUnbounded, at start
    and each minute), so a pod's own limit is what binds it. Not an upstream e2e case: the kubelet's own rule."""
    path = cgroup_paths.qos_cgroup(qos, base_config.cgroup_driver)
    want = deployed.expectation.node_limits[path]
    assert_matches(f"{qos.value} QoS hugetlb limits", compare_node_cgroups(
        {path: CgroupExpectation(path, dict(want))}, node.node_cgroups(tuple(want))))


def _events_max(handle: PodHandle) -> int:
    """The `max` count of the pod cgroup's hugetlb.2MB.events (0 when not read)."""
    text = handle.evidence((EVENTS_FILE,)).pod_cgroup.get(EVENTS_FILE) or ""
    return next((int(value) for key, _, value in (line.partition(" ") for line in text.splitlines())
                 if key == "max"), 0)


@mirrors(HUGEPAGES_TEST, *ONE_SIZE_CASES)
def test_pages_beyond_the_limit_fail(huge: Deployed) -> None:
    """The toucher maps and touches 2 MiB pages one by one, one more than its limit: exactly the limit's pages are
    touched (the oracle's pod hugetlb.2MB.max ÷ 2 MiB), the next stops the program (SIGBUS at the fault, or ENOMEM
    at mmap under a reservation limit), and the pod cgroup's hugetlb.2MB.events `max` grows."""
    handle = huge.handle(HUGE_POD)
    pod_path = _path(huge, HUGE_POD, "pod", TOUCHER)
    limit = huge.expectation.node_limits[pod_path]["hugetlb.2MB.max"]
    before = _events_max(handle)
    result = handle.exec(TOUCHER, hugetlb_toucher(ATTEMPTS), timeout=60)
    assert result.rc == 0, f"hugetlb_touch exited {result.rc}: {result.stderr[-500:]}"
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    pages = str(int(limit.value) // PAGE)
    assert_matches("pod hugetlb limit behaviour", [
        compare_value(HUGE_POD, TOUCHER, pod_path, f"2 MiB pages touched of {ATTEMPTS}",
                      Expected(pages, f"{limit.rule}; {STOPPED}"), str(outcome["touched"])),
        compare_value(HUGE_POD, TOUCHER, pod_path, f"page {ATTEMPTS} refused ({outcome['end'] or 'not refused'})",
                      Expected("yes", STOPPED), "yes" if outcome["end"] in REFUSALS else "no"),
        compare_value(HUGE_POD, "", pod_path, f"{EVENTS_FILE} max grew", Expected("yes", EVENTS),
                      "yes" if _events_max(handle) > before else "no"),
    ])
