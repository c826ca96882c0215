"""The one error type for unusable input: it names the file, the object and the field."""

from __future__ import annotations


class InputError(Exception):
    """Input that cannot be understood (bad YAML, unknown kind, malformed quantity, unknown enum value)."""

    def __init__(self, problem: str, *, source: str = "", obj: str = "", field: str = "") -> None:
        self.problem = problem
        self.source = source
        self.obj = obj
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = [part for part in (self.source, self.obj, self.field) if part]
        return ": ".join([*where, self.problem])

    def within(self, *, source: str = "", obj: str = "") -> InputError:
        """The same error with a file or object named where it had none."""
        return InputError(
            self.problem, source=self.source or source, obj=self.obj or obj, field=self.field
        )
