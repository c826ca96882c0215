"""KEP-5359's swap semantics table cell by cell, its example manifests and validation, under the three node modes.

Source: kep-5359-swap-awareness "Swap limit semantics", "Relationship between limits.swap and limits.memory",
"User Experience Examples", "Proposed Design: Limits-Only Model"; KEP-2400 LimitedSwap (calcSwapForBurstablePods).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.kubelet_config import SWAP_BEHAVIORS
from nodeconf.manifest import MEMORY, SWAP, SYSTEM_NODE_CRITICAL, Pod, Resources
from nodeconf.node_facts import NodeFacts
from nodeconf.nodes.base import PodEvidence
from nodeconf.quantity import Quantity
from nodeconf.semantics.expectation import Expected, QosClass
from suites.toolkit.checks import check_admission, check_node, check_pod, deploy_pods, seed_files
from suites.toolkit.compare import ComparedValue, compare_value
from suites.toolkit.kubelet import WORKLOAD_SWAP_ON, Kubelet, Oracle
from suites.toolkit.pods import fit_to_node, pod, renamed, with_container
from suites.toolkit.tolerance import page_floor

pytestmark = [pytest.mark.kep5359]
KEP_5359 = pytest.mark.min_profile("1.38")

pytestmark.append(pytest.mark.runs_alone(
    "each cell reconfigures the kubelet's swap behavior; the node swap metric and QoS sums"))

TABLE = "KEP-5359 swap limit semantics table"
COMBINATIONS = ("KEP-5359 limits.memory vs limits.swap: memory.max = limits.memory (or max), "
                "memory.swap.max = limits.swap")
ZERO, CALCULATED, EXPLICIT = "0", "calculated", "explicit"
NO_SWAP, LIMITED, WORKLOAD = SWAP_BEHAVIORS
MODE_IDS = {NO_SWAP: "noswap", LIMITED: "limitedswap", WORKLOAD: "workloadcontrolled"}


def _burstable_without_swap() -> Pod:
    return pod("requests-limits/qos-classes.yaml", "qos-burstable")


def _critical_burstable() -> Pod:
    """upstream swap_test.go "with a critical pod": a Burstable pod (request below its limit, which LimitedSwap would
    give a share) of priority class system-node-critical."""
    return replace(renamed(_burstable_without_swap(), "critical-burstable"), priority_class_name=SYSTEM_NODE_CRITICAL)


# workload → (pod, the container whose memory.swap.max the row speaks of, its QoS class)
ROWS = {
    "omitted-burstable": (_burstable_without_swap, "app", QosClass.BURSTABLE),
    "omitted-burstable-request-eq-limit": (
        lambda: with_container(_burstable_without_swap(), "app", requests={MEMORY: "64Mi"}, limits={MEMORY: "64Mi"}),
        "app", QosClass.BURSTABLE),
    "omitted-guaranteed": (lambda: pod("requests-limits/qos-classes.yaml", "qos-guaranteed"), "app",
                           QosClass.GUARANTEED),
    "omitted-critical": (_critical_burstable, "app", QosClass.BURSTABLE),
    "omitted-besteffort": (lambda: pod("requests-limits/qos-classes.yaml", "qos-besteffort"), "app",
                           QosClass.BEST_EFFORT),
    "set-container": (lambda: pod("kep-5359/limits-only-model.yaml"), "app", QosClass.BURSTABLE),
    "set-pod": (lambda: pod("kep-5359/use-case-4-pod-level-swap-mixed.yaml"), "c3-helper-a", QosClass.BURSTABLE),
    "set-zero": (lambda: with_container(_burstable_without_swap(), "app", limits={SWAP: "0"}), "app",
                 QosClass.BURSTABLE),
}
# The KEP's table: what each row gets in each node mode.
CELLS = {
    "omitted-burstable": {NO_SWAP: ZERO, LIMITED: CALCULATED, WORKLOAD: ZERO},
    # KEP-2400 LimitedSwap: a container whose memory request equals its limit gets no swap (GetContainerSwapBehavior).
    "omitted-burstable-request-eq-limit": {NO_SWAP: ZERO, LIMITED: ZERO, WORKLOAD: ZERO},
    "omitted-guaranteed": {NO_SWAP: ZERO, LIMITED: ZERO, WORKLOAD: ZERO},
    # KEP-2400 LimitedSwap: a critical pod (priority >= 2000000000, static or mirror) gets no swap
    # (kuberuntime_container_linux.go GetContainerSwapBehavior: types.IsCriticalPod).
    "omitted-critical": {NO_SWAP: ZERO, LIMITED: ZERO, WORKLOAD: ZERO},
    "omitted-besteffort": {NO_SWAP: ZERO, LIMITED: ZERO, WORKLOAD: ZERO},
    "set-container": {NO_SWAP: ZERO, LIMITED: EXPLICIT, WORKLOAD: EXPLICIT},
    "set-pod": {NO_SWAP: ZERO, LIMITED: EXPLICIT, WORKLOAD: EXPLICIT},
    "set-zero": {NO_SWAP: ZERO, LIMITED: ZERO, WORKLOAD: ZERO},
}


def _explicit_swap(p: Pod, container: str) -> int:
    """The container's own limits.swap, else the pod-level one it inherits (KEP-5359 pod-level swap)."""
    own = next(c for c in p.all_containers if c.name == container).resources.limit(SWAP)
    if own is None and p.resources is not None:
        own = p.resources.limit(SWAP)
    assert own is not None, f"pod {p.ref} sets no swap limit for {container}"
    return own.value()


