"""Fields nodeconf does not read are named, with the one meant (issue 32): warned by default, refused with
--strict; the field tables match the Kubernetes API's generated models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from nodeconf.cli.main import main
from nodeconf.kubelet_config import FIELDS
from nodeconf.loader import UnknownFields, _documents, load_kubelet_config, load_objects
from nodeconf.unknown_fields import (
    CONFIG_FIELDS,
    MANIFEST_FIELDS,
    UNMODELLED_CONFIG,
    Fields,
    unknown_config_fields,
    unknown_manifest_fields,
)

ROOT = Path(__file__).resolve().parents[3]
TYPO_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  containers:
  - name: app
    resource:
      limits: {cpu: "1", memory: 1Gi}
"""
TYPO_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
memorySwap:
  swapBehaviour: LimitedSwap
"""


def _explain(tmp_path: Path, capfd: pytest.CaptureFixture[str], *extra: str,
             pod: str = TYPO_POD, config: str | None = None) -> tuple[int, str, str]:
    (tmp_path / "pod.yaml").write_text(pod)
    argv = ["explain", str(tmp_path / "pod.yaml"), *extra]
    if config is not None:
        (tmp_path / "kc.yaml").write_text(config)
        argv += ["--kubelet-config", str(tmp_path / "kc.yaml")]
    code = main(argv)
    out, err = capfd.readouterr()
    return code, out, err


def test_a_misspelled_pod_field_is_named_with_the_one_meant(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = _explain(tmp_path, capfd)
    assert code == 0 and out
    assert ('warning: ' in err and 'Pod/typo: unknown field "spec.containers[0].resource" (did you mean '
            '"resources"?)' in err)


def test_a_misspelled_kubelet_config_field_is_named(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    pod = TYPO_POD.replace("resource:", "resources:")
    code, _, err = _explain(tmp_path, capfd, pod=pod, config=TYPO_CONFIG)
    assert code == 0
    assert err.splitlines() == [f'nodeconf: warning: {tmp_path / "kc.yaml"}: KubeletConfiguration: unknown field '
                                '"memorySwap.swapBehaviour" (did you mean "swapBehavior"?)']


@pytest.mark.parametrize("config", [None, TYPO_CONFIG], ids=["pod", "kubelet-config"])
def test_strict_refuses_in_one_line_and_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                       config: str | None) -> None:
    pod = TYPO_POD if config is None else TYPO_POD.replace("resource:", "resources:")
    code, out, err = _explain(tmp_path, capfd, "--strict", pod=pod, config=config)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "unknown field" in err and "did you mean" in err


def test_a_field_written_one_level_too_high_points_to_its_place() -> None:
    doc = {"kind": "KubeletConfiguration", "swapBehavior": "LimitedSwap"}
    (problem,) = unknown_config_fields(doc)
    assert problem.problem == 'unknown field "swapBehavior" (did you mean "memorySwap.swapBehavior"?)'


def test_a_field_like_no_other_gets_no_guess() -> None:
    doc = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "zzqx": 1}]}}
    (problem,) = unknown_manifest_fields(doc)
    assert problem.problem == 'unknown field "spec.containers[0].zzqx"'


def test_workload_templates_are_checked_down_to_their_containers() -> None:
    doc = {"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": {
        "spec": {"containers": [{"name": "a", "resources": {"limit": {"cpu": "1"}}}]}}}}}}
    (problem,) = unknown_manifest_fields(doc)
    assert problem.field == "" and problem.obj == "CronJob/c"
    where = "spec.jobTemplate.spec.template.spec.containers[0].resources.limit"
    assert f'"{where}" (did you mean "limits"?)' in str(problem)


@pytest.mark.parametrize(("field", "value", "named"), [
    ("cpuManagerPolicy", "static", False),  # modelled: semantics/cpu_manager.py
    ("cpuManagerPolicy", "none", False),
    ("memoryManagerPolicy", "Static", True),
    ("cgroupsPerQOS", False, True),
    ("cgroupsPerQOS", True, False),
    ("cgroupRoot", "/custom", True),
    ("qosReserved", {"memory": "50%"}, True),
])
def test_a_known_field_that_changes_the_node_but_is_not_modelled_is_named(field: str, value: Any,
                                                                         named: bool) -> None:
    problems = unknown_config_fields({"kind": "KubeletConfiguration", field: value})
    assert [p.field for p in problems] == ([field] if named else [])


def test_run_strict_refuses_a_misspelled_kubelet_config_before_pytest(tmp_path: Path,
                                                                       capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kc.yaml").write_text(TYPO_CONFIG)
    code = main(["run", "--strict", "--node", "local", "--kubelet-config", str(tmp_path / "kc.yaml"),
                 "--reports", str(tmp_path / "reports")])
    assert code == 2
    assert "unknown field \"memorySwap.swapBehaviour\"" in capfd.readouterr().err
    assert not (tmp_path / "reports").exists()


# The Kubernetes Python client's generated models (from the API's OpenAPI document) for each type the tables name.
MODELS: list[tuple[str, tuple[str, ...], type]] = [
    ("Pod", (), client.V1Pod),
    ("Pod", ("metadata",), client.V1ObjectMeta),
    ("Pod", ("spec",), client.V1PodSpec),
    ("Pod", ("spec", "containers"), client.V1Container),
    ("Pod", ("spec", "initContainers"), client.V1Container),
    ("Pod", ("spec", "resources"), client.V1ResourceRequirements),
    ("Pod", ("spec", "containers", "resizePolicy"), client.V1ContainerResizePolicy),
    ("LimitRange", (), client.V1LimitRange),
    ("LimitRange", ("spec",), client.V1LimitRangeSpec),
    ("LimitRange", ("spec", "limits"), client.V1LimitRangeItem),
    ("ResourceQuota", (), client.V1ResourceQuota),
    ("ResourceQuota", ("spec",), client.V1ResourceQuotaSpec),
    ("Deployment", ("spec",), client.V1DeploymentSpec),
    ("Deployment", ("spec", "template"), client.V1PodTemplateSpec),
    ("StatefulSet", ("spec",), client.V1StatefulSetSpec),
    ("DaemonSet", ("spec",), client.V1DaemonSetSpec),
    ("ReplicaSet", ("spec",), client.V1ReplicaSetSpec),
    ("ReplicationController", ("spec",), client.V1ReplicationControllerSpec),
    ("Job", ("spec",), client.V1JobSpec),
    ("CronJob", ("spec",), client.V1CronJobSpec),
    ("CronJob", ("spec", "jobTemplate"), client.V1JobTemplateSpec),
]


@pytest.mark.parametrize(("kind", "path", "model"), MODELS, ids=[f"{k}.{'.'.join(p)}" for k, p, _ in MODELS])
def test_manifest_fields_are_the_api_types_fields(kind: str, path: tuple[str, ...], model: type) -> None:
    known: Fields = MANIFEST_FIELDS[kind]
    for name in path:
        known = known.nested[name]
    assert known.names == set(model.attribute_map.values())  # type: ignore[attr-defined]


def test_every_modelled_kubelet_config_field_is_a_known_one() -> None:
    for config_field in FIELDS:
        known = CONFIG_FIELDS
        *parents, leaf = config_field.path.split(".")
        for name in parents:
            known = known.nested[name]
        assert leaf in known.names, config_field.path
    modelled = {f.path.split(".")[0] for f in FIELDS}
    assert set(UNMODELLED_CONFIG) <= CONFIG_FIELDS.names - modelled


def test_bundled_workloads_have_only_known_fields() -> None:
    """The suites' own inputs read clean under --strict (a typo there would silently weaken a check)."""
    for path in sorted((ROOT / "workloads").rglob("*.yaml")):
        docs = _documents(path.read_text(), str(path))
        if any(isinstance(d, dict) and d.get("kind") == "KubeletConfiguration" for d in docs):
            load_kubelet_config(path, UnknownFields(strict=True))
        elif all(isinstance(d, dict) and "kind" in d for d in docs):
            load_objects([path], UnknownFields(strict=True))


