"""A pytest plugin (`-p suite_on_shape`) that runs the suites against one recorded cluster node shape
(kube_shapes.SHAPES, named by NODECONF_TEST_SHAPE): `--node kube` opens the real kube driver on the in-memory API
server and scripted kubelet of test_nodes_kube, with the shape's Node object and /configz.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nodeconf.nodes.kube.node import KubeNode
from nodeconf.nodes.kube.node_kind import KubeSpec
from nodeconf.nodes.kube.timeouts import Timeouts
from tests.unit.nodes.kube import kube_schema
from tests.unit.nodes.kube.fakes import NODE, FakeClock, FakeKube, FakeNode, node_doc
from tests.unit.nodes.kube.kube_shapes import SHAPES, Shape

SHAPE_ENV = "NODECONF_TEST_SHAPE"
OUT_ENV = "NODECONF_TEST_SHAPE_OUT"  # where the checks' outcomes are written (JSON)


def shape_node_doc(shape: Shape) -> dict[str, Any]:
    doc = node_doc(nodeInfo=shape.node_info(), capacity=dict(shape.capacity),
                   conditions=[{"type": "Ready", "status": "True"}])
    doc["metadata"]["labels"] = {"kubernetes.io/os": "linux", **shape.labels}
    doc["spec"] = {"providerID": shape.provider_id} if shape.provider_id else {}
    return doc


def open_shape(shape: Shape, root: Path, refuse: dict[str, tuple[Any, ...]] | None = None) -> KubeNode:
    """The kube driver started on the shape (`refuse`: FakeKube.refuse, API refusals of pods by name)."""
    fake = FakeKube(FakeNode(root))
    fake.refuse.update(refuse or {})
    fake.node, fake.configz, fake.pause = shape_node_doc(shape), shape.configz(), shape.pause
    clock = FakeClock()
    node = KubeNode(fake, NODE, spec=f"kube:{shape.name}", run_id="abc123", sleep=clock.sleep, clock=clock,
                    timeouts=Timeouts(pod=10, start=10, delete=5, resize=3, quota=5, start_retry=3,
                                      service_account=3, poll=0.5))
    return node.start()


def pytest_configure(config: pytest.Config) -> None:
    """Each `--node kube:SHAPE` this process opens is that recorded shape (`--node kube`: NODECONF_TEST_SHAPE,
    `NAME@vX.Y.Z` for the shape with another kubelet); every check ends at its first pod (ReachedTheNode)."""

    def opened(spec: Any, **_: Any) -> KubeNode:
        name, _at, version = (KubeSpec.of(spec).context or os.environ[SHAPE_ENV]).partition("@")
        shape = next(s for s in SHAPES if s.name == name)
        shape = replace(shape, kubelet_version=version) if version else shape
        return open_shape(shape, Path(tempfile.mkdtemp(prefix=f"nodeconf-shape-{name}-")))

    import nodeconf.fixtures.node

    setattr(nodeconf.fixtures.node, "open_node", opened)  # noqa: B010 (the plugin replaces the opener for this process)
    setattr(KubeNode, "run", _first_pod)  # noqa: B010


class ReachedTheNode(Exception):
    """A check sent its first pod: the node's profile and kubelet configuration were accepted for it (judged)."""


RUN = KubeNode.run


def _first_pod(self: KubeNode, pod: Any) -> Any:
    """The driver's own run up to the API: its namespace and its pod manifest, checked against the API's schemas
    (kube_schema), then the check ends before the pod exists."""
    fake = self.api
    assert isinstance(fake, FakeKube)

    def reached(namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
        assert namespace in fake.namespaces, namespace
        kube_schema.check(manifest)
        raise ReachedTheNode(pod.ref)

    setattr(fake, "create_pod", reached)  # noqa: B010
    try:
        return RUN(self, pod)
    finally:
        delattr(fake, "create_pod")


OUTCOMES: dict[str, tuple[str, str]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Each check's outcome: judged (it sent a pod, or passed or failed without one), skipped with its reason, or
    an error."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if item.nodeid in OUTCOMES and OUTCOMES[item.nodeid][0] != "passed":
        return
    if call.excinfo is not None and call.excinfo.errisinstance(ReachedTheNode):
        OUTCOMES[item.nodeid] = ("judged", "")
    elif report.skipped:
        OUTCOMES[item.nodeid] = ("skipped", str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "")
    elif report.failed:
        OUTCOMES[item.nodeid] = ("judged" if report.when == "call" else "error", str(report.longrepr)[-3000:])
    elif report.when == "call":
        OUTCOMES[item.nodeid] = ("passed", "")


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get(OUT_ENV)
    if out:
        Path(out).write_text(json.dumps(OUTCOMES, indent=1))