def _cell_value(cell: str, p: Pod, container: str, facts: NodeFacts) -> str:
    """The table cell as the kernel reads memory.swap.max back (page-rounded), computed from the KEP's words."""
    if cell == ZERO:
        return "0"
    if cell == EXPLICIT:
        return str(page_floor(_explicit_swap(p, container), facts.page_size))
    c = next(c for c in p.containers if c.name == container)
    request = (c.resources.request(MEMORY) or Quantity.of(0)).value()
    # KEP-2400 LimitedSwap: request / node memory capacity × total swap, as the kubelet's float64 expression.
    return str(page_floor(int(float(request) / float(facts.memory_capacity) * float(facts.swap_capacity)),
                          facts.page_size))


# The upstream swap_test.go entries a cell mirrors: a pod without limits.swap of that class, on NoSwap and LimitedSwap.
UPSTREAM_ENTRIES = {"omitted-besteffort": "QOS Best-effort", "omitted-burstable": "QOS Burstable",
                    "omitted-burstable-request-eq-limit": "QOS Burstable with memory request equals to limit",
                    "omitted-guaranteed": "QOS Guaranteed"}
UPSTREAM_TABLES = {NO_SWAP: "Swap / with configuration", LIMITED: "Swap / Basic functionality / with configuration"}
# Upstream runs its critical pod on the NodeConformance (NoSwap) node; LimitedSwap is where the exclusion matters.
UPSTREAM_CRITICAL = "Swap / with a critical pod - should avoid swap"


def _kep2400_cell(row: str, mode: str) -> bool:
    """Rows without limits.swap on NoSwap and LimitedSwap are KEP-2400's and hold before 1.38 with default gates
    (and mirror upstream's swap_test.go entries); the rest need KEP-5359 (WorkloadControlledSwap, limits.swap) and
    its gate."""
    return row.startswith("omitted-") and mode != WORKLOAD


def _cell_marks(row: str, mode: str) -> list[pytest.MarkDecorator]:
    if _kep2400_cell(row, mode):
        case = UPSTREAM_CRITICAL if row == "omitted-critical" else f"{UPSTREAM_TABLES[mode]} / {UPSTREAM_ENTRIES[row]}"
        return [pytest.mark.kep2400, pytest.mark.upstream_e2e(file="test/e2e_node/swap_test.go", case=case)]
    return [KEP_5359]


