"""The comparison helper: every mismatch of a pod listed with path, file, expected, actual and rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.nodes.base import PodEvidence
from nodeconf.report.comparison import PATH_FILE, PAUSE, comparison_csv
from nodeconf.semantics.expectation import CgroupExpectation, Expected, PodExpectation
from suites.toolkit.compare import (
    ComparedValue,
    assert_matches,
    compare_cgroup,
    compare_metrics,
    compare_path,
    compare_pod,
    compare_value,
    mismatch_message,
)

POD_PATH = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod61fc9751_ad7b.slice"
CTR_PATH = f"{POD_PATH}/cri-containerd-70e2.scope"
# The article's res-demo container (requests 250m/128Mi, limits 500m/128Mi) as read on its node.
RES_DEMO = CgroupExpectation(
    path=CTR_PATH,
    files={
        "cpu.weight": Expected("35", "cpu: non-linear shares->weight (runc >= 1.3.2)"),
        "cpu.max": Expected("50000 100000", "cpu: quota = limit * period / 1000"),
        "memory.max": Expected("134217728", "memory: limits.memory"),
        "memory.oom.group": Expected("1", "memory: oom.group on cgroup v2"),
    },
)
ARTICLE_READ_BACK = {"cpu.weight": "35", "cpu.max": "50000 100000", "memory.max": "134217728",
                     "memory.oom.group": "1"}


def test_all_equal_rows_pass() -> None:
    rows = compare_cgroup("res-demo", "hello", RES_DEMO, CTR_PATH, ARTICLE_READ_BACK)
    assert [(r.file, r.expected, r.actual, r.ok) for r in rows] == [
        ("cpu.weight", "35", "35", True),
        ("cpu.max", "50000 100000", "50000 100000", True),
        ("memory.max", "134217728", "134217728", True),
        ("memory.oom.group", "1", "1", True),
    ]
    assert assert_matches("pod default/res-demo", rows) == rows


def test_every_mismatch_is_listed_not_just_the_first() -> None:
    # An old runc (linear formula: 250m -> 10) and a node that dropped the memory limit and oom.group.
    node = {"cpu.weight": "10", "cpu.max": "50000 100000", "memory.max": "max"}
    rows = compare_cgroup("res-demo", "hello", RES_DEMO, CTR_PATH, node)
    with pytest.raises(AssertionError) as raised:
        assert_matches("pod default/res-demo", rows)
    assert str(raised.value).splitlines() == [
        "pod default/res-demo: 3 of 4 compared values differ from the oracle",
        f'  value of cgroup "cpu.weight" for container "hello" of pod "res-demo" at {CTR_PATH} was "10"; '
        'expected "35" (rule: cpu: non-linear shares->weight (runc >= 1.3.2))',
        f'  value of cgroup "memory.max" for container "hello" of pod "res-demo" at {CTR_PATH} was "max"; '
        'expected "134217728" (rule: memory: limits.memory)',
        f'  value of cgroup "memory.oom.group" for container "hello" of pod "res-demo" at {CTR_PATH} was (absent); '
        'expected "1" (rule: memory: oom.group on cgroup v2)',
    ]


BESTEFFORT_HIGH = Expected(
    "2040109056", "Memory QoS: memory.high from allocatable for BestEffort (post's table)",
    accepted={"max": "kubernetes#137685 (1.36.0 omits BestEffort memory.high)"},
)


def test_accepted_deviation_passes_and_names_its_issue() -> None:
    row = compare_value("idle", "c", CTR_PATH, "memory.high", BESTEFFORT_HIGH, "max")
    assert row.ok
    assert row.accepted_issue == "kubernetes#137685 (1.36.0 omits BestEffort memory.high)"
    assert row.rule.endswith("[accepted deviation: kubernetes#137685 (1.36.0 omits BestEffort memory.high)]")


def test_accepted_deviation_is_shown_next_to_a_real_mismatch() -> None:
    rows = [
        compare_value("idle", "c", CTR_PATH, "memory.high", BESTEFFORT_HIGH, "max"),
        compare_value("idle", "c", CTR_PATH, "cpu.weight", Expected("1", "cpu: BestEffort shares 2"), "100"),
    ]
    assert mismatch_message("pod default/idle", rows).splitlines() == [
        "pod default/idle: 1 of 2 compared values differ from the oracle",
        f'  value of cgroup "cpu.weight" for container "c" of pod "idle" at {CTR_PATH} was "100"; '
        'expected "1" (rule: cpu: BestEffort shares 2)',
        '  accepted: value of cgroup "memory.high" for container "c" of pod "idle" was "max" '
        "(kubernetes#137685 (1.36.0 omits BestEffort memory.high))",
    ]


@pytest.mark.parametrize("actual", ["2040104960", "", "0"], ids=["page-off", "empty", "zero"])
def test_accepted_set_is_not_a_loosened_check(actual: str) -> None:
    assert not compare_value("idle", "c", CTR_PATH, "memory.high", BESTEFFORT_HIGH, actual).ok


@pytest.mark.parametrize(
    ("row", "owner"),
    [
        (ComparedValue("p", "", POD_PATH, "memory.max", "1", "2", "r", False), 'pod "p"'),
        (ComparedValue("p", PAUSE, POD_PATH, "cpu.weight", "1", "2", "r", False), 'the pause container of pod "p"'),
        (ComparedValue("", "", "kubepods.slice", "memory.min", "1", "2", "r", False), "the node"),
    ],
    ids=["pod", "pause", "node"],
)
def test_line_names_the_owner(row: ComparedValue, owner: str) -> None:
    assert f" for {owner} at " in row.line()


def test_process_setting_and_metric_are_named_as_such() -> None:
    score = compare_value("res-demo", "hello", CTR_PATH, "oom_score_adj", Expected("963", "oom: burstable"), "982")
    assert score.line().startswith('value of process setting "oom_score_adj" for container "hello"')
    [metric] = compare_metrics({"kubelet_node_swap_allocated_bytes": 1073741824}, {}, "KEP-5359 metric")
    assert metric.line() == ('value of metric "kubelet_node_swap_allocated_bytes" for the node at /metrics was '
                             '(absent); expected "1073741824" (rule: KEP-5359 metric)')


def test_metrics_printed_as_floats_compare_as_integers() -> None:
    # The post's example output: kubelet_memory_qos_node_memory_min_bytes 5.36870912e+08
    [row] = compare_metrics({"kubelet_memory_qos_node_memory_min_bytes": 536870912},
                            {"kubelet_memory_qos_node_memory_min_bytes": 5.36870912e08}, "Memory QoS metric")
    assert row.ok and row.actual == "536870912"


def test_wrong_qos_slice_is_a_path_mismatch() -> None:
    expected = "kubepods.slice/kubepods-pod61fc9751_ad7b.slice"
    row = compare_path("res-demo", "", expected, POD_PATH, "layout: Guaranteed pods directly under kubepods")
    assert not row.ok
    assert row.line() == (f'path for pod "res-demo" at {POD_PATH} was "{POD_PATH}"; expected "{expected}" '
                          "(rule: layout: Guaranteed pods directly under kubepods)")


def test_nothing_compared_is_a_failure() -> None:
    with pytest.raises(AssertionError, match="nothing was compared"):
        assert_matches("pod default/p", [])


def test_rows_fit_the_reports_table() -> None:
    from nodeconf.report.comparison import COMPARISON_COLUMNS

    rows = compare_cgroup("res-demo", "hello", RES_DEMO, CTR_PATH, ARTICLE_READ_BACK)
    header, first, *_ = comparison_csv(rows).splitlines()
    assert header == ",".join(COMPARISON_COLUMNS)
    assert first == f"res-demo,hello,{CTR_PATH},cpu.weight,35,35,cpu: non-linear shares->weight (runc >= 1.3.2),yes"


def _article_evidence(container_weight: str) -> PodEvidence:
    """res-demo as the article read it on its node (Hands-on), under the oracle's layout."""
    from nodeconf.nodes.base import CgroupFiles, ContainerEvidence, PodStatus

    pod_path = ("kubepods.slice/kubepods-burstable.slice/"
                "kubepods-burstable-pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5.slice")
    hello = ContainerEvidence("hello", CgroupFiles(f"{pod_path}/cri-containerd-70e2.scope", {
        "cpu.weight": container_weight, "cpu.max": "50000 100000", "memory.max": "134217728",
        "memory.oom.group": "1", "memory.min": "0", "memory.low": "0", "memory.high": "max"}), (4242,), {4242: 963})
    pause = ContainerEvidence("POD", CgroupFiles(f"{pod_path}/cri-containerd-4507.scope", {
        "cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max"}), (4241,), {4241: -998})
    return PodEvidence(
        status=PodStatus("Running", "Burstable", {}),
        pod_cgroup=CgroupFiles(pod_path, {"cpu.weight": "10", "cpu.max": "50000 100000", "memory.max": "134217728",
                                          "memory.oom.group": "0"}),
        containers={"hello": hello}, pause=pause,
    )


