"""The cluster checks exist for cluster nodes only (`kube`, `kind`): on a node whose kubelet nodeconf runs there is no
provider's configuration to assert, so they are left out of its run rather than reported as skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.run.settings import NodeSettings

CLUSTER_SCHEMES = frozenset({"kube", "kind"})
HERE = Path(__file__).resolve().parent


def _elsewhere(item: pytest.Item) -> bool:
    """A check of this directory collected for a node that is not a cluster's."""
    entry = getattr(getattr(item, "callspec", None), "params", {}).get("node")
    return (Path(item.path).resolve().parent == HERE and isinstance(entry, NodeSettings)
            and entry.spec.scheme not in CLUSTER_SCHEMES)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    dropped = [item for item in items if _elsewhere(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