CELLS_PARAMS = [pytest.param(row, mode, marks=_cell_marks(row, mode), id=f"{row}-{MODE_IDS[mode]}")
                for row in ROWS for mode in SWAP_BEHAVIORS]


@pytest.mark.parametrize(("row", "mode"), CELLS_PARAMS)
def test_semantics_table_cell(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts,
                              row: str, mode: str) -> None:
    """One cell: the row's workload on a node in `mode` gets the cell's memory.swap.max (and the oracle's rest)."""
    make, container, qos = ROWS[row]
    kubelet.swap(mode, None if _kep2400_cell(row, mode) else WORKLOAD_SWAP_ON)
    workload = fit_to_node(make(), node_facts.memory_capacity)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    cell = CELLS[row][mode]

    def table(evidence: PodEvidence) -> list[ComparedValue]:
        rule = f"{TABLE}: {row} on {mode} → {cell}"
        rows = seed_files(workload.name, container, evidence.container(container).cgroup,
                          {"memory.swap.max": _cell_value(cell, workload, container, node_facts)}, rule)
        if row == "set-pod" and cell == EXPLICIT:
            rows += seed_files(workload.name, "", evidence.pod_cgroup, {"memory.swap.max": _cell_value(
                cell, workload, container, node_facts)}, f"{TABLE}: pod-level limits.swap sets the pod cgroup")
        if row.startswith("set-") and row != "set-zero" and mode == NO_SWAP:
            warnings = " ".join(sorted(e.reason for e in evidence.status.events if e.type == "Warning"))
            rows.append(compare_value(workload.name, "", "(events)", "warning event reasons", Expected(
                "SwapNotSupported", f"{TABLE}: set on NoSwap → admitted with a SwapNotSupported event"),
                warnings or None))
        return rows

    check_pod(deployed.handle(workload.name), deployed.expected(workload.name), qos, seed=table)


KEP_EXAMPLES = [
    "kep-5359/limits-memory-unset.yaml",
    "kep-5359/limits-memory-lt-swap.yaml",
    "kep-5359/limits-memory-eq-swap.yaml",
    "kep-5359/limits-memory-gt-swap.yaml",
    "kep-5359/limits-only-model.yaml",
    "kep-5359/guaranteed-with-swap.yaml",
    "kep-5359/use-case-1-swap-disabled.yaml",
    "kep-5359/use-case-2-swap-enabled.yaml",
    "kep-5359/use-case-3-unlimited-swap.yaml",
    "kep-5359/use-case-4-pod-level-swap-mixed.yaml",
]


@KEP_5359
@pytest.mark.parametrize("mode", SWAP_BEHAVIORS, ids=MODE_IDS.get)
@pytest.mark.parametrize("manifest", KEP_EXAMPLES, ids=lambda m: m.removeprefix("kep-5359/").removesuffix(".yaml"))
def test_kep_example(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, node_facts: NodeFacts, manifest: str,
                     mode: str) -> None:
    """Every KEP example pod: memory.max from limits.memory, memory.swap.max from limits.swap (own or the pod's),
    none of it on NoSwap; the rest as the oracle says."""
    kubelet.swap(mode, WORKLOAD_SWAP_ON)
    workload = fit_to_node(pod(manifest), node_facts.memory_capacity)
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])

    def combinations(evidence: PodEvidence) -> list[ComparedValue]:
        rows: list[ComparedValue] = []
        for c in workload.containers:
            memory = c.resources.limit(MEMORY)
            pod_memory = workload.resources.limit(MEMORY) if workload.resources else None
            limit = memory or pod_memory
            expected = {"memory.max": str(page_floor(limit.value(), node_facts.page_size)) if limit else "max"}
            if c.resources.limit(SWAP) is not None or (workload.resources and workload.resources.limit(SWAP)):
                expected["memory.swap.max"] = (
                    "0" if mode == NO_SWAP else str(page_floor(_explicit_swap(workload, c.name), node_facts.page_size)))
            rows += seed_files(workload.name, c.name, evidence.container(c.name).cgroup, expected,
                               f"{COMBINATIONS} ({mode})")
        return rows

    check_pod(deployed.handle(workload.name), deployed.expected(workload.name), seed=combinations)


