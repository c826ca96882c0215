"""The enforcer's LimitedSwap faults: `ignore-explicit` (pods lose their limits.swap), `ignore-request-limit`
(a memory request equal to its limit counts as one byte lower) and `ignore-critical` (pods lose their priority), on
LimitedSwap only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodeconf.enforcer.lifecycle import Faults
from nodeconf.manifest import MEMORY, SWAP, SYSTEM_NODE_CRITICAL, Pod
from nodeconf.quantity import Quantity
from suites.toolkit.pods import pod, with_container


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


def _memory(p: Pod, name: str) -> tuple[Quantity | None, Quantity | None]:
    c = next(c for c in p.containers if c.name == name)
    return c.resources.request(MEMORY), c.resources.limit(MEMORY)


@pytest.mark.parametrize(("mode", "faulty"), [("LimitedSwap", True), ("WorkloadControlledSwap", False),
                                              ("NoSwap", False)])
def test_ignore_request_limit_makes_equal_request_one_byte_lower(mode: str, faulty: bool) -> None:
    """`limited-swap=ignore-request-limit`: on LimitedSwap a Burstable container whose memory request equals its
    limit is computed as if its request were one byte lower (so GetContainerSwapBehavior's exclusion never fires)."""
    equal = with_container(pod("requests-limits/qos-classes.yaml", "qos-burstable"), "app",
                           requests={MEMORY: "64Mi"}, limits={MEMORY: "64Mi"})
    assert Faults.parse(["limited-swap=ignore-request-limit"]).limited_swap_ignores_request_limit
    [seen] = Faults(limited_swap_ignores_request_limit=True).pods_seen([equal], mode)
    request, limit = _memory(seen, "app")
    assert limit is not None and limit.value() == 64 * 2**20
    assert request is not None and request.value() == 64 * 2**20 - (1 if faulty else 0)


def test_ignore_request_limit_keeps_guaranteed_pods_guaranteed() -> None:
    """A container with equal cpu request and limit may belong to a Guaranteed pod: it is left alone."""
    guaranteed = pod("requests-limits/qos-classes.yaml", "qos-guaranteed")
    assert Faults(limited_swap_ignores_request_limit=True).pods_seen([guaranteed], "LimitedSwap") == [guaranteed]


@pytest.mark.parametrize(("mode", "faulty"), [("LimitedSwap", True), ("WorkloadControlledSwap", False),
                                              ("NoSwap", False)])
def test_ignore_critical_drops_the_priority_on_limited_swap(mode: str, faulty: bool) -> None:
    """`limited-swap=ignore-critical`: on LimitedSwap a system-node-critical pod is computed without its priority,
    so GetContainerSwapBehavior's critical exclusion never fires."""
    critical = replace(pod("requests-limits/qos-classes.yaml", "qos-burstable"),
                       priority_class_name=SYSTEM_NODE_CRITICAL)
    assert critical.priority == 2_000_001_000
    assert Faults.parse(["limited-swap=ignore-critical"]).limited_swap_ignores_critical
    [seen] = Faults(limited_swap_ignores_critical=True).pods_seen([critical], mode)
    assert seen.priority == (0 if faulty else 2_000_001_000)
