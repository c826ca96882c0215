"""`nodeconf explain` as a subprocess: the DESIGN.md JSON contract, the table, and every kind of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
WORKLOADS = ROOT / "workloads" / "requests-limits"


def explain(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nodeconf", "explain", *map(str, args)],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )


@pytest.fixture(scope="module")
def article() -> dict[str, Any]:
    done = explain(WORKLOADS / "res-demo.yaml", WORKLOADS / "eater.yaml", "--memory", "3479660Ki",
                   "--kubernetes-version", "1.36")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_json_contract_fields(article: dict[str, Any]) -> None:
    assert set(article) >= {"node", "cgroups", "pods", "metrics"}
    assert set(article["node"]) >= {"memoryCapacity", "swapCapacity", "cpuCapacityMilli", "allocatableMemory",
                                    "swapBehavior", "kubernetesVersion", "cpuWeightFormula", "pageSize"}
    assert article["node"]["featureGates"]["PodLevelResources"] is True
    assert article["node"]["featureGates"]["MemoryQoS"] is False  # 1.36: "still alpha and disabled by default"
    pod = article["pods"][0]
    assert set(pod) >= {"name", "namespace", "qosClass", "admitted", "errors", "warnings", "events", "cgroup",
                        "containers"}
    assert set(pod["cgroup"]) >= {"path", "files", "rules"}
    assert set(pod["containers"][0]) >= {"name", "cgroup", "oomScoreAdj"}
    assert set(article["metrics"]) == {"kubelet_node_swap_allocated_bytes",
                                       "kubelet_memory_qos_node_memory_min_bytes",
                                       "kubelet_memory_qos_node_memory_low_bytes"}
    every_file = [v for cg in article["cgroups"].values() for v in cg.values()]
    every_file += [v for p in article["pods"] for v in p["cgroup"]["files"].values()]
    every_file += [v for p in article["pods"] for c in p["containers"] for v in c["cgroup"]["files"].values()]
    assert all(isinstance(v, str) for v in every_file)


def test_json_values_of_the_article(article: dict[str, Any]) -> None:
    node = article["node"]
    assert (node["memoryCapacity"], node["allocatableMemory"]) == (3479660 * 1024, 3377260 * 1024)
    assert article["cgroups"]["kubepods.slice"]["cpu.weight"] == "79"
    res_demo, eater = article["pods"]
    assert (res_demo["name"], res_demo["namespace"], res_demo["qosClass"], res_demo["admitted"]) == \
        ("res-demo", "default", "Burstable", True)
    assert res_demo["cgroup"]["path"].startswith("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod")
    assert {k: res_demo["cgroup"]["files"][k] for k in ("cpu.weight", "cpu.max", "memory.max", "memory.oom.group")} \
        == {"cpu.weight": "10", "cpu.max": "50000 100000", "memory.max": "134217728", "memory.oom.group": "0"}
    hello = res_demo["containers"][0]
    assert hello["cgroup"]["files"] == {
        "cpu.weight": "35", "cpu.max": "50000 100000", "memory.max": "134217728", "memory.oom.group": "1",
        "memory.swap.max": "0", "memory.min": "0", "memory.low": "0", "memory.high": "max",
    }
    assert hello["cgroup"]["rules"]["cpu.weight"]
    assert (hello["oomScoreAdj"], eater["containers"][0]["oomScoreAdj"]) == (963, 982)
    assert res_demo["pause"]["oomScoreAdj"] == -998


def test_linear_formula_flag() -> None:
    done = explain(WORKLOADS / "res-demo.yaml", "--cpu-weight-formula", "linear")
    assert done.returncode == 0
    assert json.loads(done.stdout)["pods"][0]["containers"][0]["cgroup"]["files"]["cpu.weight"] == "10"


def test_yaml_is_the_json_document(article: dict[str, Any]) -> None:
    done = explain(WORKLOADS / "res-demo.yaml", WORKLOADS / "eater.yaml", "--memory", "3479660Ki",
                   "--kubernetes-version", "1.36", "-o", "yaml")
    assert (done.returncode, done.stderr) == (0, "")
    assert yaml.safe_load(done.stdout) == article
    assert done.stdout.startswith("node:\n  memoryCapacity: ")  # the JSON's key order, not sorted


def test_table_output() -> None:
    done = explain(WORKLOADS / "res-demo.yaml", WORKLOADS / "quota-test-pods.yaml", WORKLOADS / "limitrange.yaml",
                   "--memory", "3479660Ki", "-o", "table")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("node: memory 3563171840 (allocatable 3458314240)")
    assert "pod default/res-demo  Burstable  admitted" in lines
    assert "pod quota-test/huge  Burstable  REJECTED" in lines
    assert any(line.startswith("  container hello: oom_score_adj 963") for line in lines)
    assert any(line.split()[:2] == ["cpu.weight", "35"] for line in lines)
    assert "  error: pods \"huge\" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi" in lines


def test_rejected_pod_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                    "    resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}\n")
    done = explain(path)
    assert done.returncode == 0
    (pod,) = json.loads(done.stdout)["pods"]
    assert pod["admitted"] is False and pod["cgroup"] is None and pod["containers"] == []
    assert "must be less than or equal to cpu limit of 1" in pod["errors"][0]


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        pytest.param(None, (), "in.yaml: no such file", id="missing-file"),
        pytest.param("kind: Pod\nmetadata: {name: [\n", (), "in.yaml: invalid YAML: line", id="yaml-syntax"),
        pytest.param("- 1\n- 2\n", (), "in.yaml: not a Kubernetes object", id="not-an-object"),
        pytest.param("kind: Service\nmetadata: {name: s}\n", (), "in.yaml: unknown kind 'Service'", id="unknown-kind"),
        pytest.param("kind: KubeletConfiguration\n", (), "in.yaml: a KubeletConfiguration is not a manifest: give it "
                     "with --kubelet-config", id="kubelet-config-as-manifest"),
        pytest.param("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: "
                     "{memory: 12XB}}}]}\n", (), "in.yaml: Pod/p: spec.containers[0].resources.limits.memory: invalid "
                     "quantity '12XB'", id="malformed-quantity"),
        pytest.param("", ("--kubelet-config", "KUBELET"), "kubelet.yaml: KubeletConfiguration: "
                     "memorySwap.swapBehavior: unknown value 'Sometimes'", id="unknown-enum-in-kubelet-config"),
        pytest.param("", ("--memory", "lots"), "--memory: invalid quantity 'lots'", id="bad-memory-flag"),
        pytest.param("", ("--cpu", "0"), "--cpu: must be positive", id="no-cpu"),
        pytest.param("", ("--page-size", "1000"), "--page-size: must be a power of two", id="bad-page-size"),
        pytest.param("", ("--kubernetes-version", "1.20"), "unknown Kubernetes version '1.20'", id="bad-version"),
        pytest.param("", ("-o", "xml"), "--output: unknown value 'xml'", id="bad-output"),
        pytest.param("", ("--cpu-weight-formula", "cubic"), "unknown value 'cubic'", id="bad-formula"),
        pytest.param("", ("--bogus",), "unrecognized arguments: --bogus", id="unknown-flag"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, content: str | None, args: tuple[str, ...],
                                      message: str) -> None:
    """content None: no file at all; "": the res-demo manifest (the fault is in the options)."""
    manifest = tmp_path / "in.yaml"
    if content is not None:
        manifest.write_text(content or (WORKLOADS / "res-demo.yaml").read_text())
    kubelet = tmp_path / "kubelet.yaml"
    kubelet.write_text("kind: KubeletConfiguration\nmemorySwap: {swapBehavior: Sometimes}\n")
    done = explain(manifest, *(str(kubelet) if a == "KUBELET" else a for a in args))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_sub_byte_memory_is_warned_on_stderr(tmp_path: Path) -> None:
    manifest = tmp_path / "typo.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: typo}\nspec:\n  containers:\n"
                        "  - {name: c, image: x, resources: {limits: {memory: 400m}}}\n")
    done = explain(manifest)
    assert done.returncode == 0
    assert 'nodeconf: warning: Pod default/typo: spec.containers[0].resources.limits[memory]: fractional byte value ' \
           '"400m" is invalid, must be an integer' in done.stderr.splitlines()
    assert json.loads(done.stdout)["pods"][0]["warnings"]
