"""Quantity parsing, rounding and ordering (apimachinery resource.Quantity; SEMANTICS.md "Quantities")."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodeconf.quantity import Quantity, QuantityError, format_amount


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        pytest.param("128Mi", Fraction(134217728), id="binary-Mi-article"),
        pytest.param("128M", Fraction(128000000), id="decimal-M-article"),
        pytest.param("400m", Fraction(2, 5), id="milli-memory-typo-0.4-bytes"),
        pytest.param("250m", Fraction(1, 4), id="milli-cpu"),
        pytest.param("1", Fraction(1), id="plain"),
        pytest.param("1.5Gi", Fraction(3 * 2**29), id="fraction-binary"),
        pytest.param("1e3", Fraction(1000), id="exponent"),
        pytest.param("1E6", Fraction(10**6), id="exponent-upper"),
        pytest.param("2e-3", Fraction(2, 1000), id="negative-exponent"),
        pytest.param("-2", Fraction(-2), id="negative"),
        pytest.param("+5k", Fraction(5000), id="plus-sign-kilo"),
        pytest.param(".5", Fraction(1, 2), id="leading-dot"),
        pytest.param("3479660Ki", Fraction(3479660 * 1024), id="article-node-memory"),
        pytest.param("1Ei", Fraction(2**60), id="exbi"),
        pytest.param("7n", Fraction(7, 10**9), id="nano"),
    ],
)
def test_parse(text: str, amount: Fraction) -> None:
    assert Quantity.parse(text).amount == amount


@pytest.mark.parametrize("text", ["", "abc", "1Kb", "1.2.3", "Mi", "1 Mi", "--1", "1e", "1ki", "0x10"])
def test_invalid_text_is_named(text: str) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        Quantity.parse(text)


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        pytest.param("400m", 1, 400, id="sub-byte-rounds-up"),
        pytest.param("128Mi", 134217728, 134217728000, id="whole"),
        pytest.param("0.5m", 1, 1, id="sub-milli-rounds-up"),
        pytest.param("1.0001", 2, 1001, id="ceil-both"),
        pytest.param("-1.5", -1, -1500, id="negative-ceil-toward-plus-infinity"),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    q = Quantity.parse(text)
    assert (q.value(), q.milli_value()) == (value, milli)


def test_numbers_from_yaml() -> None:
    assert Quantity.parse(2).amount == 2
    assert Quantity.parse(0.5).amount == Fraction(1, 2)
    with pytest.raises(QuantityError):
        Quantity.parse(True)


@pytest.mark.parametrize(
    ("amount", "text"),
    [(134217728, "128Mi"), (1000, "1000"), (Fraction(1, 4), "250m"), (0, "0"), (-1024, "-1Ki")],
)
def test_format(amount: Fraction | int, text: str) -> None:
    assert format_amount(Fraction(amount)) == text


_SUFFIXES = ["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "m", "n", "u"]
quantities = st.builds(
    lambda n, d, s, neg: f"{'-' if neg else ''}{n}{'.' + d if d else ''}{s}",
    st.integers(0, 10**6),
    st.sampled_from(["", "5", "25", "125"]),
    st.sampled_from(_SUFFIXES),
    st.booleans(),
)


@given(quantities)
def test_round_trip_through_canonical_text(text: str) -> None:
    q = Quantity.parse(text)
    assert Quantity.parse(format_amount(q.amount)).amount == q.amount
    assert Quantity.parse(str(q)).amount == q.amount


@given(quantities, quantities)
def test_ordering_matches_exact_amounts(a: str, b: str) -> None:
    qa, qb = Quantity.parse(a), Quantity.parse(b)
    assert (qa < qb) == (qa.amount < qb.amount)
    assert (qa <= qb) == (qa.amount <= qb.amount)
    assert (qa > qb) == (qb < qa)
    assert (qa == qb) == (qa.amount == qb.amount)


@given(quantities)
def test_value_is_the_smallest_integer_not_below(text: str) -> None:
    q = Quantity.parse(text)
    assert q.value() >= q.amount > q.value() - 1
    assert q.milli_value() >= q.amount * 1000 > q.milli_value() - 1


@given(st.integers(-(2**62), 2**62))
def test_integers_round_trip(n: int) -> None:
    assert Quantity.parse(format_amount(Fraction(n))).value() == n
