"""`nodeconf explain` on the inputs of issue 11: one regression test per cause, each held to the contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.cli.explain_support import Outcome, contract_problems, explain

ROOT = Path(__file__).resolve().parents[3]
POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests: {requests}
      limits: {limits}
{extra}"""
KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
GATE = "featureGates: {CustomCPUCFSQuotaPeriod: true}\n"


def pod_yaml(*, name: str = "p", namespace: str = "default", requests: str = "{}", limits: str = "{}",
             extra: str = "") -> str:
    return POD.format(name=name, namespace=namespace, requests=requests, limits=limits, extra=extra)


def write(tmp_path: Path, text: str, name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def refused(outcome: Outcome, *words: str) -> None:
    assert contract_problems(outcome) == []
    assert outcome.code == 2, outcome.stdout[:300]
    for word in words:
        assert word in outcome.stderr


def accepted(outcome: Outcome) -> dict[str, object]:
    assert contract_problems(outcome) == []
    assert outcome.code == 0, outcome.stderr
    result: dict[str, object] = json.loads(outcome.stdout)
    return result


@pytest.mark.parametrize(("limits", "words"), [
    pytest.param("{memory: " + "9" * 5000 + "}", ("line 10", "integer longer than"), id="yaml-int-5000-digits"),
    pytest.param("{memory: '" + "9" * 5000 + "Gi'}", ("limits.memory", "longer than 100"), id="quantity-5000-digits"),
    pytest.param("{memory: !!int abc}", ("line 10", "not an integer"), id="tag-int"),
    pytest.param("{memory: !!float abc}", ("line 10", "not a float"), id="tag-float"),
    pytest.param("{memory: !!timestamp abc}", ("does not fit its tag",), id="tag-timestamp"),
    pytest.param("{memory: ٣Gi}", ("limits.memory", "invalid quantity"), id="arabic-indic-digit"),
    pytest.param("{memory: １Gi}", ("limits.memory", "invalid quantity"), id="fullwidth-digit"),
    pytest.param("{memory: 1e30}", ("limits.memory", "beyond int64"), id="memory-beyond-int64"),
    pytest.param("{cpu: 9300000000000000000}", ("limits.cpu", "beyond int64"), id="cpu-milli-beyond-int64"),
])
def test_bad_quantities_and_tags_are_one_line(tmp_path: Path, limits: str, words: tuple[str, ...]) -> None:
    refused(explain(write(tmp_path, pod_yaml(limits=limits))), "in.yaml", *words)


def test_binary_suffix_beyond_int64_is_capped_as_the_api_server_does(tmp_path: Path) -> None:
    """quantity.go ParseQuantity: a binary-suffix quantity above 2^63-1 is capped at 2^63-1 ("a simple cap")."""
    doc = accepted(explain(write(tmp_path, pod_yaml(requests="{memory: 1Gi}", limits="{memory: 100Ei}"))))
    container = doc["pods"][0]["containers"][0]  # type: ignore[index]
    # memory.max reads back in whole pages (the kernel stores pages): the cap rounded down to 4 KiB.
    assert container["cgroup"]["files"]["memory.max"] == str((2**63 - 1) // 4096 * 4096)


def test_cpu_limit_whose_quota_the_kernel_refuses_is_refused(tmp_path: Path) -> None:
    """9e9 cpus → quota 9e14 µs, above max_cfs_runtime (2^44-1 µs): no runtime can write that cpu.max."""
    text = pod_yaml(requests="{cpu: 1}", limits="{cpu: 9000000000}")
    refused(explain(write(tmp_path, text)), "Pod/default/p", "cpu.max", "max_cfs_runtime")


def test_nesting_990_deep_is_refused(tmp_path: Path) -> None:
    refused(explain(write(tmp_path, "a: " + "[" * 990 + "]" * 990 + "\n")), "nested deeper than 100")


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    text = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\nbomb:\n" + "".join(
        f"  {line}\n" for line in lines)
    assert len(text) < 600
    refused(explain(write(tmp_path, text)), "excessive aliasing")


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    text = pod_yaml(requests="&r {memory: 64Mi}", limits="*r")
    accepted(explain(write(tmp_path, text)))


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    refused(explain(write(tmp_path, "kind: Pod\nmetadata: &m {name: p, labels: *m}\n")), "recursive")


def test_dev_zero_is_refused_after_16_mib() -> None:
    refused(explain("/dev/zero"), "/dev/zero", "larger than 16 MiB")


def test_file_over_16_mib_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as stream:
        stream.truncate(16 * 2**20 + 1)
    refused(explain(str(path)), "larger than 16 MiB")


def test_fifo_without_writer_does_not_hang(tmp_path: Path) -> None:
    """As a subprocess with a timeout: an open() that blocks would otherwise hang the test run."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "nodeconf", "explain", str(fifo)], capture_output=True, text=True,
                          cwd=ROOT, timeout=30, check=False)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    assert "no Kubernetes objects" in done.stderr


@pytest.mark.parametrize(("period", "words"), [
    pytest.param("9" * 400 + "h", ("invalid duration",), id="huge-hours"),
    pytest.param("9999999999h", ("invalid duration",), id="beyond-int64-ns"),
    pytest.param("0s", ("must be between 1ms and 1sec, inclusive",), id="zero"),
    pytest.param("100us", ("must be between 1ms and 1sec, inclusive",), id="below-1ms"),
    pytest.param("1001ms", ("must be between 1ms and 1sec, inclusive",), id="above-1s"),
    pytest.param("-5ms", ("must be between 1ms and 1sec, inclusive",), id="negative"),
    pytest.param("٣ms", ("invalid duration",), id="non-ascii-digit"),
])
def test_cfs_period_outside_the_kubelets_range_is_refused(tmp_path: Path, period: str, words: tuple[str, ...]) -> None:
    config = write(tmp_path, KUBELET + GATE + f"cpuCFSQuotaPeriod: '{period}'\n", "kubelet.yaml")
    manifest = write(tmp_path, pod_yaml(requests="{cpu: 1}", limits="{cpu: 1}"))
    refused(explain(manifest, "--kubelet-config", config), "kubelet.yaml", "cpuCFSQuotaPeriod", *words)


@pytest.mark.parametrize(("period", "cpu_max"), [("1ms", "1000 1000"), ("1s", "1000000 1000000"),
                                                   ("0.5s", "500000 500000"), ("1h0m0.5s", None)])
def test_cfs_period_bounds_are_inclusive(tmp_path: Path, period: str, cpu_max: str | None) -> None:
    config = write(tmp_path, KUBELET + GATE + f"cpuCFSQuotaPeriod: {period}\n", "kubelet.yaml")
    outcome = explain(write(tmp_path, pod_yaml(requests="{cpu: 1}", limits="{cpu: 1}")), "--kubelet-config", config)
    if cpu_max is None:
        refused(outcome, "must be between 1ms and 1sec")
        return
    doc = accepted(outcome)
    assert doc["pods"][0]["containers"][0]["cgroup"]["files"]["cpu.max"] == cpu_max  # type: ignore[index]


@pytest.mark.parametrize(("timeout", "words"), [
    pytest.param("'2 minutes'", ("invalid duration",), id="not-a-duration"),
    pytest.param("120", ("invalid duration",), id="a-number"),
    pytest.param("'9999999999h'", ("invalid duration",), id="beyond-int64-ns"),
    pytest.param("'-1m'", ("is negative",), id="negative"),
])
def test_a_bad_runtime_request_timeout_is_one_line_and_exit_2(tmp_path: Path, timeout: str,
                                                               words: tuple[str, ...]) -> None:
    config = write(tmp_path, KUBELET + f"runtimeRequestTimeout: {timeout}\n", "kubelet.yaml")
    refused(explain(write(tmp_path, pod_yaml()), "--kubelet-config", config), "kubelet.yaml", "runtimeRequestTimeout",
            *words)


def test_custom_cfs_period_without_its_gate_is_refused(tmp_path: Path) -> None:
    config = write(tmp_path, KUBELET + "cpuCFSQuotaPeriod: 50ms\n", "kubelet.yaml")
    refused(explain(write(tmp_path, pod_yaml()), "--kubelet-config", config), "requires feature gate")


@pytest.mark.parametrize("field", ["systemReserved", "kubeReserved"])
def test_negative_reserve_is_refused_as_the_kubelet_does(tmp_path: Path, field: str) -> None:
    config = write(tmp_path, KUBELET + f"{field}: {{memory: -1Gi}}\n", "kubelet.yaml")
    refused(explain(write(tmp_path, pod_yaml()), "--kubelet-config", config),
            f"{field}.memory", "cannot be negative")


def test_negative_overhead_is_not_admitted(tmp_path: Path) -> None:
    text = pod_yaml(extra="  overhead: {memory: -1Gi}\n")
    doc = accepted(explain(write(tmp_path, text)))
    pod = doc["pods"][0]  # type: ignore[index]
    assert pod["admitted"] is False
    assert any("spec.overhead[memory]" in e and "greater than or equal to 0" in e for e in pod["errors"])


def test_the_same_pod_twice_is_refused(tmp_path: Path) -> None:
    first = write(tmp_path, pod_yaml(), "a.yaml")
    refused(explain(first, write(tmp_path, pod_yaml(), "b.yaml")), "b.yaml", "Pod/default/p", "already given")
    refused(explain(first, first), "already given")


def test_same_name_in_another_namespace_is_fine(tmp_path: Path) -> None:
    doc = accepted(explain(write(tmp_path, pod_yaml() + "---\n" + pod_yaml(namespace="other"))))
    assert len(doc["pods"]) == 2  # type: ignore[arg-type]


@pytest.mark.parametrize(("extra", "words"), [
    pytest.param("  priority: 4294967296\n", ("spec.priority", "32-bit"), id="priority-beyond-int32"),
])
def test_fields_beyond_their_types_are_refused(tmp_path: Path, extra: str, words: tuple[str, ...]) -> None:
    refused(explain(write(tmp_path, pod_yaml(extra=extra))), *words)


def test_non_string_annotation_is_refused(tmp_path: Path) -> None:
    text = pod_yaml().replace("namespace: default}", "namespace: default, annotations: {a: [1, 2]}}")
    refused(explain(write(tmp_path, text)), "metadata.annotations.a", "expected a string")


@pytest.mark.parametrize(("flag", "value", "words"), [
    ("--memory", "9" * 5000, ("--memory", "longer than 100")),
    ("--memory", "1e30", ("--memory", "beyond int64")),
    ("--cpu", "1e17", ("--cpu", "beyond int64")),
    ("--swap=-1Gi", None, ("--swap", "negative")),
    ("--page-size", "9" * 5000, ("--page-size", "whole number")),
    ("--page-size", str(2**30), ("--page-size", "power of two up to")),
    ("--page-size", "٤٠٩٦", ("--page-size", "whole number")),
    ("--memory", "１Gi", ("--memory", "invalid quantity")),
])
def test_bad_flags_are_one_line(tmp_path: Path, flag: str, value: str | None, words: tuple[str, ...]) -> None:
    refused(explain(write(tmp_path, pod_yaml()), flag, *([value] if value is not None else [])), *words)


def test_long_values_in_errors_are_cut(tmp_path: Path) -> None:
    outcome = explain(write(tmp_path, pod_yaml(limits="{memory: '" + "x" * 100_000 + "'}")))
    refused(outcome, "limits.memory")
    assert len(outcome.stderr) < 300
