"""The enforcer's `limited-swap=ignore-explicit` fault: on LimitedSwap only, pods lose their limits.swap."""

from __future__ import annotations

import pytest

from nodeconf.enforcer.lifecycle import Faults
from nodeconf.manifest import SWAP
from suites.toolkit.pods import pod


def test_parse_names_every_fault_on_a_bad_one() -> None:
    assert Faults.parse(["limited-swap=ignore-explicit"]).limited_swap_ignores_explicit
    with pytest.raises(ValueError, match="limited-swap=ignore-explicit"):
        Faults.parse(["limited-swap=yes"])


@pytest.mark.parametrize(("mode", "stripped"), [("LimitedSwap", True), ("WorkloadControlledSwap", False),
                                                ("NoSwap", False)])
def test_only_limited_swap_loses_explicit_limits(mode: str, stripped: bool) -> None:
    mixed = pod("kep-5359/use-case-4-pod-level-swap-mixed.yaml")
    [seen] = Faults(limited_swap_ignores_explicit=True).pods_seen([mixed], mode)
    limits = [c.resources.limits for c in seen.containers] + [seen.resources.limits if seen.resources else {}]
    assert any(SWAP in lim for lim in limits) is not stripped
    assert Faults().pods_seen([mixed], mode) == [mixed]
