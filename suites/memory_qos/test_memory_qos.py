"""Memory QoS v1.36: memory.high throttling, None vs TieredReservation at every level, metrics, pressure, warning.

Source: memory-qos-v1.36 post ("memoryReservationPolicy", the QoS table, "Cgroup hierarchy", the two metrics,
"커널 버전 체크"); SEMANTICS.md Memory QoS (the memory.high formula, the allocatable fallback).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.markers import mirrors
from nodeconf.fixtures.node import Deploy
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import MEMORY, SWAP, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodEvidence
from nodeconf.quantity import Quantity
from nodeconf.semantics.documents import ARTICLE, POST
from nodeconf.semantics.expectation import Expected, QosClass
from suites.memory_qos.sources import (
    BEHAVIOUR,
    EDGES,
    HIERARCHY,
    HIGH,
    MEMORY_QOS_TEST,
    METRICS,
    MI,
    POLICIES,
    POLICY,
    POST_TABLE,
    PROTECTION,
    THROTTLING,
)
from suites.toolkit.checks import (
    check_admission,
    check_node,
    check_pod,
    check_qos,
    deploy_pods,
    seed_files,
)
from suites.toolkit.compare import (
    ComparedValue,
    assert_matches,
    compare_measured,
    compare_metrics,
    compare_reason,
    compare_value,
)
from suites.toolkit.kubelet import WORKLOAD_SWAP_ON, Kubelet, Oracle, with_gates
from suites.toolkit.pods import memhog, pod, pods, renamed, scaled, with_container
from suites.toolkit.pressure import watch_hogs
from suites.toolkit.tolerance import Band, page_floor

pytestmark = [pytest.mark.memory_qos, pytest.mark.min_profile("1.36")]

pytestmark.append(pytest.mark.runs_alone(
    "reconfigures the kubelet (Memory QoS policy, memoryThrottlingFactor) and judges the QoS and kubepods sums, "
    "node metrics and memory pressure"))



def _three_classes() -> list[Pod]:
    return [pod("memory-qos/guaranteed-512mi.yaml"), pod("memory-qos/burstable-512mi.yaml"),
            pod("memory-qos/besteffort.yaml")]


def _request(p: Pod) -> int:
    """The pod's memory request (a limit alone is the request, core/v1 defaulting)."""
    return sum((c.resources.request(MEMORY) or c.resources.limit(MEMORY) or Quantity.of(0)).value()
               for c in p.containers)


def _levels(tiered: bool, pods: list[Pod], kubepods: str, burstable: str) -> dict[tuple[str, str], str]:
    """The post's hierarchy sums: (cgroup, file) → value; all 0 under None."""
    by_name = {p.name: _request(p) for p in pods}
    guaranteed = sum(v for k, v in by_name.items() if k.startswith("guaranteed"))
    burst = sum(v for k, v in by_name.items() if k.startswith("burstable"))
    return {(kubepods, "memory.min"): str(guaranteed + burst if tiered else 0),
            (burstable, "memory.low"): str(burst if tiered else 0)}


def _node_literals(kubelet: Kubelet, tiered: bool, pods: list[Pod]) -> list[ComparedValue]:
    cgroups = kubelet.node.node_cgroups()
    kubepods = next(p for p in cgroups if p.endswith("kubepods.slice") or p.endswith("kubepods"))
    burstable = next(p for p in cgroups if p.endswith("burstable.slice") or p.endswith("burstable"))
    rows = [compare_value("", "", path, file, Expected(value, HIERARCHY), cgroups[path].get(file))
            for (path, file), value in _levels(tiered, pods, kubepods, burstable).items()]
    guaranteed = sum(_request(p) for p in pods if p.name.startswith("guaranteed")) if tiered else 0
    burst = sum(_request(p) for p in pods if p.name.startswith("burstable")) if tiered else 0
    metrics = kubelet.node.metrics()
    found = {n: metrics.samples[(n, ())] for n in ("kubelet_memory_qos_node_memory_min_bytes",
                                                   "kubelet_memory_qos_node_memory_low_bytes")
             if (n, ()) in metrics.samples}
    return rows + compare_metrics({"kubelet_memory_qos_node_memory_min_bytes": guaranteed,
                                   "kubelet_memory_qos_node_memory_low_bytes": burst}, found, METRICS)