REFUSALS = {
    "requests-swap-container": with_container(_burstable_without_swap(), "app",
                                              requests={MEMORY: "64Mi", SWAP: "16Mi"}, limits={SWAP: "16Mi"}),
    "requests-swap-zero": with_container(_burstable_without_swap(), "app", requests={MEMORY: "64Mi", SWAP: "0"}),
    "requests-swap-pod": replace(_burstable_without_swap(), resources=Resources(
        requests={SWAP: Quantity.parse("16Mi")}, limits={SWAP: Quantity.parse("16Mi")})),
    "container-above-pod": with_container(pod("kep-5359/use-case-4-pod-level-swap-mixed.yaml"), "c2-swap-worker",
                                          requests={MEMORY: "1Gi"}, limits={MEMORY: "2Gi", SWAP: "3Gi"}),
    "negative": with_container(_burstable_without_swap(), "app", limits={SWAP: "-16Mi"}),
}
REQUESTS_SWAP = "swap may only be specified in limits, not requests"


@KEP_5359
@pytest.mark.parametrize("case", list(REFUSALS))
def test_validation_refusal(deploy: Deploy, oracle: Oracle, kubelet: Kubelet, case: str) -> None:
    """Invalid swap is refused with the oracle's message and nothing runs; requests.swap with the KEP's words."""
    kubelet.swap(WORKLOAD, WORKLOAD_SWAP_ON)
    workload = REFUSALS[case]
    deployed = deploy_pods(deploy, oracle, kubelet, [workload])
    expected = deployed.expected(workload.name)
    assert not expected.admitted, f"the oracle admits {case}; the KEP refuses it"
    check_admission(deployed.handle(workload.name), expected)
    if case.startswith("requests-swap"):
        assert any(REQUESTS_SWAP in e for e in deployed.handle(workload.name).errors), (
            f'pod {workload.ref}: no error says "{REQUESTS_SWAP}" (KEP-5359 Limits-Only Model); '
            f"got {list(deployed.handle(workload.name).errors)}")


@KEP_5359
def test_swap_allocated_bytes_metric(deploy: Deploy, oracle: Oracle, kubelet: Kubelet,
                                     node_facts: NodeFacts) -> None:
    """kubelet_node_swap_allocated_bytes: the sum of limits.swap of the containers on the node, with and without
    a pod-level limit (which the oracle counts as documented in semantics/swap.py)."""
    kubelet.swap(WORKLOAD, WORKLOAD_SWAP_ON)
    containers_only = [fit_to_node(pod(m), node_facts.memory_capacity)
                       for m in ("kep-5359/limits-only-model.yaml", "kep-5359/limits-memory-lt-swap.yaml")]
    first = deploy_pods(deploy, oracle, kubelet, containers_only)
    total = sum(_explicit_swap(p, c.name) for p in containers_only for c in p.containers)
    assert first.expectation.metrics["kubelet_node_swap_allocated_bytes"] == total, (
        "the oracle's kubelet_node_swap_allocated_bytes is not the KEP's sum of limits.swap")
    check_node(kubelet.node, first.expectation, "node with two pods setting container limits.swap")
    mixed = fit_to_node(pod("kep-5359/use-case-4-pod-level-swap-mixed.yaml"), node_facts.memory_capacity)
    both = oracle.expect([*containers_only, mixed], kubelet.config)
    deploy(mixed)
    check_node(kubelet.node, both, "node with a pod-level limits.swap added")
