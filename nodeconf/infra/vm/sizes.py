"""VM sizes as the `vm` spec and `nodeconf node up` take them: a quantity as in a pod spec (6Gi, 512Mi) or a bare
number of MiB, in whole MiB (qemu takes MiB).

Source: issue 12 (one spec, parsed once); nodeconf/quantity.py (the Kubernetes quantity grammar).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from nodeconf.quantity import INT64_MAX, Quantity, QuantityError, beyond_int64

MIN_VM_MEMORY_MIB = 256  # the smallest the reference VM boots with
MIB = 2**20
MAX_MIB_DIGITS = 13  # 2^63 bytes are 8,796,093,022,208 MiB


def size_mib(text: str, low: int) -> int | None:
    """A size in MiB: a quantity as in a pod spec (6Gi, 512Mi, 6442450944), or a bare number of MiB as before
    quantities were accepted (6144); None unless it is a whole number of MiB of at least `low` (qemu takes MiB)."""
    if text.isascii() and text.isdigit():
        if len(text) > MAX_MIB_DIGITS:  # beyond int64 bytes, and int() refuses 4,300 digits
            return None
        size = int(text) * MIB
    else:
        try:
            quantity = Quantity.parse(text)
        except QuantityError:
            return None
        if beyond_int64(quantity) or quantity.amount % MIB:
            return None
        size = int(quantity.amount)
    return size // MIB if low * MIB <= size <= INT64_MAX else None


def size_expected(name: str, low: int) -> str:
    """What size_mib takes, as an error message says it."""
    return f"{name} must be a quantity (6Gi) or a whole number of MiB (6144), at least {low}Mi"


def size_argument(name: str, low: int) -> Callable[[str], int]:
    """size_mib as an argparse `type=` for option `name`: a bad size is argparse's one-line usage error."""

    def convert(text: str) -> int:
        size = size_mib(text, low)
        if size is None:
            raise argparse.ArgumentTypeError(f"{size_expected(name, low)}, got {text!r}")
        return size

    return convert