def _read_by_article(rows: list[ComparedValue]) -> list[ComparedValue]:
    """The rows of the files the article printed (the others read as absent here)."""
    return [r for r in rows if r.actual is not None]


def _res_demo_expectation() -> PodExpectation:
    from nodeconf.kubelet_config import KubeletConfig
    from nodeconf.node_facts import NodeFacts
    from nodeconf.semantics.expect import expect
    from nodeconf.semantics.profile import profile_for
    from suites.toolkit.pods import pod

    demo = replace(pod("requests-limits/res-demo.yaml"), uid="61fc9751-ad7b-4318-9db3-078bbf2e5eb5")
    facts = NodeFacts(memory_capacity=3479660 * 1024, cpu_capacity_milli=2000, cpu_weight_formula="nonlinear")
    return expect([demo], facts, KubeletConfig(), profile_for("1.35")).pod("res-demo")


def test_compare_pod_agrees_with_the_articles_node() -> None:
    rows = _read_by_article(compare_pod(_res_demo_expectation(), _article_evidence("35")))
    assert {(r.container, r.file) for r in rows} >= {("hello", "cpu.weight"), ("", "cpu.weight"),
                                                    (PAUSE, "cpu.max"), ("hello", "oom_score_adj"),
                                                    (PAUSE, "oom_score_adj"), ("", PATH_FILE)}
    assert [r.line() for r in rows if not r.ok] == []


