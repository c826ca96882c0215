"""The oracle functions the agent asks (it computes no semantics itself): expectations and resize decisions."""

from __future__ import annotations

from collections.abc import Mapping

from nodeconf.enforcer.agent import AgentError, ContainerUsage, ResizeDecision
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import Profile

__all__ = ["decide_resize", "expect"]


def decide_resize(current: Pod, desired: Pod, usage: Mapping[str, ContainerUsage], node: NodeFacts,
                  config: KubeletConfig, profile: Profile) -> ResizeDecision:
    """The oracle's resize decision (nodeconf.semantics.resize) for the current usage."""
    raise AgentError("resize decisions are not available yet (nodeconf.semantics.resize)")
