"""Huge pages: hugetlb.<size>.max of the pod cgroup and of its container for every size the node offers.

Source: upstream test/e2e_node/hugepages_test.go "HugePages" (makePodToVerifyHugePages: the pod cgroup's
hugetlb.<size>.max against the pod's hugepages limit). On a node with no huge pages reserved a pod cannot ask for
any, so nodeconf checks the other half of the kubelet's rule: a size the pod does not request is limited to 0
(cgroup_manager_linux.go maybeSetHugetlb), at pod and container level (where containerd's default config drops the
CRI hugepage limits, the container's `max` is its documented deviation). A pod using reserved pages, and a
MAP_HUGETLB mapping beyond its limit failing, need a node with reserved huge pages (not the reference VM yet).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.base import CgroupFiles, Node
from nodeconf.semantics.expectation import QosClass
from suites.toolkit.checks import Deployed, check_pod, settled_evidence
from suites.toolkit.compare import assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Oracle
from suites.upstream.shared import Res, container, make_pod, module_kubelet, shared_deployment

pytestmark = [pytest.mark.upstream_e2e]

APP = "app"


@pytest.fixture(scope="module")
def deployed(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied) -> Iterator[Deployed]:
    """A Burstable pod asking for no huge pages; not applicable without the hugetlb controller or huge page sizes."""
    if "hugetlb" not in oracle.facts.cgroup_controllers:
        pytest.skip("the node's cgroup v2 root offers no hugetlb controller (CONFIG_CGROUP_HUGETLB off): the kubelet "
                    "writes no hugetlb limit (maybeSetHugetlb)")
    if not oracle.facts.hugepages:
        pytest.skip("the node's kernel offers no huge page size (/sys/kernel/mm/hugepages empty)")
    kubelet = module_kubelet(node, oracle, base_config, _applied)
    pod = make_pod("hugepages", [container(APP, Res(cpu_req="50m", mem_req="16Mi", mem_lim="64Mi"))])
    with shared_deployment(node, oracle, kubelet, [pod]) as running:
        yield running


def test_pod_matches_the_oracle(deployed: Deployed) -> None:
    """The pod runs as Burstable, every cgroup value the oracle's."""
    check_pod(deployed.handles[0], deployed.expectation.pods[0], QosClass.BURSTABLE)


@pytest.mark.parametrize("level", ["pod", "container"])
def test_unrequested_sizes_are_limited_to_zero(deployed: Deployed, level: str) -> None:
    """hugetlb.<size>.max of every size the node offers: the oracle's (0, as the pod requests none)."""
    expected = deployed.expectation.pods[0]
    path = expected.cgroup.path if expected.cgroup and level == "pod" else next(
        c.cgroup.path for c in expected.containers if c.name == APP)
    want = deployed.expectation.node_limits[path]
    names = tuple(name for name in want if name.startswith("hugetlb."))
    assert names, f"the oracle expects no hugetlb file for {path} on a node with huge page sizes"
    handle = deployed.handles[0]
    settled_evidence(handle)
    evidence = handle.evidence(names)
    got: CgroupFiles = evidence.pod_cgroup if level == "pod" else evidence.container(APP).cgroup
    assert_matches(f"{level} hugetlb limits", [
        compare_value("hugepages", "" if level == "pod" else APP, got.path, name, want[name], got.get(name))
        for name in names])
