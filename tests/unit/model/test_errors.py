"""Each error belongs to the one family that decides its verdict, so callers catch a family (issue 12)."""

from __future__ import annotations

import pytest

from nodeconf.errors import (
    InfrastructureError,
    InputError,
    Interrupted,
    NodeconfError,
    NodeSpecError,
    NotApplicable,
    UsageError,
)
from nodeconf.infra.vm.image import ImageBuildError
from nodeconf.infra.vm.machine import VmError
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kube.api import KubeApiError
from nodeconf.nodes.kube.configz import KubeletConfigNotApplicable
from nodeconf.nodes.transport.base import CommandError, TransportError
from nodeconf.nodes.transport.ssh import HostKeyError

FAMILIES = (UsageError, NotApplicable, InfrastructureError, Interrupted)


@pytest.mark.parametrize(("error", "family"), [
    (InputError, UsageError),
    (NodeSpecError, UsageError),
    (NotApplicable, NotApplicable),
    (KubeletConfigNotApplicable, NotApplicable),
    (NodeError, InfrastructureError),
    (KubeApiError, InfrastructureError),
    (TransportError, InfrastructureError),
    (HostKeyError, InfrastructureError),
    (CommandError, InfrastructureError),
    (VmError, InfrastructureError),
    (ImageBuildError, InfrastructureError),
], ids=lambda value: value.__name__)
def test_every_error_is_in_exactly_one_family(error: type[Exception], family: type[Exception]) -> None:
    assert issubclass(error, NodeconfError)
    assert [f for f in FAMILIES if issubclass(error, f)] == [family]
