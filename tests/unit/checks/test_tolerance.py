"""Tolerance bands: each accepts what the kernel does and fails when it should (expected values by hand)."""

from __future__ import annotations

import pytest

from suites.toolkit.tolerance import (
    Band,
    cpu_usage_band,
    limit_band,
    never_above,
    page_floor,
    periods_band,
    throttled_fraction_band,
)

KI = 1024
MI = 1024 * KI


def upstream_limited_swap_check(actual: int, expected: int) -> bool:
    """test/e2e_node/swap_test.go's LimitedSwap tolerance: `>= x-4Ki OR <= x+4Ki`, kept here as the bad example."""
    return actual >= expected - 4 * KI or actual <= expected + 4 * KI


@pytest.mark.parametrize("actual", [0, 126390272 - 4096, 126390272 + 1, 10**18], ids=["zero", "page-below",
                                                                                      "byte-above", "huge"])
def test_exact_limit_band_fails_where_upstream_passes(actual: int) -> None:
    band = limit_band(126392995, 4096, pages=0)
    assert upstream_limited_swap_check(actual, 126390272)
    assert not band.contains(actual)
    assert band.contains(126390272)


@pytest.mark.parametrize(
    ("written", "page_size", "read_back"),
    [
        # MEASURED.md: values written on the VM kernel and read back.
        (100000000, 4096, 99999744),
        (126392995, 4096, 126390272),
        (3161666355, 4096, 3161665536),
        (100000001, 4096, 99999744),
        (52428801, 4096, 52428800),
        (52428800, 4096, 52428800),
        # A 64 KiB-page kernel: 100000000 // 65536 = 1525 pages = 99942400.
        (100000000, 65536, 99942400),
    ],
    ids=["max-1e8", "swap-max", "high", "min-plus-one", "low-plus-one", "page-multiple", "64k-pages"],
)
def test_page_floor_is_the_kernels_read_back(written: int, page_size: int, read_back: int) -> None:
    assert page_floor(written, page_size) == read_back


@pytest.mark.parametrize(
    ("page_size", "inside", "outside_low"),
    [(4096, 32 * MI - 4096, 32 * MI - 4097), (65536, 32 * MI - 65536, 32 * MI - 65537)],
    ids=["4k", "64k"],
)
def test_limit_band_scales_with_page_size(page_size: int, inside: int, outside_low: int) -> None:
    band = limit_band(32 * MI, page_size)
    assert band.contains(32 * MI)
    assert band.contains(inside)
    assert not band.contains(outside_low)
    assert not band.contains(32 * MI + 1)


def test_limit_band_measured_swap_reached_exactly() -> None:
    # MEASURED.md: memory.swap.max=32M, a 200 MiB hog: swap use reached exactly 33554432.
    assert limit_band(32 * MI, 4096).contains(33554432)


def test_never_above_is_a_hard_limit() -> None:
    band = never_above(32 * MI)
    assert band.contains(0)
    assert band.contains(32 * MI)
    assert not band.contains(32 * MI + 4096)
    assert not band.contains(-1)


@pytest.mark.parametrize(
    ("usage_rate", "ok"),
    [(0.20, True), (0.19, True), (0.17, True), (0.2066, True), (0.16, False), (0.21, False), (0.5, False),
     (0.0, False)],
    ids=["exact", "slightly-low", "low-edge", "window-edge", "too-low", "too-high", "unthrottled", "idle"],
)
def test_cpu_usage_band_for_the_articles_burner(usage_rate: float, ok: bool) -> None:
    # 200m limit: quota 20000 of 100000; a 3 s window lets one extra 20 ms quota in: 0.2 + 0.02/3 = 0.20667.
    band = cpu_usage_band(20000, 100000, 3_000_000, shortfall=0.15)
    assert band.low == pytest.approx(0.17)
    assert band.high == pytest.approx(0.2 + 20000 / 3_000_000)
    assert band.contains(usage_rate) is ok


def test_cpu_usage_band_rejects_a_window_shorter_than_a_period() -> None:
    with pytest.raises(ValueError, match="shorter than one period"):
        cpu_usage_band(20000, 100000, 50000, shortfall=0.1)


@pytest.mark.parametrize(("throttled", "periods", "ok"), [(44, 46, True), (633, 637, True), (20, 46, False),
                                                          (0, 46, False)],
                         ids=["measured-vm", "article", "half-idle", "never"])
def test_throttled_fraction_band(throttled: int, periods: int, ok: bool) -> None:
    assert throttled_fraction_band(0.8).contains(throttled / periods) is ok


@pytest.mark.parametrize(("count", "ok"), [(30, True), (28, True), (32, True), (27, False), (33, False)],
                         ids=["exact", "low-slack", "high-slack", "too-few", "too-many"])
def test_periods_band(count: int, ok: bool) -> None:
    assert periods_band(3_000_000, 100_000).contains(count) is ok


def test_empty_band_is_refused() -> None:
    with pytest.raises(ValueError, match="empty band"):
        Band(2, 1, "inverted")


def test_band_message_names_bounds_and_reason() -> None:
    assert str(never_above(32 * MI)) == "[0, 33554432] (hard limit 33554432)"
    assert str(Band(0.17, 0.2067, "quota")) == "[0.17, 0.2067] (quota)"
