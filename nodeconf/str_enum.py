"""`StrEnum` on every Python the agent runs on: the standard one (3.11+), else a str Enum that behaves the same.

Source: Python docs, enum.StrEnum (3.11): members are str, `str()` and `format()` give the value.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from enum import StrEnum
else:
    try:
        from enum import StrEnum
    except ImportError:  # the agent on an older node Python (Debian bullseye: 3.9)

        class StrEnum(str, Enum):
            """Members are strings; `str()` and `format()` give the value, as enum.StrEnum's do."""

            def __str__(self) -> str:
                return str.__str__(self)

            def __format__(self, spec: str) -> str:
                return str.__format__(str(self), spec)


__all__ = ["StrEnum"]
