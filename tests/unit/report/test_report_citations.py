"""No rule the report shows cites a document that is not shipped (issue 32 item 4): every rule text of the oracle
and the suites (their string literals, read from the source) and every rule of the oracle's expectations for the
article's and the post's pods cites a document a reader can open, as written (the report shows rules unchanged)."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import load_kubelet_config, load_objects
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.report.citations import REFERENCES
from nodeconf.semantics.documents import ARTICLE, POST
from nodeconf.semantics.expect import expect
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.profile import profile_for
from tests.unit.report.documents import UNSHIPPED

ROOT = Path(__file__).resolve().parents[3]
RULE_SOURCES = ("nodeconf/semantics", "suites")
# A document named by a working name: "article"/"post" not as its REFERENCES name.
_NAMED = re.compile(r"\barticle\b|\bpost\b")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def rule_literals() -> list[tuple[str, str]]:
    """Every string literal (no docstring) of the oracle and the suites, where it is."""
    found = []
    for root in RULE_SOURCES:
        for path in sorted((ROOT / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docs = _docstrings(tree)
            found += [(f"{path.relative_to(ROOT)}:{node.lineno}", node.value) for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]
    return found


def unopenable(text: str) -> list[str]:
    """What in a shown text names a document a reader cannot open."""
    rest = text
    for name, _ in REFERENCES:
        rest = rest.replace(name, "")
    return UNSHIPPED.findall(rest) + _NAMED.findall(rest)


def test_every_rule_literal_cites_what_a_reader_can_open() -> None:
    literals = rule_literals()
    assert len(literals) > 500  # the rule texts were read, not an empty tree
    assert [(where, text) for where, text in literals if unopenable(text)] == []


def _rules(value: object) -> Iterator[str]:
    """Every Expected's rule inside an expectation (dataclasses, mappings and sequences of them)."""
    if isinstance(value, Expected):
        yield value.rule
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _rules(getattr(value, field.name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _rules(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _rules(item)


@pytest.mark.parametrize(("manifests", "config"), [
    (("requests-limits/qos-classes.yaml", "requests-limits/res-demo.yaml"), None),
    (("memory-qos/guaranteed-512mi.yaml", "memory-qos/burstable-512mi.yaml", "memory-qos/besteffort.yaml"),
     "memory-qos/kubelet-tiered-reservation.yaml"),
], ids=["article", "post"])
def test_the_oracles_rules_cite_what_a_reader_can_open(manifests: tuple[str, ...], config: str | None) -> None:
    pods = [o for o in load_objects([ROOT / "workloads" / m for m in manifests]) if isinstance(o, Pod)]
    kubelet = load_kubelet_config(ROOT / "workloads" / config) if config else KubeletConfig()
    rules = sorted(set(_rules(expect(pods, NodeFacts(memory_capacity=8 << 30), kubelet, profile_for("1.36", kubelet)))))
    assert len(rules) > 10 and any(ARTICLE in rule or POST in rule for rule in rules)
    assert [rule for rule in rules if unopenable(rule)] == []


@pytest.mark.parametrize(("text", "found"), [
    ("pause container: no quota (seed requests-limits-qos)", ["seed"]),
    ("memory.high stays max (post table)", ["post"]),
    ("kubepods.slice (article)", ["article"]),
    ("resizePolicy is RestartContainer (SEMANTICS.md Swap)", ["SEMANTICS"]),
    ("unconverted (RUNTIME-FACTS §3c)", ["RUNTIME-FACTS"]),
    (f"pause container: no quota ({ARTICLE})", []),
    (f"memory.high stays max ({POST} table)", []),
    ("KEP-5359 swap limit semantics table", []),
], ids=["seed", "post", "article", "semantics", "runtime-facts", "article-named", "post-named", "kep"])
def test_a_working_name_is_found_and_a_document_name_is_not(text: str, found: list[str]) -> None:
    assert unopenable(text) == found
