"""Kubernetes resource quantities, parsed exactly (k8s.io/apimachinery/pkg/api/resource/quantity.go)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

from nodeconf.errors import shown

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# ASCII digits only, as the API server's quantity grammar (quantity.go parseQuantityString: '0'..'9').
_GRAMMAR = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
# The largest value a quantity's kubelet-side int64 (Value, MilliValue) holds; ParseQuantity caps a binary-suffix
# quantity at it ("The max is just a simple cap": quantity.go maxAllowed).
INT64_MAX = 2**63 - 1
# nodeconf's bound on a quantity's spelling: far beyond int64 and nano precision, far below Python's 4,300-digit
# int conversion limit.
MAX_DIGITS = 100


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@dataclass(frozen=True, order=False)
class Quantity:
    """An exact quantity; `text` keeps the spelling the user wrote."""

    amount: Fraction
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse `128Mi`, `250m`, `1e3`, `1.5Gi`, `-2`; raise QuantityError naming the text."""
        if isinstance(text, bool):
            raise QuantityError(f"invalid quantity {shown(text)}")
        if isinstance(text, int):
            return cls(Fraction(text), str(text))
        if isinstance(text, float):
            if not math.isfinite(text):
                raise QuantityError(f"invalid quantity {shown(text)}")
            return cls(Fraction(str(text)), str(text))
        return _parse_text(text) if isinstance(text, str) else _parse_uncached(text)

    @classmethod
    def of(cls, amount: int | Fraction) -> Quantity:
        """A quantity of exactly `amount` base units."""
        return cls(Fraction(amount), format_amount(Fraction(amount)))

    def value(self) -> int:
        """Integer base units rounded up, like `Quantity.Value()`."""
        return math.ceil(self.amount)

    def milli_value(self) -> int:
        """Integer thousandths rounded up, like `Quantity.MilliValue()`."""
        return math.ceil(self.amount * 1000)

    def is_zero(self) -> bool:
        return self.amount == 0

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < other.amount

    def __le__(self, other: Quantity) -> bool:
        return self.amount <= other.amount

    def __gt__(self, other: Quantity) -> bool:
        return self.amount > other.amount

    def __ge__(self, other: Quantity) -> bool:
        return self.amount >= other.amount

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity.of(self.amount + other.amount)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity.of(self.amount - other.amount)

    def __str__(self) -> str:
        return self.text or format_amount(self.amount)


def _parse_uncached(text: object) -> Quantity:
    """The grammar of quantity.go ParseQuantity; the error names the text as given."""
    raw = str(text).strip()
    if len(raw) > MAX_DIGITS:
        raise QuantityError(f"invalid quantity {shown(raw)}: longer than {MAX_DIGITS} characters")
    match = _GRAMMAR.fullmatch(raw)
    if match is None:
        raise QuantityError(f"invalid quantity {shown(text)}")
    number = Fraction(match["number"] if not match["number"].endswith(".") else match["number"][:-1])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        scale = Fraction(_BINARY[suffix])
    elif suffix in _DECIMAL:
        scale = _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > 100:
            raise QuantityError(f"invalid quantity {shown(text)}: exponent out of range")
        scale = Fraction(10) ** exponent
    amount = number * scale
    if suffix in _BINARY and amount > INT64_MAX:
        amount, raw = Fraction(INT64_MAX), f"{match['sign']}{INT64_MAX}"
    return Quantity(-amount if match["sign"] == "-" else amount, raw)


def beyond_int64(q: Quantity, *, milli: bool = False) -> bool:
    """True when the kubelet's int64 view of `q` (Value, or MilliValue for cpu) cannot hold it (quantity.go)."""
    return abs(q.milli_value() if milli else q.value()) > INT64_MAX


# Manifests repeat a few spellings (`128Mi`, `250m`) thousands of times; a Quantity is immutable, so share it.
_parse_text = functools.lru_cache(maxsize=4096)(_parse_uncached)


def format_amount(amount: Fraction) -> str:
    """Canonical text: binary suffix for whole multiples of 1Ki, else decimal, milli, nano or exponent."""
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)
    if magnitude.denominator == 1:
        whole = magnitude.numerator
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if whole and whole % _BINARY[suffix] == 0:
                return f"{sign}{whole // _BINARY[suffix]}{suffix}"
        return f"{sign}{whole}"
    milli = magnitude * 1000
    if milli.denominator == 1:
        return f"{sign}{milli.numerator}m"
    nano = magnitude * 10**9
    if nano.denominator == 1:
        return f"{sign}{nano.numerator}n"
    if not _terminates(nano.denominator):
        return f"{sign}{math.ceil(nano)}n"
    # A parsed quantity is a terminating decimal: write its exact digits with a negative exponent.
    exponent = 9
    while nano.denominator != 1:
        nano *= 10
        exponent += 1
    return f"{sign}{nano.numerator}e-{exponent}"


def _terminates(denominator: int) -> bool:
    """True when 1/denominator has a finite decimal expansion (only factors 2 and 5)."""
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1
