"""Memory-pressure eviction: the article's order (exceeding the request, priority, excess) and the decision."""

from __future__ import annotations

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Container, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.quantity import Quantity
from nodeconf.semantics.eviction import PodMemoryUsage, decide_memory_eviction, rank_for_memory_pressure

MI = 2**20
NODE = NodeFacts(memory_capacity=2048 * MI)


def usage(name: str, request: str | None, used_mi: int, priority: int = 0,
          annotations: dict[str, str] | None = None) -> PodMemoryUsage:
    requests = {"memory": Quantity.parse(request)} if request else {}
    pod = Pod(name=name, containers=(Container("app", resources=Resources(requests=requests)),),
              priority_value=priority, annotations=annotations or {})
    return PodMemoryUsage(pod, {"app": used_mi * MI})


GUARANTEED = usage("guaranteed", "512Mi", 500)
BURSTABLE_OVER = usage("burstable-over", "256Mi", 400)
BURSTABLE_UNDER = usage("burstable-under", "1Gi", 300)
BEST_EFFORT = usage("besteffort", None, 100)
IMPORTANT_BEST_EFFORT = usage("important-besteffort", None, 900, priority=1000)


def test_rank_follows_the_article() -> None:
    # Exceeding pods first (by priority, then excess 144Mi > 100Mi), then those within their request
    # (usage − request −12Mi before −724Mi).
    ranked = rank_for_memory_pressure(
        [GUARANTEED, BURSTABLE_UNDER, BEST_EFFORT, IMPORTANT_BEST_EFFORT, BURSTABLE_OVER])
    assert [u.pod.name for u in ranked] == [
        "burstable-over", "besteffort", "important-besteffort", "guaranteed", "burstable-under"]


def test_pressure_evicts_the_first_ranked_pod_with_the_kubelet_message() -> None:
    # 2048Mi − (400 + 100 + 500 + 998)Mi = 50Mi available < the default 100Mi threshold.
    decision = decide_memory_eviction([GUARANTEED, BURSTABLE_OVER, BEST_EFFORT], NODE, KubeletConfig(),
                                      other_usage=998 * MI)
    assert decision.memory_pressure and decision.available == 50 * MI and decision.threshold == 100 * MI
    assert decision.victim is BURSTABLE_OVER.pod and decision.reason == "Evicted"
    assert decision.message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
        "Container app was using 400Mi, request is 256Mi, has larger consumption of memory. "
    )


@pytest.mark.parametrize(
    "other_mi, config, pressure",
    [
        pytest.param(948, KubeletConfig(), False, id="available-equals-threshold"),
        pytest.param(949, KubeletConfig(), True, id="one-mi-below"),
        pytest.param(998, KubeletConfig(eviction_hard={"nodefs.available": "10%"}), False,
                     id="memory-threshold-zeroed-by-other-setting"),
        pytest.param(998, KubeletConfig(eviction_hard={"nodefs.available": "10%"},
                                        merge_default_eviction_settings=True), True, id="merged-defaults"),
        pytest.param(900, KubeletConfig(eviction_hard={"memory.available": "10%"}), True, id="percentage"),
    ],
)
def test_threshold(other_mi: int, config: KubeletConfig, pressure: bool) -> None:
    # Pods use 1000Mi; 2048Mi − 1000Mi − 948Mi = 100Mi available; 10% of 2048Mi = 204.8Mi > 148Mi (900Mi other).
    decision = decide_memory_eviction([GUARANTEED, BURSTABLE_OVER, BEST_EFFORT], NODE, config,
                                      other_usage=other_mi * MI)
    assert decision.memory_pressure is pressure
    assert (decision.victim is not None) is pressure


def test_critical_pods_are_skipped() -> None:
    static = usage("static-hog", None, 900, annotations={"kubernetes.io/config.source": "file"})
    decision = decide_memory_eviction([static, GUARANTEED], NODE, KubeletConfig(), other_usage=600 * MI)
    assert decision.memory_pressure and decision.victim is GUARANTEED.pod
