"""The one refusal of the agent's operations: its message goes back to the caller as is (wire.Reply error)."""

from __future__ import annotations


class AgentError(Exception):
    """A request the agent refuses; the message goes back to the caller as is."""
