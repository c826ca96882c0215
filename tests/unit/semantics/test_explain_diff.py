"""`nodeconf explain PODS [node options] --diff [node options]` (issue 33): only what differs, both rules, exit 1
when something differs, 0 when nothing does, 2 on bad input; workloads counted by their replicas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeconf.semantics.diff import Change, summary_line
from tests.unit.cli.explain_support import Outcome, explain

ROOT = Path(__file__).resolve().parents[3]
SWAP_CONFIGS = ROOT / "workloads" / "kep-5359" / "kubelet-config"
MEMORY_QOS = ROOT / "workloads" / "memory-qos"
REQUESTS_LIMITS = ROOT / "workloads" / "requests-limits"
QOS_PODS = [str(MEMORY_QOS / f"{name}.yaml") for name in ("burstable-512mi", "besteffort", "guaranteed-512mi")]
LIMITED_136 = ["--kubelet-config", str(SWAP_CONFIGS / "limited-swap.yaml"), "--kubernetes-version", "1.36"]
WORKLOAD_CONTROLLED_138 = ["--kubelet-config", str(SWAP_CONFIGS / "workload-controlled-swap.yaml"),
                           "--kubernetes-version", "1.38"]


def changes(outcome: Outcome) -> list[dict[str, str]]:
    assert outcome.code == 1, outcome.stderr
    found: list[dict[str, str]] = json.loads(outcome.stdout)["changes"]
    return found


def test_limited_swap_to_workload_controlled_swap_takes_the_burstable_share_away() -> None:
    found = changes(explain(*QOS_PODS, *LIMITED_136, "--diff", *WORKLOAD_CONTROLLED_138))
    pod_changes = [c for c in found if c["pod"]]
    # burstable-512mi asks 512Mi of an 8Gi node with 4Gi swap: LimitedSwap gives 512Mi/8Gi × 4Gi = 256Mi
    # (KEP-2400 proportional share); WorkloadControlledSwap without limits.swap gives 0 (KEP-5359 table).
    assert [(c["pod"], c["owner"], c["field"], c["before"], c["after"]) for c in pod_changes] == [
        ("default/burstable-512mi", "container app", "memory.swap.max", str(256 * 2**20), "0")]
    (swap,) = pod_changes
    assert "LimitedSwap" in swap["rule_before"] and "KEP-5359" in swap["rule_after"]
    assert all(c["before"] != c["after"] for c in found)
    node = {c["field"]: (c["before"], c["after"]) for c in found if c["owner"] == "node"}
    assert node["swapBehavior"] == ("LimitedSwap", "WorkloadControlledSwap")
    assert node["kubernetesVersion"] == ("1.36", "1.38")


def test_yaml_is_the_json_document() -> None:
    as_json = explain(*QOS_PODS, *LIMITED_136, "--diff", *WORKLOAD_CONTROLLED_138)
    as_yaml = explain(*QOS_PODS, *LIMITED_136, "--diff", *WORKLOAD_CONTROLLED_138, "-o", "yaml")
    assert (as_yaml.code, as_yaml.stderr) == (1, "")
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)


def test_the_table_prints_only_what_changes() -> None:
    outcome = explain(*QOS_PODS, *LIMITED_136, "--diff", *WORKLOAD_CONTROLLED_138, "-o", "table")
    assert outcome.code == 1, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert lines[0] == "3 pods: 1 changes swap, 2 unchanged; node level: 5 values"
    assert f"  container app memory.swap.max: {256 * 2**20} → 0" in lines
    assert "pod default/burstable-512mi" in lines
    assert not any("guaranteed-512mi" in line or "besteffort" in line for line in lines)
    assert not any("cpu.weight:" in line or "memory.max:" in line for line in lines)


@pytest.mark.parametrize("second", [
    pytest.param([], id="no-option"),
    pytest.param(["--memory", "8Gi", "--kubernetes-version", "1.38"], id="the-defaults-again"),
])
def test_the_same_node_on_both_sides_is_no_difference(second: list[str]) -> None:
    for output, expected in (("json", '"summary": "no difference"'), ("table", "no difference\n")):
        outcome = explain(*QOS_PODS, "-o", output, "--diff", *second)
        assert (outcome.code, outcome.stderr) == (0, "")
        assert expected in outcome.stdout
    assert json.loads(explain(*QOS_PODS, "--diff", *second).stdout)["changes"] == []


def test_memory_qos_none_to_tiered_reservation_protects_requests() -> None:
    found = changes(explain(*QOS_PODS, "--kubernetes-version", "1.36", "--kubelet-config",
                            str(MEMORY_QOS / "kubelet-throttling-only.yaml"), "--diff", "--kubelet-config",
                            str(MEMORY_QOS / "kubelet-tiered-reservation.yaml")))
    by_place = {(c["pod"], c["owner"], c["field"]): (c["before"], c["after"]) for c in found}
    half = str(512 * 2**20)
    # The post's table: TieredReservation gives Guaranteed memory.min = request, Burstable memory.low = request;
    # BestEffort nothing; memory.high (throttling) is the same under both policies. The hierarchy: kubepods
    # memory.min = Guaranteed + Burstable requests, the burstable slice's memory.low = Burstable requests.
    assert by_place == {
        ("", "kubepods.slice", "memory.min"): ("0", str(2**30)),
        ("", "kubepods.slice/kubepods-burstable.slice", "memory.low"): ("0", half),
        ("", "metrics", "kubelet_memory_qos_node_memory_min_bytes"): ("0", half),
        ("", "metrics", "kubelet_memory_qos_node_memory_low_bytes"): ("0", half),
        ("default/burstable-512mi", "pod", "memory.low"): ("0", half),
        ("default/burstable-512mi", "container app", "memory.low"): ("0", half),
        ("default/guaranteed-512mi", "pod", "memory.min"): ("0", half),
        ("default/guaranteed-512mi", "container app", "memory.min"): ("0", half),
    }


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def pod_yaml(name: str, resources: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n"
            f"    image: busybox\n    resources: {resources}\n")


def test_a_pod_that_no_longer_fits_shows_its_admission_only(tmp_path: Path) -> None:
    big = write(tmp_path, "big.yaml", pod_yaml("big", "{requests: {memory: 2Gi}}"))
    small = write(tmp_path, "small.yaml", pod_yaml("small", "{requests: {memory: 64Mi}, limits: {memory: 64Mi}}"))
    outcome = explain(big, small, "--diff", "--memory", "1Gi")
    found = changes(outcome)
    big_changes = [c for c in found if c["pod"] == "default/big"]
    assert [(c["field"], c["before"], c["after"]) for c in big_changes] == [("admission", "admitted", "rejected")]
    assert "OutOfmemory" in big_changes[0]["rule_after"]
    assert json.loads(outcome.stdout)["summary"].startswith("2 pods: ") and "1 is no longer admitted" in \
        json.loads(outcome.stdout)["summary"]


def test_eviction_order_follows_what_each_pod_may_use(tmp_path: Path) -> None:
    # rankMemoryPressure: usage above request first (both), then priority (equal), then usage − request, larger
    # first. "free" has no limit: it may use allocatable memory (8Gi − 100Mi, then 1Gi − 100Mi); "capped" 2Gi.
    free = write(tmp_path, "free.yaml", pod_yaml("free", "{}"))
    capped = write(tmp_path, "capped.yaml", pod_yaml("capped", "{requests: {memory: 100Mi}, limits: {memory: 2Gi}}"))
    found = changes(explain(free, capped, "--diff", "--memory", "1Gi"))
    ranks = {c["pod"]: (c["before"], c["after"]) for c in found if c["field"] == "eviction rank"}
    assert ranks == {"default/free": ("1", "2"), "default/capped": ("2", "1")}


@pytest.mark.parametrize(("second", "words"), [
    pytest.param(["--memory", "lots"], "--memory: invalid quantity 'lots'", id="bad-memory"),
    pytest.param(["more.yaml"], "only node options and -o may follow --diff", id="a-manifest-after-diff"),
    pytest.param(["--kubernetes-version", "2.0"], "2.0", id="unknown-version"),
    pytest.param(["-o", "xml"], "--output: unknown value 'xml'", id="bad-output"),
])
def test_bad_input_is_one_line_and_exit_2(second: list[str], words: str) -> None:
    outcome = explain(*QOS_PODS, "--diff", *second)
    assert outcome.code == 2 and outcome.stdout == ""
    assert len(outcome.stderr.strip().splitlines()) == 1 and words in outcome.stderr, outcome.stderr


def test_replicas_of_a_deployment_are_counted_against_the_quota() -> None:
    # The article's walk-through: 40 replicas asking the LimitRange's default 100m cpu against a quota of
    # requests.cpu 2 and pods 20: 20 are admitted, the 21st is refused naming both.
    objects = [str(REQUESTS_LIMITS / name) for name in ("big-deployment.yaml", "quota.yaml", "limitrange.yaml")]
    outcome = explain(*objects)
    assert outcome.code == 0, outcome.stderr
    pods = json.loads(outcome.stdout)["pods"]
    assert [p["name"] for p in pods] == [f"big-{i}" for i in range(40)]
    assert [p["admitted"] for p in pods] == [True] * 20 + [False] * 20
    assert "used: pods=20,requests.cpu=2" in pods[20]["errors"][0]


def test_the_table_lists_identical_replicas_once(tmp_path: Path) -> None:
    deployment = write(tmp_path, "web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
                       "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: c\n"
                       "        resources: {requests: {memory: 512Mi}, limits: {memory: 1Gi}}\n")
    outcome = explain(deployment, *LIMITED_136, "-o", "table", "--diff", *WORKLOAD_CONTROLLED_138)
    assert outcome.code == 1, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert lines[0].startswith("3 pods: 3 change swap;")
    assert "counted: Deployment default/web: 3 pods (spec.replicas)" in lines
    assert "pods default/web-0 … default/web-2 (3 of Deployment/web)" in lines
    assert sum("memory.swap.max" in line for line in lines) == 1


CHANGE = Change("default/a", "container c", "memory.swap.max", "1", "0", "r1", "r2")


@pytest.mark.parametrize(("pods", "found", "line"), [
    pytest.param(3, [], "no difference", id="nothing"),
    pytest.param(3, [CHANGE, Change("default/b", "container c", "memory.swap.max", "1", "0", "r1", "r2"),
                     Change("default/c", "pod", "admission", "admitted", "rejected", "fits", "Insufficient memory")],
                 "3 pods: 2 change swap, 1 is no longer admitted", id="issue-example"),
    pytest.param(2, [CHANGE, Change("", "metrics", "kubelet_node_swap_allocated_bytes", "0", "1", "m", "m")],
                 "2 pods: 1 changes swap, 1 unchanged; node level: 1 value", id="node-level"),
])
def test_summary_line(pods: int, found: list[Change], line: str) -> None:
    assert summary_line(pods, found) == line


def test_json_change_shape() -> None:
    outcome = explain(*QOS_PODS, *LIMITED_136, "--diff", *WORKLOAD_CONTROLLED_138)
    document: dict[str, Any] = json.loads(outcome.stdout)
    assert set(document) == {"summary", "workloads", "changes"}
    assert set(document["changes"][0]) == {"pod", "owner", "field", "before", "after", "rule_before", "rule_after",
                                           "workload"}


def test_newly_admitted_replicas_show_their_admission_not_their_cgroups() -> None:
    # The LimitRange's defaultRequest gives each of the 40 replicas 100m cpu: 20 fit 2 cpus, all 40 fit 4.
    objects = [str(REQUESTS_LIMITS / name) for name in ("big-deployment.yaml", "limitrange.yaml")]
    outcome = explain(*objects, "--diff", "--cpu", "4")
    found = changes(outcome)
    assert json.loads(outcome.stdout)["summary"] == "40 pods: 20 are newly admitted, 20 unchanged; node level: 4 values"
    assert {c["owner"] for c in found if not c["pod"]} == {"node", "kubepods.slice",
                                                         "kubepods.slice/kubepods-burstable.slice"}
    assert {(c["pod"], c["field"]) for c in found if c["pod"]} == {
        (f"quota-test/big-{i}", "admission") for i in range(20, 40)}


def test_a_pod_limit_is_listed_with_its_pod(tmp_path: Path) -> None:
    pids = write(tmp_path, "pids.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                 "podPidsLimit: 32\n")
    found = changes(explain(QOS_PODS[0], "--diff", "--kubelet-config", pids))
    # podPidsLimit is the pod cgroup's pids.max (kubelet pod_container_manager); unset, the pod has none ("max").
    assert [(c["pod"], c["owner"], c["field"], c["before"], c["after"]) for c in found if c["pod"]] == [
        ("default/burstable-512mi", "pod", "pids.max", "max", "32")]


def test_more_replicas_than_a_node_could_run_is_one_line(tmp_path: Path) -> None:
    deployment = write(tmp_path, "huge.yaml", "kind: Deployment\nmetadata: {name: huge}\nspec:\n"
                       "  replicas: 2147483647\n  template:\n    spec:\n      containers: [{name: c}]\n")
    outcome = explain(deployment)
    assert outcome.code == 2 and len(outcome.stderr.strip().splitlines()) == 1
    assert "2147483647 pods once workloads count their replicas" in outcome.stderr
    assert outcome.seconds < 5
