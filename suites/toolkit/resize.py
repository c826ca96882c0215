"""In-place resize steps the suites share: the patch, the oracle's decision, the rows comparing the node's answer.

Source: requests-limits-qos article "Changing resources on the fly"; nodeconf/semantics/resize.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodeconf.manifest import Pod
from nodeconf.nodes.base import ResizeStatus
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.resize import ContainerUsage, decide_resize
from suites.toolkit.compare import ComparedValue, compare_value
from suites.toolkit.kubelet import Kubelet, Oracle


def patch(container: str, resources: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """A resize patch for one container (the article's `kubectl patch --subresource resize` body)."""
    return {"spec": {"containers": [{"name": container, "resources": {k: dict(v) for k, v in resources.items()}}]}}


def _usage_masked(message: str) -> str:
    """A deferral message without the usage figure it quotes (usage moves between our sample and the node's)."""
    return re.sub(r"usage \(\d+\)", "usage (N)", message)


def status_rows(name: str, got: ResizeStatus, status: str, message: str, rule: str) -> list[ComparedValue]:
    """The node's resize status and message against the oracle's decision."""
    return [compare_value(name, "", "(resize)", "resize status", Expected(status, rule), got.status),
            compare_value(name, "", "(resize)", "resize message", Expected(_usage_masked(message), rule),
                          _usage_masked(got.message))]


def decision(oracle: Oracle, kubelet: Kubelet, current: Pod, desired: Pod,
              usage: Mapping[str, ContainerUsage] | None = None, others: Sequence[Pod] = ()) -> tuple[str, str]:
    """The oracle's status and message for resizing `current` to `desired` on this node, beside `others` (the
    node's other pods whose allocated requests count)."""
    decided = decide_resize(current, desired, usage or {}, oracle.facts, kubelet.config,
                             oracle.profile(kubelet.config), others)
    return decided.status.value, decided.message
