"""No rule the report shows cites a document that is not shipped (issue 32 item 4): every rule text of the oracle
and the suites (their string literals, read from the source) reads, as rendered, as a document a reader can open."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nodeconf.report.citations import ARTICLE, POST, REFERENCES, UNSHIPPED, readable

ROOT = Path(__file__).resolve().parents[2]
RULE_SOURCES = ("nodeconf/semantics", "suites")
# A document named by a working name: an unshipped note, or "article"/"post" not as its REFERENCES name.
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
    named = [name for name, _ in REFERENCES]
    rest = text
    for name in named:
        rest = rest.replace(name, "")
    return UNSHIPPED.findall(rest) + _NAMED.findall(rest)


def test_every_rule_literal_is_rendered_with_openable_citations() -> None:
    literals = rule_literals()
    assert len(literals) > 500  # the rule texts were read, not an empty tree
    assert [(where, readable(text)) for where, text in literals if unopenable(readable(text))] == []


def test_the_working_names_were_there_to_map() -> None:
    """Guards the test above: the unmapped texts do cite unshipped documents."""
    assert sum(1 for _, text in rule_literals() if unopenable(text)) > 20


@pytest.mark.parametrize(("rule", "shown"), [
    ("pause container: no quota (seed requests-limits-qos)", f"pause container: no quota ({ARTICLE})"),
    ("Guaranteed → -997 (policy.go, seed oom_score_adj table)",
     f"Guaranteed → -997 (policy.go, {ARTICLE}, oom_score_adj table)"),
    ("memory request == limit: no throttling, memory.high stays max (post table)",
     f"memory request == limit: no throttling, memory.high stays max ({POST} table)"),
    ("Memory QoS v1.36 post: kernel < 5.9 → a warning", f"{POST}: kernel < 5.9 → a warning"),
    ("kubepods.slice (article)", f"kubepods.slice ({ARTICLE})"),
    ("cgroup layout: kubepods.slice (SEMANTICS.md Cgroup layout)",
     "cgroup layout: kubepods.slice (kubelet pkg/kubelet/cm/cgroup_manager_linux.go, systemd driver names)"),
    ("drops hugepage limits (internal/cri/config/config_unix.go DefaultConfig, RUNTIME-FACTS.md §1)",
     "drops hugepage limits (internal/cri/config/config_unix.go DefaultConfig)"),
    ("KEP-5359 swap limit semantics table", "KEP-5359 swap limit semantics table"),
], ids=["article", "article-table", "post-table", "post-named", "bare-article", "semantics", "runtime-facts",
        "kep-unchanged"])
def test_rule_shown_as_what_a_reader_can_open(rule: str, shown: str) -> None:
    assert readable(rule) == shown
    assert unopenable(shown) == []