def test_the_loader_keeps_each_problem_for_the_caller(tmp_path: Path) -> None:
    (tmp_path / "pods.yaml").write_text(TYPO_POD + "---\n" + yaml.safe_dump(
        {"kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"name": "a", "imag": "x"}]}}))
    unknown = UnknownFields()
    objects = load_objects([tmp_path / "pods.yaml"], unknown)
    assert len(objects) == 2
    assert [(p.obj, p.problem) for p in unknown.found] == [
        ("Pod/typo", 'unknown field "spec.containers[0].resource" (did you mean "resources"?)'),
        ("Pod/b", 'unknown field "spec.containers[0].imag" (did you mean "image"?)'),
    ]


def test_a_bad_input_after_a_warning_stays_the_only_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Warnings wait until every input has loaded: exit 2 prints the error alone."""
    (tmp_path / "bad.yaml").write_text("kind: Pod\nmetadata: {name: b}\nspec: {containers: []}\n")
    code, out, err = _explain(tmp_path, capfd, str(tmp_path / "bad.yaml"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "a pod needs at least one container" in err


def test_a_long_unknown_key_is_cut_to_one_short_line() -> None:
    doc = {"kind": "Pod", "metadata": {"name": "p"}, "x" * 500 + "\nmore": 1}
    (problem,) = unknown_manifest_fields(doc)
    assert len(str(problem)) < 120 and "\n" not in str(problem)


@pytest.mark.parametrize(("doc", "field"), [
    ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"runtimeClassName": "kata", "containers": []}},
     "spec.runtimeClassName"),
    ({"kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"template": {"spec": {"runtimeClassName": "kata", "containers": []}}}},
     "spec.template.spec.runtimeClassName"),
])
def test_a_runtime_class_without_its_overhead_is_named(doc: dict[str, Any], field: str) -> None:
    (problem,) = unknown_manifest_fields(doc)
    assert problem.field == field and "spec.overhead" in problem.problem


def test_a_runtime_class_with_its_overhead_given_is_not_named() -> None:
    spec = {"runtimeClassName": "kata", "overhead": {"memory": "120Mi"}, "containers": []}
    assert unknown_manifest_fields({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec}) == []