def test_compare_pod_names_the_old_runc_weight() -> None:
    rows = _read_by_article(compare_pod(_res_demo_expectation(), _article_evidence("10")))
    assert [(r.container, r.file, r.expected, r.actual) for r in rows if not r.ok] == [
        ("hello", "cpu.weight", "35", "10")
    ]


def test_measured_value_is_checked_against_its_band() -> None:
    from suites.toolkit.compare import compare_measured
    from suites.toolkit.tolerance import cpu_usage_band

    band = cpu_usage_band(20000, 100000, 3_000_000, shortfall=0.15)
    inside = compare_measured("burner", "burner", CTR_PATH, "cpu usage per wall time", band, 0.2, "cpu.max quota")
    outside = compare_measured("burner", "burner", CTR_PATH, "cpu usage per wall time", band, 0.5, "cpu.max quota")
    assert inside.ok and not outside.ok
    assert outside.line() == (
        f'value of measurement "cpu usage per wall time" for container "burner" of pod "burner" at {CTR_PATH} '
        'was "0.5"; '
        'expected "[0.17, 0.2067] (quota 20000/100000, window 3000000us)" (rule: cpu.max quota)'
    )


def test_events_expected_present_and_unexpected_warnings_named() -> None:
    from nodeconf.semantics.expectation import Event
    from suites.toolkit.compare import compare_events

    swap = Event("Warning", "SwapNotSupported", "the node does not support swap limits")
    started = Event("Normal", "Started", "started container app")
    assert all(r.ok for r in compare_events("p", [swap], [started, swap], "KEP-5359"))
    [missing] = compare_events("p", [swap], [started], "KEP-5359")
    assert not missing.ok and missing.line().startswith('event "SwapNotSupported" for pod "p" at (events) was (absent)')
    assert compare_events("p", [], [swap], "KEP-5359") == []
    [unexpected] = compare_events("p", [], [swap], "KEP-5359", frozenset({"SwapNotSupported"}))
    assert not unexpected.ok
    assert unexpected.expected == "(none)"
    assert unexpected.actual == "Warning SwapNotSupported: the node does not support swap limits"


def test_no_pause_rows_when_the_runtime_runs_none() -> None:
    """CRI-O without an infra container: nothing to compare for the pause; elsewhere its absence is a mismatch."""
    expected = _res_demo_expectation()
    evidence = replace(_article_evidence("35"), pause=None)
    assert [r for r in _with_pause_rows(compare_pod(expected, evidence)) if not r.ok]
    dropped = replace(evidence, pause_absent="CRI-O runs no infra (pause) container for this pod (drop_infra_ctr)")
    assert _with_pause_rows(compare_pod(expected, dropped)) == []


def _with_pause_rows(rows: list[ComparedValue]) -> list[ComparedValue]:
    return [r for r in rows if r.container == PAUSE]


def _under_crun_scope(scope_files: dict[str, str]) -> PodEvidence:
    """The article's res-demo with hello in crun's `container` sub-cgroup, its scope above it read as well."""
    from nodeconf.nodes.base import CgroupFiles

    evidence = _article_evidence("35")
    hello = evidence.container("hello")
    scope = hello.cgroup.path
    moved = replace(hello, cgroup=CgroupFiles(f"{scope}/container", {**hello.cgroup, "memory.swap.max": "0"}),
                    scope=CgroupFiles(scope, scope_files))
    return replace(evidence, containers={"hello": moved})


def test_a_scope_that_caps_no_lower_adds_passing_rows() -> None:
    """crun's scope with its memory+swap as MemorySwapMax (128Mi + 0 swap) caps nothing below hello's values."""
    rows = compare_pod(_res_demo_expectation(), _under_crun_scope({"memory.max": "134217728",
                                                                   "memory.swap.max": "134217728"}))
    capped = [r for r in rows if "in effect" in r.file]
    assert [(r.file, r.actual, r.ok) for r in capped] == [
        ("memory.max in effect (lower of container and scope)", "134217728", True),
        ("memory.swap.max in effect (lower of container and scope)", "0", True)]


def test_a_scope_with_a_lower_limit_fails_naming_the_scope() -> None:
    rows = compare_pod(_res_demo_expectation(), _under_crun_scope({"memory.max": "67108864",
                                                                   "memory.swap.max": "max"}))
    bad = [r for r in rows if not r.ok and r.actual is not None]
    assert [(r.file, r.expected, r.actual) for r in bad] == [
        ("memory.max in effect (lower of container and scope)", "134217728", "67108864")]
    assert bad[0].cgroup_path.endswith("cri-containerd-70e2.scope") and "MemorySwapMax" in bad[0].rule
    assert bad[0].line().startswith('value of measurement "memory.max in effect')
