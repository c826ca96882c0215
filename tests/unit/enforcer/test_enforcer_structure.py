"""The agent stays composed of small objects (issue 27 item 3): no class of the enforcer over ~250 lines, no module
over 400, and the Agent inherits nothing (its parts are attributes, each with one job)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nodeconf.enforcer.agent import Agent

ENFORCER = Path(__file__).resolve().parents[3] / "nodeconf" / "enforcer"
MODULES = sorted(ENFORCER.rglob("*.py"))
MAX_CLASS_LINES = 250
MAX_MODULE_LINES = 400


def _classes(path: Path) -> list[ast.ClassDef]:
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ENFORCER)) for p in MODULES])
def test_every_enforcer_module_and_class_is_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES
    long = {c.name: (c.end_lineno or c.lineno) - c.lineno + 1 for c in _classes(path)}
    assert {name: lines for name, lines in long.items() if lines > MAX_CLASS_LINES} == {}


def test_the_agent_is_wired_not_inherited() -> None:
    assert Agent.__bases__ == (object,)