@mirrors(MEMORY_QOS_TEST, f"{PROTECTION}should set memory.low = requests.memory for Burstable pod containers",
         f"{PROTECTION}should set memory.min for Guaranteed pod containers",
         f"{PROTECTION}should NOT set memory.min for BestEffort pod",
         f"{PROTECTION}should propagate memory protection through QoS cgroup hierarchy",
         f"{THROTTLING}should realize the effective controls derived from the admitted Pod",
         f"{THROTTLING}should NOT set memory.high for Guaranteed pod",
         f"{POLICY}should NOT set memory protection when policy is None",
         f"{POLICY}should set memory protection when policy is TieredReservation")
@pytest.mark.parametrize("policy", list(POLICIES))
def test_reservation_policy_at_every_level(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                           node_facts: NodeFacts, policy: str) -> None:
    """The post's three pods: container, pod, kubepods and burstable levels, both metrics, under each policy."""
    config = kubelet.file(POLICIES[policy])
    tiered = policy == "tiered"
    # The post's default factor is 0.9 (1.36); later profiles leave it unset, so only an explicit one is checked.
    factor = config.memory_throttling_factor
    pods = _three_classes()
    deployed = deploy_pods(deploy, oracle, kubelet, pods)
    classes = {"guaranteed-512mi": QosClass.GUARANTEED, "burstable-512mi": QosClass.BURSTABLE,
               "besteffort": QosClass.BEST_EFFORT}
    for p in pods:
        def post(evidence: PodEvidence, p: Pod = p) -> list[ComparedValue]:
            request = _request(p)
            qos = classes[p.name]
            values = {"memory.min": str(request if tiered and qos is QosClass.GUARANTEED else 0),
                      "memory.low": str(request if tiered and qos is QosClass.BURSTABLE else 0)}
            rows = seed_files(p.name, "", evidence.pod_cgroup, values, POST_TABLE)
            rows += seed_files(p.name, "app", evidence.container("app").cgroup, values, POST_TABLE)
            if qos is QosClass.BURSTABLE and factor is not None:
                limit = p.containers[0].resources.limit(MEMORY)
                assert limit is not None
                rows += seed_files(p.name, "app", evidence.container("app").cgroup, {"memory.high": str(page_floor(
                    int(request + factor * (limit.value() - request)), node_facts.page_size))}, HIGH)
            if qos is QosClass.GUARANTEED:
                rows += seed_files(p.name, "app", evidence.container("app").cgroup, {"memory.high": "max"},
                                   f"{POST} table: Guaranteed memory.high not set (request == limit)")
            return rows

        check_pod(deployed.handle(p.name), deployed.expected(p.name), classes[p.name], seed=post)
    check_node(kubelet.node, deployed.expectation, f"node under {policy} reservation")
    assert_matches(f"node under {policy} reservation (sums of the {POST})", _node_literals(kubelet, tiered, pods))


RATIOS = [(32, 128), (64, 128), (96, 128), (128, 128), (64, None)]
FACTORS = [0.9, 0.6, 0.3]


@mirrors(MEMORY_QOS_TEST, f"{THROTTLING}should set memory.high for Burstable pod using formula",
         f"{THROTTLING}should set memory.high using node allocatable when no limit is set",
         "MemoryQoS / memory.high formula verification across request/limit ratios / "
         "should correctly compute memory.high for various request/limit combinations",
         f"{POLICY}should set memory.high independent of memoryReservationPolicy")
@pytest.mark.parametrize("factor", FACTORS, ids=lambda f: f"factor{f}")
@pytest.mark.parametrize(("request_mib", "limit_mib"), RATIOS,
                         ids=lambda v: "nolimit" if v is None else f"{v}Mi")
def test_memory_high_formula(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts,
                             request_mib: int, limit_mib: int | None, factor: float) -> None:
    """memory.high over request/limit ratios and throttling factors; without a limit, from node allocatable;
    request == limit leaves max."""
    base = kubelet.file(POLICIES["none"])
    config = kubelet.use(replace(base, memory_throttling_factor=factor))
    limits = {MEMORY: f"{limit_mib}Mi"} if limit_mib is not None else {}
    workload = with_container(pod("memory-qos/burstable-512mi.yaml"), "app",
                              requests={MEMORY: f"{request_mib}Mi"}, limits=limits)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    request = request_mib * MI
    ceiling = limit_mib * MI if limit_mib is not None else _allocatable(node_facts, config)
    high = page_floor(int(request + factor * (ceiling - request)), node_facts.page_size)
    value = "max" if limit_mib == request_mib or high <= request else str(high)
    rule = f"{HIGH}; factor {factor}, " + ("limit" if limit_mib is not None else "no limit: node allocatable")

    def formula(evidence: PodEvidence) -> list[ComparedValue]:
        return seed_files(workload.name, "app", evidence.container("app").cgroup, {"memory.high": value}, rule)

    check_pod(deployed.handle(workload.name), deployed.expected(workload.name), QosClass.BURSTABLE, seed=formula)


