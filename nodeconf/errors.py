"""The one error type for unusable input: it names the file, the object and the field, on one short line."""

from __future__ import annotations

# Longest message and longest quoted value: an error is one line a person reads, whatever the input held.
MAX_MESSAGE = 300
MAX_SHOWN = 40


def shown(value: object) -> str:
    """`value` quoted for a message, cut to MAX_SHOWN characters; never converts a huge integer to text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"<integer of {value.bit_length()} bits>"
    if isinstance(value, list | dict | tuple | set):
        return f"<{type(value).__name__} of {len(value)} items>"
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class InputError(Exception):
    """Input that cannot be understood (bad YAML, unknown kind, malformed quantity, unknown enum value)."""

    def __init__(self, problem: str, *, source: str = "", obj: str = "", field: str = "") -> None:
        self.problem = problem
        self.source = source
        self.obj = obj
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        """One line of at most MAX_MESSAGE characters: each part cut so the problem still shows."""
        where = [_cut(part, 80) for part in (self.source, self.obj, self.field) if part]
        return _cut(": ".join([*where, _cut(self.problem, MAX_MESSAGE)]), MAX_MESSAGE - len("nodeconf: "))

    def within(self, *, source: str = "", obj: str = "") -> InputError:
        """The same error with a file or object named where it had none."""
        return InputError(
            self.problem, source=self.source or source, obj=self.obj or obj, field=self.field
        )
