"""The oracle functions the agent asks (it computes no semantics itself): expectations and resize decisions."""

from __future__ import annotations

from nodeconf.semantics.expect import expect
from nodeconf.semantics.resize import decide_resize

__all__ = ["decide_resize", "expect"]