def _allocatable(facts: NodeFacts, config: KubeletConfig) -> int:
    """Node allocatable for memory.high: capacity − systemReserved − kubeReserved (SEMANTICS.md Memory QoS); the
    huge page pool stays in (GetNodeAllocatableAbsolute, unlike the node status allocatable)."""
    reserved = sum(q.value() for q in (config.system_reserved.get(MEMORY), config.kube_reserved.get(MEMORY)) if q)
    return facts.memory_capacity - reserved


@mirrors(MEMORY_QOS_TEST, f"{EDGES}should include burstable requests in kubepods root memory.min",
         f"{EDGES}should remove burstable memory.low contribution when pod is deleted")
def test_hierarchy_sums_as_pods_come_and_go(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """kubepods memory.min and the burstable slice's memory.low follow the pods on the node, both metrics too."""
    kubelet.file(POLICIES["tiered"])
    guaranteed, burstable, besteffort = _three_classes()
    second = renamed(burstable, "burstable-second")
    pods = [guaranteed, burstable, second, besteffort]
    deployed = deploy_pods(deploy, oracle, kubelet, pods)
    for h in deployed.handles:
        h.wait_running()
    remaining = list(pods)
    for leaving in (None, "burstable-512mi", "guaranteed-512mi"):
        if leaving is not None:
            deployed.handle(leaving).delete()
            remaining = [p for p in remaining if p.name != leaving]
        step = f"node with {', '.join(p.name for p in remaining)}"
        check_node(kubelet.node, oracle.expect(remaining, kubelet.config), step)
        assert_matches(f"{step} (sums of the {POST})", _node_literals(kubelet, True, remaining))


@pytest.mark.needs_swap
# memory.high may livelock below 5.9 (the post's kernel check); memhog --reclaim needs memory.reclaim (5.19).
@pytest.mark.needs_kernel("5.19")
@pytest.mark.min_profile("1.38")
@mirrors(MEMORY_QOS_TEST, f"{BEHAVIOUR}should increment memory.events high counter when usage exceeds memory.high")
def test_memory_high_events_rise_without_oom_kill(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """A hog above memory.high (below memory.max) is throttled and reclaimed to swap: memory.events high rises,
    no OOM kill, no restart.

    Guaranteed (mm/memcontrol.c): usage above memory.high at a charge makes the task reclaim on its way back to
    user space and counts memory.events high; memory.high itself never OOM-kills. The 52 MiB hog plus the
    interpreter comes close to memory.max (64Mi), where a stalled swap writeback could OOM-kill: the hog keeps
    4 MiB below memory.max by writing memory.reclaim itself (memhog --reclaim), so memory.max is never reached.
    The events are counted in the cgroups whose own memory.high was exceeded (mm/memcontrol.c reclaim_high): under
    a runtime scope that is the scope, which crun gives the same memory.high and whose usage (a superset) reaches it
    first, so they are read from the scope's memory.events, hierarchical over the container's cgroup (measured on
    sid + crun 1.28: scope high 76, container sub-cgroup 0).
    """
    base = kubelet.file(POLICIES["none"])
    kubelet.use(with_gates(replace(base, memory_throttling_factor=0.5, swap_behavior="WorkloadControlledSwap"),
                           WORKLOAD_SWAP_ON))
    # request 16Mi, limit 64Mi, factor 0.5: memory.high = 40Mi; a 52 MiB hog stays below memory.max.
    workload = replace(with_container(pod("memory-qos/burstable-512mi.yaml"), "app", command=memhog(52, reclaim=True),
                                      requests={MEMORY: "16Mi"}, limits={MEMORY: "64Mi", SWAP: "64Mi"}),
                       restart_policy="OnFailure")
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_admission(handle, expected)
    check_qos(handle, expected, QosClass.BURSTABLE)
    watched = watch_hogs(handle, ["app"], 52)
    got = watched.evidence.container("app")
    app, counted = got.cgroup, got.scope or got.cgroup
    events = counted.keyed("memory.events")
    state = watched.states["app"]
    rule = "Memory QoS: memory.high throttles and reclaims, it never kills"
    assert_matches(f"pod {workload.ref} above memory.high", [
        compare_value(workload.name, "app", app.path, "memory.high", Expected(str(40 * MI), HIGH), app["memory.high"]),
        compare_measured(workload.name, "app", counted.path, "memory.events high", Band(1, 2**63, "rose at least once"),
                         events.get("high", 0), rule),
        compare_measured(workload.name, "app", counted.path, "memory.events oom_kill", Band(0, 0, "none"),
                         events.get("oom_kill", 0), rule),
        compare_value(workload.name, "app", app.path, "container state", Expected("running, 0 restarts", rule),
                      f"{state.state}, {state.restart_count} restarts"),
    ])


@mirrors(MEMORY_QOS_TEST, f"{BEHAVIOUR}should OOM kill container when memory usage exceeds memory.max")
def test_oom_above_memory_max(deploy: Deploy, oracle: Oracle, kubelet: Kubelet) -> None:
    """Above memory.max (no swap) the kernel OOM-kills the container: 137, OOMKilled, memory.events oom_kill."""
    kubelet.file(POLICIES["none"])
    workload = replace(with_container(pod("memory-qos/burstable-512mi.yaml"), "app", command=memhog(64),
                                      requests={MEMORY: "16Mi"}, limits={MEMORY: "32Mi"}),
                       restart_policy="OnFailure")
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    handle, expected = deployed.handle(workload.name), deployed.expected(workload.name)
    check_admission(handle, expected)
    watched = watch_hogs(handle, ["app"], 64)
    state = watched.states["app"]
    ended = state.last_terminated
    shown = f"{ended.reason} ({ended.exit_code})" if ended else f"{state.reason} ({state.exit_code})"
    pod_cgroup = watched.evidence.pod_cgroup
    oom_kills = pod_cgroup.keyed("memory.events").get("oom_kill", 0)
    rule = f"memory.max is the hard limit: OOM kill in the container's cgroup ({ARTICLE})"
    assert_matches(f"pod {workload.ref} above memory.max", [
        compare_reason(workload.name, "app", pod_cgroup.path, "termination", Expected("OOMKilled (137)", rule),
                       shown, (ended.reason, ended.exit_code) if ended else (state.reason, state.exit_code),
                       oracle.facts, oom_kills),
        compare_measured(workload.name, "", pod_cgroup.path, "memory.events oom_kill", Band(1, 2**63, "at least one"),
                         oom_kills, rule),
    ])


def test_kernel_version_warning(oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts) -> None:
    """With MemoryQoS on, a kernel older than 5.9 gets a startup warning (never a refusal); newer ones none."""
    config = kubelet.file(POLICIES["none"])
    expected = oracle.expect([], config).warnings
    old_kernel = not node_facts.kernel_at_least(5, 9)
    rule = "Memory QoS v1.36 post: kernel < 5.9 → a warning at kubelet start (memory.high livelock)"
    assert_matches("kubelet start-up warnings", [
        compare_value("", "", "(kubelet log)", "memory.high livelock warning", Expected(
            "present" if old_kernel else "absent", rule),
            "present" if any("5.9" in w for w in kubelet.warnings) else "absent"),
        compare_value("", "", "(kubelet log)", "start-up warnings", Expected(" | ".join(expected), rule),
                      " | ".join(kubelet.warnings)),
    ])


SCHEMES = ("Memory QoS v1.36 post, \"Comparison with v1.27 behavior\": Burstable requests locked as memory.min "
           "before 1.36, memory.low with TieredReservation")


@pytest.mark.parametrize("scheme", ["before-1.36", "tiered"])
def test_seven_gib_of_burstable_requests(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts,
                                         scheme: str) -> None:
    """The post's 7 GiB of Burstable requests on an 8 GiB node (scaled by 4 to the 2 GiB reference node): the old
    scheme locks them as memory.min, TieredReservation turns them into memory.low."""
    old = scheme == "before-1.36"
    config = kubelet.file(POLICIES["tiered"])
    version = "1.35" if old else oracle.version
    if old:
        config = kubelet.use(replace(config, feature_gates={**config.feature_gates, "MemoryQoS": True}), version)
    at_version = Oracle(oracle.facts, version, oracle.others)
    workloads = [scaled(p, 4) for p in pods("memory-qos/seven-gib-burstable.yaml")]
    deployed = deploy_pods(deploy, at_version, kubelet, workloads)
    for p in workloads:
        request = _request(p)

        def post(evidence: PodEvidence, request: int = request, name: str = p.name) -> list[ComparedValue]:
            values = {"memory.min": str(request if old else 0), "memory.low": str(0 if old else request)}
            return [*seed_files(name, "", evidence.pod_cgroup, values, SCHEMES),
                    *seed_files(name, "app", evidence.container("app").cgroup, values, SCHEMES)]

        check_pod(deployed.handle(p.name), deployed.expected(p.name), QosClass.BURSTABLE, seed=post)
    check_node(kubelet.node, deployed.expectation, f"node with 7 GiB (scaled) of Burstable requests, {scheme}")
