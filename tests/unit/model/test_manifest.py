"""Typed views of Pods, workload templates, LimitRanges and ResourceQuotas (core/v1 field names)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodeconf.errors import InputError
from nodeconf.manifest import LimitRange, Pod, ResourceQuota, replica_pods
from nodeconf.manifest_reader import object_from_dict
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.quantity import Quantity


def pod_doc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def test_pod_fields() -> None:
    doc = pod_doc(
        initContainers=[
            {"name": "log", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"memory": "32Mi"}}},
            {"name": "setup", "image": "x"},
        ],
        resources={"limits": {"cpu": "1", "memory": "1Gi"}},
        priorityClassName="system-node-critical",
        overhead={"cpu": "10m"},
    )
    doc["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    pod = object_from_dict(doc, "f.yaml")
    assert isinstance(pod, Pod)
    assert (pod.name, pod.namespace, pod.source) == ("p", "ns", "f.yaml")
    assert [c.name for c in pod.sidecars] == ["log"]
    assert [c.name for c in pod.all_containers] == ["log", "setup", "c"]
    assert pod.resources is not None and pod.resources.limit("memory") == Quantity.parse("1Gi")
    assert pod.priority == 2_000_001_000
    assert pod.overhead["cpu"] == Quantity.parse("10m")
    assert pod.containers[0].resize_restart_policy("memory") == "RestartContainer"
    assert pod.containers[0].resize_restart_policy("cpu") == "NotRequired"


def test_uid_is_deterministic_from_namespace_and_name() -> None:
    first, second = object_from_dict(pod_doc()), object_from_dict(pod_doc())
    assert isinstance(first, Pod) and isinstance(second, Pod)
    assert first.uid == second.uid
    other = object_from_dict({**pod_doc(), "metadata": {"name": "q", "namespace": "ns"}})
    assert isinstance(other, Pod) and other.uid != first.uid
    given = object_from_dict({**pod_doc(), "metadata": {"name": "p", "uid": "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"}})
    assert isinstance(given, Pod) and given.uid == "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"


def test_static_and_mirror_annotations() -> None:
    doc = pod_doc()
    doc["metadata"]["annotations"] = {"kubernetes.io/config.source": "file", "kubernetes.io/config.mirror": "x"}
    pod = object_from_dict(doc)
    assert isinstance(pod, Pod) and pod.is_static and pod.is_mirror


@pytest.mark.parametrize(
    ("kind", "template_path"),
    [
        ("Deployment", ["spec", "template"]),
        ("StatefulSet", ["spec", "template"]),
        ("DaemonSet", ["spec", "template"]),
        ("Job", ["spec", "template"]),
        ("CronJob", ["spec", "jobTemplate", "spec", "template"]),
    ],
)
def test_workload_templates(kind: str, template_path: list[str]) -> None:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "w", "image": "x"}]}}
    doc: dict[str, Any] = {"kind": kind, "metadata": {"name": "wl"}}
    node = doc
    for key in template_path[:-1]:
        node = node.setdefault(key, {})
    node[template_path[-1]] = template
    pod = object_from_dict(doc)
    assert isinstance(pod, Pod) and pod.name == "wl" and pod.containers[0].name == "w"


def test_limit_range_and_quota() -> None:
    lr = object_from_dict({
        "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "quota-test"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}, "max": {"memory": "2Gi"}}]},
    })
    assert isinstance(lr, LimitRange)
    assert lr.limits[0].default_request["cpu"] == Quantity.parse("100m")
    assert lr.limits[0].max["memory"] == Quantity.parse("2Gi")
    quota = object_from_dict({
        "kind": "ResourceQuota", "metadata": {"name": "budget"},
        "spec": {"hard": {"pods": "20"}, "scopes": ["BestEffort"]},
    })
    assert isinstance(quota, ResourceQuota)
    assert quota.hard["pods"].value() == 20 and quota.scopes == ("BestEffort",)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(["a"], "not a Kubernetes object", id="not-a-mapping"),
        pytest.param({"apiVersion": "v1"}, "no kind", id="no-kind"),
        pytest.param({"kind": "Service", "metadata": {"name": "s"}}, "unknown kind 'Service'", id="unknown-kind"),
        pytest.param({"kind": "Pod", "spec": {"containers": [{"name": "c"}]}}, "metadata.name", id="no-name"),
        pytest.param(pod_doc(containers=[]), "spec.containers: a pod needs at least one container", id="no-containers"),
        pytest.param(
            pod_doc(containers=[{"name": "c", "resources": {"limits": {"memory": "12XB"}}}]),
            "Pod/p: spec.containers[0].resources.limits.memory: invalid quantity '12XB'",
            id="bad-quantity",
        ),
        pytest.param(pod_doc(containers="nope"), "spec.containers: expected a list", id="containers-not-list"),
        pytest.param(pod_doc(priority="high"), "spec.priority: expected a 32-bit integer", id="priority-not-int"),
        pytest.param(
            pod_doc(containers=[{"name": "c", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "Often"}]}]),
            "restartPolicy: unknown value 'Often'",
            id="bad-resize-policy",
        ),
    ],
)
def test_input_errors_name_source_object_field(doc: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        object_from_dict(doc, "in.yaml")
    assert str(err.value).startswith("in.yaml")
    assert message in str(err.value)


def test_pod_to_dict_round_trips() -> None:
    doc = pod_doc(
        initContainers=[{"name": "log", "image": "x", "restartPolicy": "Always"}],
        resources={"requests": {"memory": "64Mi"}},
        priority=5,
    )
    doc["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}, "limits": {"cpu": "500m"}}
    pod = object_from_dict(doc)
    assert isinstance(pod, Pod)
    again = object_from_dict(pod_to_dict(pod))
    assert again == replace(pod, source="")


@pytest.mark.parametrize(("kind", "spec", "names", "counted"), [
    pytest.param("Deployment", {"replicas": 3}, ["wl-0", "wl-1", "wl-2"], "spec.replicas", id="deployment-3"),
    pytest.param("Deployment", {}, ["wl"], "spec.replicas", id="deployment-default-1"),
    pytest.param("Deployment", {"replicas": 0}, [], "spec.replicas", id="deployment-scaled-to-0"),
    pytest.param("StatefulSet", {"replicas": 1}, ["wl-0"], "spec.replicas", id="statefulset-ordinal-names"),
    pytest.param("DaemonSet", {}, ["wl"], "one per node", id="daemonset"),
    pytest.param("Job", {}, ["wl"], "spec.parallelism", id="job-default"),
    pytest.param("Job", {"parallelism": 4, "completions": 2}, ["wl-0", "wl-1"], "spec.completions",
                 id="job-fewer-completions"),
    pytest.param("Job", {"parallelism": 2, "completions": 5}, ["wl-0", "wl-1"], "spec.parallelism", id="job-parallel"),
    pytest.param("Job", {"parallelism": 2, "suspend": True}, [], "spec.suspend: true", id="job-suspended"),
])
def test_workload_pods_on_one_node(kind: str, spec: dict[str, Any], names: list[str], counted: str) -> None:
    doc = {"kind": kind, "metadata": {"name": "wl", "uid": "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"},
           "spec": {**spec, "template": {"spec": {"containers": [{"name": "w"}]}}}}
    template = object_from_dict(doc)
    assert isinstance(template, Pod) and template.workload is not None and template.workload.counted == counted
    pods = replica_pods(template)
    assert [p.name for p in pods] == names
    assert len({p.uid for p in pods}) == len(pods)


@pytest.mark.parametrize(("cron_spec", "pods"), [
    pytest.param({}, 1, id="one-job"),
    pytest.param({"suspend": True}, 0, id="suspended"),
])
def test_cron_job_runs_one_job_of_its_template(cron_spec: dict[str, Any], pods: int) -> None:
    doc = {"kind": "CronJob", "metadata": {"name": "cj"}, "spec": {**cron_spec, "jobTemplate": {"spec": {
        "template": {"spec": {"containers": [{"name": "w"}]}}}}}}
    template = object_from_dict(doc)
    assert isinstance(template, Pod) and len(replica_pods(template)) == pods


@pytest.mark.parametrize("spec", [{"replicas": -1}, {"replicas": "3"}, {"parallelism": -2}])
def test_a_bad_replica_count_names_its_field(spec: dict[str, Any]) -> None:
    kind = "Job" if "parallelism" in spec else "Deployment"
    doc = {"kind": kind, "metadata": {"name": "wl"}, "spec": {**spec, "template": {"spec": {"containers": [
        {"name": "w"}]}}}}
    with pytest.raises(InputError, match=f"spec.{next(iter(spec))}"):
        object_from_dict(doc)
