"""Which node of a run a check belongs to, read from its id: the node's name leads every check's parameters
(nodeconf.fixtures.node parametrizes `node` first), as `test_x[NAME]` or `test_x[NAME-case]`.

Source: issue 14 (several nodes per run; reports split by node).
"""

from __future__ import annotations

from collections.abc import Sequence


def node_of_test(test_id: str, names: Sequence[str]) -> str | None:
    """Which node a check id (`test_x[NAME]`, `test_x[NAME-case]`) belongs to, None for a check without one."""
    _, bracket, params = test_id.partition("[")
    if not bracket:
        return None
    params = params.rsplit("]", 1)[0]
    return next((name for name in names if params == name or params.startswith(name + "-")), None)
