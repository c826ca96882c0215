"""Fixtures the kube driver's tests share: a fake API server over a fake node, a fake clock, a started KubeNode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.nodes.kube.node import KubeNode
from tests.unit.nodes.kube.fakes import FakeClock, FakeKube, FakeNode, make_node


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake(tmp_path: Path) -> FakeKube:
    return FakeKube(FakeNode(tmp_path))


@pytest.fixture
def node(fake: FakeKube, clock: FakeClock) -> Iterator[KubeNode]:
    started = make_node(fake, clock).start()
    try:
        yield started
    finally:
        started.close()
