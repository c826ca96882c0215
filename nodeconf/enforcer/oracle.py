"""The oracle the agent asks (it computes no semantics itself): expectations and resize decisions, and the
shapes it exchanges with them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import NamespaceObject, Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.cpu_manager import Assignments
from nodeconf.semantics.expect import AdmittedMemo, expect
from nodeconf.semantics.expectation import NodeExpectation
from nodeconf.semantics.profile import Profile
from nodeconf.semantics.resize import ContainerUsage, decide_resize

__all__ = ["AdmittedMemo", "ContainerUsage", "ExpectFn", "ResizeDecision", "ResizeFn", "decide_resize", "expect"]

class ResizeDecision(Protocol):
    @property
    def status(self) -> str: ...

    @property
    def message(self) -> str: ...


class ResizeFn(Protocol):
    def __call__(self, current: Pod, desired: Pod, usage: Mapping[str, ContainerUsage], node: NodeFacts,
                 config: KubeletConfig, profile: Profile, others: Sequence[Pod] = ...) -> ResizeDecision: ...


class ExpectFn(Protocol):
    def __call__(self, pods: Sequence[Pod], node: NodeFacts, config: KubeletConfig, profile: Profile,
                 namespace_objects: Sequence[NamespaceObject] = ...,
                 cpu_assignments: Assignments | None = ..., memo: AdmittedMemo | None = ...) -> NodeExpectation: ...
