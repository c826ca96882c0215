"""A table's checks in batches: the pods of every check that needs the same kubelet configuration run together,
deployed one after the other and read in one request per poll, one batch on the node at a time (issue 31).

Each check still judges only its own pod (its cgroups, status, events), so what it asserts does not depend on which
other pods share the batch; the oracle is asked about the whole batch at once, so a pod the batch would crowd out of
the node shows as that check's admission mismatch, never as a silent pass. The batch is held on the node's ledger
under the checks' rule (fixtures.concurrency): a runs_alone table still never shares its node with another module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass

import yaml

from fixtures.concurrency import shared_holding
from fixtures.evidence import attach_manifest
from fixtures.node import delete_all
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.manifest_writer import pod_to_dict
from nodeconf.nodes.base import Node, NodeError, PodEvidence, PodHandle
from nodeconf.semantics.expectation import PodExpectation
from suites.toolkit.checks import Deployed, SettledPods
from suites.toolkit.kubelet import Kubelet, Oracle


@dataclass(frozen=True)
class Batch:
    """One batch on the node: its key, the pods with the oracle's view of all of them, their settled evidence."""

    key: Hashable
    deployed: Deployed
    settled: SettledPods

    def pod(self, name: str) -> tuple[PodHandle, PodExpectation]:
        return self.deployed.handle(name), self.deployed.expected(name)

    def evidence(self, handle: PodHandle) -> PodEvidence:
        return self.settled.of(handle)


class Batches:
    """The batches of a module (a module-scoped fixture yields one and closes it): `batch(key, configure, pods)`
    returns the live batch when its key matches, else deletes the live batch's pods, configures the node and
    deploys the new batch. Checks that share a key should be collected next to each other."""

    def __init__(self, node: Node, oracle: Oracle, kubelet: Kubelet) -> None:
        self.node, self.oracle, self.kubelet = node, oracle, kubelet
        self.live: Batch | None = None
        self._stack = contextlib.ExitStack()

    def batch(self, key: Hashable, configure: Callable[[Kubelet], KubeletConfig],
              pods: Callable[[], Sequence[Pod]]) -> Batch:
        if self.live is not None and self.live.key == key:
            return self.live
        self.close()
        configure(self.kubelet)
        self.kubelet.namespace_objects(())
        wanted = list(pods())
        handles: list[PodHandle] = []
        self._stack.enter_context(shared_holding(self.node, ", ".join(p.name for p in wanted)))
        self._stack.callback(_delete, handles)
        try:
            expectation = self.oracle.expect(wanted, self.kubelet.config)
            for p in wanted:
                attach_manifest(yaml.safe_dump(pod_to_dict(p), sort_keys=False), f"manifest {p.ref}")
                handles.append(self.node.run(p))
        except BaseException:
            self.close()
            raise
        deployed = Deployed(expectation, tuple(handles))
        self.live = Batch(key, deployed, SettledPods(self.node, deployed.handles))
        return self.live

    def close(self) -> None:
        """Delete the live batch's pods (also when its deploy failed half-way) and release the node."""
        self.live = None
        self._stack.close()


def _delete(handles: list[PodHandle]) -> None:
    problems = delete_all(handles)
    if problems:
        raise NodeError("pods not deleted: " + "; ".join(problems))


@contextlib.contextmanager
def module_batches(node: Node, oracle: Oracle, kubelet: Kubelet) -> Iterator[Batches]:
    """A module's batches, the last one deleted when the module ends, pass or fail."""
    batches = Batches(node, oracle, kubelet)
    try:
        yield batches
    finally:
        batches.close()
