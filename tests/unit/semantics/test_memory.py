"""memory.max at container, pod and kubepods level; memory.oom.group; page rounding on read-back."""

from __future__ import annotations

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics import memory
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import GI, MI, pod
from suites.toolkit.builders import container as ctr
from tests.unit.enforcer.enforcer_support import ARTICLE_NODE_MEMORY

PROFILE = profile_for()
NODE = NodeFacts(memory_capacity=ARTICLE_NODE_MEMORY)
RES_DEMO = with_api_defaults(
    pod(ctr("hello", {"cpu": "250m", "memory": "128Mi"}, {"cpu": "500m", "memory": "128Mi"}), name="res-demo")
)


@pytest.mark.parametrize(
    ("value", "page", "read"),
    # MEASURED.md write → read pairs on the VM kernel with 4096-byte pages; one 64 KiB page case.
    [(100000000, 4096, 99999744), (126392995, 4096, 126390272), (3161666355, 4096, 3161665536),
     (52428801, 4096, 52428800), (134217728, 4096, 134217728), (100000, 65536, 65536)],
)
def test_floor_to_page(value: int, page: int, read: int) -> None:
    assert memory.floor_to_page(value, page) == read


def test_res_demo_container_and_pod() -> None:
    """Article hands-on: container 134217728 / oom.group 1; pod 134217728 / oom.group 0."""
    c = memory.container_files(RES_DEMO, RES_DEMO.containers[0], NODE, KubeletConfig(), PROFILE)
    assert (c["memory.max"].value, c["memory.oom.group"].value) == ("134217728", "1")
    p = memory.pod_files(RES_DEMO, QosClass.BURSTABLE, NODE, PROFILE)
    assert (p["memory.max"].value, p["memory.oom.group"].value) == ("134217728", "0")


def test_single_process_oom_kill() -> None:
    c = memory.container_files(RES_DEMO, RES_DEMO.containers[0], NODE, KubeletConfig(single_process_oom_kill=True),
                               PROFILE)
    assert c["memory.oom.group"].value == "0"


def test_no_limit_is_max_and_pod_needs_every_limit() -> None:
    p = with_api_defaults(pod(ctr("a", {"memory": "64Mi"}), ctr("b", None, {"memory": "64Mi"})))
    files = [memory.container_files(p, c, NODE, KubeletConfig(), PROFILE)["memory.max"].value for c in p.containers]
    assert files == ["max", "67108864"]
    assert memory.pod_files(p, QosClass.BURSTABLE, NODE, PROFILE)["memory.max"].value == "max"


def test_pod_sum_with_overhead_and_sub_page_limit() -> None:
    p = with_api_defaults(pod(ctr("a", None, {"memory": "100M"}), ctr("b", None, {"memory": "64Mi"}),
                              overhead={"memory": "10Mi"}))
    # 100000000 + 67108864 + 10485760 = 177594624 = 43358 pages + 256 → 177594368; container a → 99999744.
    assert memory.pod_files(p, QosClass.GUARANTEED, NODE, PROFILE)["memory.max"].value == "177594368"
    assert memory.container_files(p, p.containers[0], NODE, KubeletConfig(), PROFILE)["memory.max"].value == \
        "99999744"


def test_pod_level_limit() -> None:
    p = with_api_defaults(pod(ctr("a", {"memory": "64Mi"}), ctr("b"), resources={"limits": {"memory": "1Gi"}}))
    assert memory.pod_files(p, QosClass.BURSTABLE, NODE, PROFILE)["memory.max"].value == str(GI)
    assert memory.container_files(p, p.containers[1], NODE, KubeletConfig(), PROFILE)["memory.max"].value == str(GI)


def test_besteffort_pod_is_unlimited() -> None:
    p = with_api_defaults(pod(ctr("a")))
    assert memory.pod_files(p, QosClass.BEST_EFFORT, NODE, PROFILE)["memory.max"].value == "max"


def test_kubepods_level() -> None:
    assert memory.kubepods_files(8 * GI - 1, NODE)["memory.max"].value == str(8 * GI - 4096)
    assert memory.qos_level_files()["memory.max"].value == "max"
    assert memory.pause_files()["memory.max"].value == "max"
    assert MI == 1048576
