"""Go's time.Duration as text: time.ParseDuration and time.Duration.String (the KubeletConfiguration's durations).

Source: Go src/time/format.go ParseDuration, src/time/time.go Duration.String.
"""

from __future__ import annotations

import re
from fractions import Fraction

from nodeconf.quantity import INT64_MAX

# time.ParseDuration: [sign] (decimal number, unit)+ with units ns, us, µs (U+00B5), μs (U+03BC), ms, s, m, h.
_DURATION = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<unit>ns|us|\u00b5s|\u03bcs|ms|s|m|h)", re.ASCII)
_NANOSECONDS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
                "h": 3600 * 10**9}
# How time.Duration.String writes a duration: h and m above a second, one unit below it.
_GO_UNITS = (("h", 3600 * 10**9), ("m", 60 * 10**9))
_GO_SMALL_UNITS = (("ms", 10**6), ("\u00b5s", 10**3), ("ns", 1))


def parse_go_duration(text: str) -> int | None:
    """Nanoseconds of a Go duration (time.ParseDuration), None when it is not one or overflows int64."""
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    if body == "0":
        return 0
    total, pos = Fraction(0), 0
    for match in _DURATION.finditer(body):
        if match.start() != pos:
            return None
        total += Fraction(match["n"].rstrip(".") or "0") * _NANOSECONDS[match["unit"]]
        pos = match.end()
    if not body or pos != len(body) or total > INT64_MAX:
        return None
    return sign * int(total)


def go_duration(nanoseconds: int) -> str:
    """A positive duration as Go's time.Duration.String writes it (`2m0s`, `1h0m0s`, `1.5s`, `250ms`)."""
    if nanoseconds < 10**9:
        unit, size = next((unit, size) for unit, size in _GO_SMALL_UNITS if nanoseconds >= size)
        return _decimal(nanoseconds, size) + unit
    out, rest, started = "", nanoseconds, False
    for unit, size in _GO_UNITS:
        count, rest = divmod(rest, size)
        if count or started:
            out, started = f"{out}{count}{unit}", True
    return f"{out}{_decimal(rest, 10**9)}s"


def _decimal(amount: int, size: int) -> str:
    whole, fraction = divmod(amount, size)
    digits = str(fraction).rjust(len(str(size)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)
