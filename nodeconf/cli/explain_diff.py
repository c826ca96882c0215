"""`nodeconf explain --diff` output: the changes between two nodes as JSON or a readable table, with how each
workload's pods were counted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nodeconf.loader import KubeObject
from nodeconf.manifest import Pod
from nodeconf.semantics.diff import Change, summary_line
from nodeconf.semantics.expectation import NodeExpectation, NodeSummary

ARROW = "→"


@dataclass(frozen=True)
class NodeDiff:
    """Both expectations of the same pods, what differs between them, and the workloads given (templates)."""

    before: NodeExpectation
    after: NodeExpectation
    changes: list[Change]
    workloads: tuple[Pod, ...]

    @property
    def summary(self) -> str:
        return summary_line(len(self.before.pods), self.changes)


def workloads(objects: Iterable[KubeObject]) -> list[Pod]:
    """The pod templates of the workload objects given, in order."""
    return [o for o in objects if isinstance(o, Pod) and o.workload is not None]


def _counted(template: Pod) -> str:
    w = template.workload
    assert w is not None
    return f"{w.kind} {template.namespace}/{w.name}: {w.pods} pod{'' if w.pods == 1 else 's'} ({w.counted})"


def _node(n: NodeSummary) -> str:
    return (f"{n.swap_behavior}, Kubernetes {n.kubernetes_version}, memory {n.memory_capacity}, swap "
            f"{n.swap_capacity}, cpu {n.cpu_capacity_milli}m, {n.cpu_weight_formula} cpu.weight")


def diff_json(diff: NodeDiff) -> dict[str, Any]:
    """`summary`, how workloads were counted, and `changes`: one object per value that differs."""
    return {
        "summary": diff.summary,
        "workloads": [{"kind": t.workload.kind, "namespace": t.namespace, "name": t.workload.name,
                       "pods": t.workload.pods, "counted": t.workload.counted}
                      for t in diff.workloads if t.workload is not None],
        "changes": [{"pod": c.pod, "owner": c.owner, "field": c.field, "before": c.before, "after": c.after,
                     "rule_before": c.rule_before, "rule_after": c.rule_after, "workload": c.workload}
                    for c in diff.changes],
    }


def _change_lines(change: Change, indent: str) -> list[str]:
    head = f"{indent}{change.owner} {change.field}: {change.before} {ARROW} {change.after}"
    if change.rule_before == change.rule_after:
        return [head, f"{indent}    rule: {change.rule_after}"] if change.rule_after else [head]
    return [head, f"{indent}    before: {change.rule_before or '(none)'}",
            f"{indent}    after:  {change.rule_after or '(none)'}"]


def _pod_groups(changes: Sequence[Change]) -> list[tuple[list[str], list[Change]]]:
    """Each pod's changes; consecutive pods of one workload with the same changes are listed once."""
    by_pod: dict[str, list[Change]] = {}
    for change in changes:
        if change.pod:
            by_pod.setdefault(change.pod, []).append(change)
    groups: list[tuple[list[str], list[Change]]] = []
    for pod, own in by_pod.items():
        if groups:
            pods, first = groups[-1]
            same = [(c.owner, c.field, c.before, c.after, c.rule_before, c.rule_after) for c in first] == [
                (c.owner, c.field, c.before, c.after, c.rule_before, c.rule_after) for c in own]
            if same and own[0].workload and own[0].workload == first[0].workload:
                pods.append(pod)
                continue
        groups.append(([pod], own))
    return groups


def diff_table(diff: NodeDiff) -> str:
    """The summary, both nodes, how workloads were counted, then node-level and per-pod changes."""
    lines = [diff.summary, f"before: {_node(diff.before.node)}", f"after:  {_node(diff.after.node)}"]
    lines += [f"counted: {_counted(t)}" for t in diff.workloads]
    node_level = [c for c in diff.changes if not c.pod]
    if node_level:
        lines += ["", "node level"]
        for change in node_level:
            lines += _change_lines(change, "  ")
    for pods, own in _pod_groups(diff.changes):
        head = f"pod {pods[0]}" if len(pods) == 1 else f"pods {pods[0]} … {pods[-1]} ({len(pods)} of {own[0].workload})"
        lines += ["", head]
        for change in own:
            lines += _change_lines(change, "  ")
    return "\n".join(lines) + "\n"
