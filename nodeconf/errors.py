"""nodeconf's exception families, one per verdict: usage (exit 2), not applicable (skip), infrastructure (broken),
interrupted. Callers catch a family, never a list of unrelated classes.

Source: DESIGN.md `nodeconf run` contract (exit 0 pass, 1 a check failed, 2 usage or infrastructure error); STYLE.md
"One exception family per outcome" (httpx `_exceptions.py`).
"""

from __future__ import annotations

# Longest message and longest quoted value: an error is one line a person reads, whatever the input held.
MAX_MESSAGE = 300
MAX_SHOWN = 40


def shown(value: object) -> str:
    """`value` quoted for a message, cut to MAX_SHOWN characters; never converts a huge integer to text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"<integer of {value.bit_length()} bits>"
    if isinstance(value, (list, dict, tuple, set)):
        return f"<{type(value).__name__} of {len(value)} items>"
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _cut_path(path: str, limit: int) -> str:
    """A long path cut in its middle: its start and its file name stay readable."""
    if len(path) <= limit:
        return path
    head = limit // 3
    return path[:head] + "..." + path[len(path) - (limit - head - 3):]


class NodeconfError(Exception):
    """Every error nodeconf raises on purpose."""


class UsageError(NodeconfError):
    """Input from the user that cannot be used (a bad option, spec or file): one line and exit 2, before anything
    starts."""


class NodeSpecError(UsageError):
    """A node spec that cannot be used: one line naming the spec (any password masked)."""


class InputError(UsageError):
    """Input that cannot be understood (bad YAML, unknown kind, malformed quantity, unknown enum value)."""

    def __init__(self, problem: str, *, source: str = "", obj: str = "", field: str = "") -> None:
        self.problem = problem
        self.source = source
        self.obj = obj
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        """One line of at most MAX_MESSAGE characters: each part cut so the problem still shows."""
        where = [_cut_path(self.source, 80)] if self.source else []
        where += [_cut(part, 80) for part in (self.obj, self.field) if part]
        return _cut(": ".join([*where, _cut(self.problem, MAX_MESSAGE)]), MAX_MESSAGE - len("nodeconf: "))

    def within(self, *, source: str = "", obj: str = "") -> InputError:
        """The same error with a file or object named where it had none."""
        return InputError(
            self.problem, source=self.source or source, obj=self.obj or obj, field=self.field
        )


class NotApplicable(NodeconfError):
    """The node cannot be put in the state a check needs (e.g. a cluster's kubelet runs another config): skip."""


class InfrastructureError(NodeconfError, RuntimeError):
    """The node, the VM, the transport or the cluster failed us (not a failed check): the run is broken, exit 2."""


class Interrupted(NodeconfError):
    """The run was stopped by a signal before it finished: never reported as passed."""
