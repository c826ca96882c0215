"""`nodeconf clean --node kube:CONTEXT` through the CLI against a loopback API server: only the namespaces of runs
whose lease lapsed are deleted; infra/kube/rbac.yaml's `nodeconf` namespace, a live run, an older nodeconf's run
(no lease), a look-alike namespace and a user's labelled pod are left alone; every request is one the documented
ClusterRole grants (`--node kind`: test_kind_provision.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from nodeconf.cli.main import main
from tests.unit.nodes.kube.kube_api_server import ApiServer, write_kubeconfig
from tests.unit.nodes.kube.rbac import allowed, permission, rbac_docs

OURS = {"app.kubernetes.io/managed-by": "nodeconf"}


def namespace(name: str, labels: dict[str, str], expires: datetime | None = None) -> dict[str, Any]:
    annotations = {"nodeconf.io/expires": expires.strftime("%Y-%m-%dT%H:%M:%SZ")} if expires else {}
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "status": {"phase": "Active"}}


def run_labels(run: str) -> dict[str, str]:
    return {**OURS, "nodeconf.io/run": run, "pod-security.kubernetes.io/enforce": "privileged"}


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    """The API server of a cluster set up with infra/kube/rbac.yaml, a user's labelled pod and four runs' namespaces
    (the loopback server's clock is this host's, as its Date header says)."""
    api = ApiServer()
    now = datetime.now(UTC)
    rbac_namespace = next(d for d in rbac_docs() if d["kind"] == "Namespace")
    namespaces = [
        rbac_namespace,
        namespace("nodeconf-0a1b2c", run_labels("0a1b2c"), now - timedelta(minutes=3)),  # killed 13 min ago
        namespace("nodeconf-0a1b2c-default", run_labels("0a1b2c"), now - timedelta(minutes=3)),
        namespace("nodeconf-d4e5f6", run_labels("d4e5f6"), now + timedelta(minutes=9)),  # renewed a minute ago
        namespace("nodeconf-d4e5f6-team", run_labels("d4e5f6"), now - timedelta(minutes=30)),  # one lapsed: alive
        namespace("nodeconf-99aa00", run_labels("99aa00")),  # an older nodeconf's run: no lease
        namespace("nodeconf-ci", {**OURS, "nodeconf.io/run": "ci"}, now - timedelta(days=1)),  # no run's name
        namespace("nodeconf-777777", run_labels("888888"), now - timedelta(days=1)),  # name and label disagree
    ]
    user_pod = {"metadata": {"namespace": "team-a", "name": "web-0", "labels": OURS},
                "spec": {"nodeName": "kind-control-plane", "containers": [{"name": "web", "image": "nginx:1.27"}]},
                "status": {"phase": "Running"}}
    # The loopback server answers a list whatever its labelSelector: the selection is clean's own.
    api.answers[("GET", "/api/v1/namespaces")] = (200, {"kind": "NamespaceList", "items": namespaces})
    api.answers[("GET", "/api/v1/pods")] = (200, {"kind": "PodList", "items": [user_pod]})
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", api.url)))
    monkeypatch.setenv("PATH", str(tmp_path))  # no kind here
    try:
        yield api
    finally:
        api.close()


def clean(tmp_path: Path, *args: str) -> int:
    return main(["clean", "--cache-dir", str(tmp_path / "cache"), "--node", "kube:local", *args])


def deletes(server: ApiServer) -> list[str]:
    return [seen.path for seen in server.seen if seen.method == "DELETE"]


def test_only_the_namespaces_of_runs_whose_lease_lapsed_are_deleted(
        server: ApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert clean(tmp_path) == 0
    assert deletes(server) == ["/api/v1/namespaces/nodeconf-0a1b2c", "/api/v1/namespaces/nodeconf-0a1b2c-default"]
    out = capsys.readouterr().out
    for kept in ("nodeconf", "nodeconf-d4e5f6", "nodeconf-d4e5f6-team", "nodeconf-99aa00", "nodeconf-ci",
                 "nodeconf-777777"):
        assert f"kube local: namespace {kept}: " in out and f"namespace {kept}: " not in "".join(
            line for line in out.splitlines() if line.endswith("; deleted"))
    assert "namespace nodeconf-d4e5f6: run d4e5f6 is alive (its lease runs until " in out
    assert "`kubectl delete namespace nodeconf-99aa00`" in out


def test_a_users_labelled_pod_is_never_touched(server: ApiServer, tmp_path: Path) -> None:
    clean(tmp_path)
    assert "/api/v1/namespaces/team-a/pods/web-0" not in deletes(server)
    assert not [seen for seen in server.seen if "/pods" in seen.path]  # clean never even lists pods


def test_dry_run_deletes_nothing_and_says_what_it_would(server: ApiServer, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert clean(tmp_path, "--dry-run") == 0
    assert deletes(server) == []
    assert "kube local: namespace nodeconf-0a1b2c: run 0a1b2c is over (its lease lapsed at " in capsys.readouterr().out


def test_clean_needs_only_what_the_cluster_role_grants(server: ApiServer, tmp_path: Path) -> None:
    clean(tmp_path)
    role = next(d for d in rbac_docs() if d["kind"] == "ClusterRole")
    needed = {permission(seen.method, seen.path) for seen in server.seen}
    assert ("namespaces", "list") in needed
    assert not [p for p in needed if not allowed(role["rules"], *p)], "nodeconf/infra/kube/rbac.yaml lacks a permission"
