"""A run's lease on its namespaces: created with an expiry TTL ahead on the API server's clock, renewed by a live
run, no longer renewed once the run closed; which namespaces `nodeconf clean` judges a finished run's."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.api import ClientKubeApi, KubeApiError
from nodeconf.nodes.kube.lease import EXPIRES
from nodeconf.nodes.kube.node import KubeNode
from nodeconf.nodes.kube.stale import judge
from tests.unit.nodes.kube.fakes import (
    BASE_NS,
    DEFAULT_NS,
    RES_DEMO,
    SERVER_TIME,
    FakeClock,
    FakeKube,
    make_node,
)
from tests.unit.nodes.kube.kube_api_server import ApiServer


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_every_run_namespace_is_created_with_a_lease_ten_minutes_ahead(fake: FakeKube) -> None:
    node = make_node(fake, FakeClock()).start()
    try:
        node.run(RES_DEMO)
        assert fake.namespace_annotations == {BASE_NS: {EXPIRES: "2026-12-03T07:10:00Z"},
                                              DEFAULT_NS: {EXPIRES: "2026-12-03T07:10:00Z"}}
    finally:
        node.close()


def test_a_live_run_renews_its_lease_and_a_closed_one_stops(fake: FakeKube) -> None:
    node = KubeNode(fake, "kind-control-plane", run_id="abc123", renew_every=0.01).start()
    try:
        fake.server_time = SERVER_TIME + timedelta(hours=1)
        wait_for(lambda: fake.namespace_annotations[BASE_NS][EXPIRES] == "2026-12-03T08:10:00Z", "a renewal")
    finally:
        node.close()
    assert not node.heartbeat._thread.is_alive()  # stop() joined it: no renewal after close
    assert fake.deleted_namespaces == [BASE_NS]


def test_a_lease_that_cannot_be_renewed_stops_the_run_at_start(fake: FakeKube) -> None:
    def refuse(name: str, patch: object) -> None:
        raise KubeApiError(403, f'namespaces "{name}" is forbidden: User "dev" cannot patch resource "namespaces"',
                           "Forbidden")

    fake.patch_namespace = refuse  # type: ignore[method-assign,assignment]
    with pytest.raises(NodeError, match='cannot patch resource "namespaces"'):
        make_node(fake, FakeClock()).start()
    assert fake.deleted_namespaces == [BASE_NS] and fake.closed


def test_the_lease_runs_on_the_api_servers_clock() -> None:
    """ClientKubeApi.now() is the server's Date header (whole seconds) advanced by the time since it came."""
    from kubernetes import client

    server = ApiServer()
    configuration = client.Configuration()
    configuration.host = server.url
    api = ClientKubeApi(client.ApiClient(configuration))
    try:
        before = datetime.now(UTC)
        now = api.now()
        after = datetime.now(UTC)
        assert [seen.path for seen in server.seen] == ["/version/"]
        assert before - timedelta(seconds=1) <= now <= after + timedelta(seconds=1)
    finally:
        api.close()
        server.close()


def ns(name: str, run: str, expires: str | None, deleting: str | None = None) -> dict[str, object]:
    metadata = {"name": name, "labels": {"app.kubernetes.io/managed-by": "nodeconf", "nodeconf.io/run": run},
                "annotations": {EXPIRES: expires} if expires else {}}
    return {"metadata": {**metadata, "deletionTimestamp": deleting} if deleting else metadata}


@pytest.mark.parametrize(("namespace", "deleted"), [
    pytest.param(ns("nodeconf-abc123", "abc123", "2026-12-03T06:59:59Z"), True, id="lapsed"),
    pytest.param(ns("nodeconf-abc123-kube-system", "abc123", "2026-12-03T06:59:59Z"), True, id="lapsed-manifest-ns"),
    pytest.param(ns("nodeconf-abc123", "abc123", "2026-12-03T07:00:01Z"), False, id="alive"),
    pytest.param(ns("nodeconf-abc123", "abc123", "2026-12-03T06:00:00Z", deleting="2026-12-03T06:58:00Z"), False,
                 id="terminating"),
    pytest.param(ns("nodeconf-abc123", "abc123", None), False, id="no-lease"),
    pytest.param(ns("nodeconf-abc123", "abc123", "soon"), False, id="unreadable-lease"),
    pytest.param(ns("nodeconf", "abc123", "2026-12-03T06:00:00Z"), False, id="rbac-namespace"),
    pytest.param(ns("nodeconf-abc123", "def456", "2026-12-03T06:00:00Z"), False, id="label-disagrees"),
    pytest.param(ns("nodeconf-ABC123", "ABC123", "2026-12-03T06:00:00Z"), False, id="not-a-run-id"),
    pytest.param(ns("team-a", "abc123", "2026-12-03T06:00:00Z"), False, id="users-namespace"),
    pytest.param({"metadata": {"name": "nodeconf-abc123", "labels": {"nodeconf.io/run": "abc123"},
                               "annotations": {EXPIRES: "2026-12-03T06:00:00Z"}}}, False, id="no-managed-by"),
])
def test_only_a_run_namespace_whose_lease_lapsed_is_deleted(namespace: dict[str, object], deleted: bool) -> None:
    [verdict] = judge([namespace], SERVER_TIME)
    assert verdict.delete is deleted


def test_a_run_is_alive_while_any_of_its_namespaces_is_leased() -> None:
    verdicts = judge([ns("nodeconf-abc123", "abc123", "2026-12-03T07:05:00Z"),
                      ns("nodeconf-abc123-default", "abc123", "2026-12-03T06:00:00Z")], SERVER_TIME)
    assert [(v.namespace, v.delete) for v in verdicts] == [("nodeconf-abc123", False),
                                                           ("nodeconf-abc123-default", False)]
