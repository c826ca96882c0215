"""What the agent pushed to the node may use when the node's Python is 3.9 (Debian bullseye), and where a 3.9 is.

Source: the Python 3.10/3.11 "What's New" pages (PEP 604 `X | Y` at runtime, PEP 634 `match`, `zip(strict=)`,
`dataclass(slots=, kw_only=)`, `Popen(process_group=)`, tomllib, enum.StrEnum, datetime.UTC, typing.Self, ...).
"""

from __future__ import annotations

import ast
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from nodeconf.nodes.enforced.bundle import agent_bundle

PY39 = (3, 9)
# Names a 3.9 standard library does not have, by module (a runtime import of one fails on the node).
NEWER_NAMES = {
    "typing": {"Self", "TypeAlias", "NotRequired", "Required", "Never", "assert_never", "TypeGuard", "ParamSpec",
               "Concatenate", "LiteralString", "Unpack", "TypeVarTuple", "dataclass_transform", "assert_type",
               "reveal_type", "override", "is_typeddict", "get_overloads"},
    "enum": {"StrEnum", "ReprEnum", "EnumCheck", "verify", "member", "nonmember", "global_enum"},
    "datetime": {"UTC"},
    "itertools": {"pairwise", "batched"},
    "contextlib": {"chdir", "aclosing"},
    "dataclasses": {"KW_ONLY"},
    "os": {"eventfd", "splice"},
}
NEWER_MODULES = {"tomllib", "wsgiref.types"}
NEWER_KEYWORDS = {"zip": {"strict"}, "dataclass": {"slots", "kw_only", "match_args"}, "bisect": {"key"},
                  "bisect_left": {"key"}, "bisect_right": {"key"}, "insort": {"key"},
                  "Popen": {"process_group", "pipesize"}, "run": {"process_group", "pipesize"},
                  "extractall": {"filter"}, "rmtree": {"onexc"}}
# Run by a 3.9 on the unpacked bundle: the str enums behave as enum.StrEnum does on 3.11.
ENUM_CHECK = """
import json, sys
from nodeconf.enforcer.wire import Op
from nodeconf.semantics.expectation import QosClass
assert sys.version_info[:2] == (3, 9), sys.version
assert str(Op.PING) == f"{Op.PING}" == "{}".format(Op.PING) == Op.PING == "ping", (str(Op.PING), f"{Op.PING}")
assert json.dumps({"op": Op.PING, Op.FACTS: QosClass.BURSTABLE}) == '{"op": "ping", "facts": "Burstable"}'
assert Op("ping") is Op.PING and f"{QosClass.BEST_EFFORT:>11}" == " BestEffort"
"""
TYPE_NAMES = {"int", "float", "complex", "str", "bytes", "bool", "list", "dict", "tuple", "set", "frozenset", "type",
              "object"}


def _is_type(node: ast.expr) -> bool:
    """An operand of `|` that makes it a union of types, not of flags (`os.O_RDONLY | os.O_CLOEXEC`)."""
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Subscript):
        return True
    if isinstance(node, ast.BinOp):
        return _is_union(node)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name in TYPE_NAMES or (name[:1].isupper() and not name.isupper())


def _is_union(node: ast.expr) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and (
        _is_type(node.left) or _is_type(node.right))


def _guarded(node: ast.If) -> bool:
    """`if TYPE_CHECKING:` or `if sys.version_info >= (3, 10+)`: its body never runs on 3.9."""
    test = ast.unparse(node.test)
    return test in ("TYPE_CHECKING", "typing.TYPE_CHECKING") or (
        test.startswith("sys.version_info >= (3, ") and int(test.split(", ")[1].rstrip(")")) >= 10)


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.future_annotations = False
        self.annotation_unions: list[int] = []

    def _add(self, node: ast.AST, what: str) -> None:
        self.problems.append(f"line {getattr(node, 'lineno', 0)}: {what}")

    def visit_If(self, node: ast.If) -> None:
        if _guarded(node):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        """A `try` whose ImportError handler stands in for what 3.9 lacks: only the handlers run there."""
        caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
        if caught & {"ImportError", "ModuleNotFoundError"}:
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module == "__future__" and any(a.name == "annotations" for a in node.names):
            self.future_annotations = True
        newer = sorted(a.name for a in node.names if a.name in NEWER_NAMES.get(module, set()))
        if newer or module in NEWER_MODULES:
            self._add(node, f"from {module} import {', '.join(newer or [a.name for a in node.names])} (not in 3.9)")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in NEWER_MODULES:
                self._add(node, f"import {alias.name} (not in 3.9)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.attr in NEWER_NAMES.get(node.value.id, set()):
            self._add(node, f"{node.value.id}.{node.attr} (not in 3.9)")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        for keyword in node.keywords:
            if keyword.arg in NEWER_KEYWORDS.get(func, set()):
                self._add(node, f"{func}({keyword.arg}=) (3.10+)")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if _is_union(node):
            self._add(node, f"`{ast.unparse(node)}` evaluated at runtime (3.10+)")
        else:
            self.generic_visit(node)

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None and any(_is_union(n) for n in ast.walk(node) if isinstance(n, ast.expr)):
            self.annotation_unions.append(node.lineno)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        self._annotation(node.annotation)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._annotation(node.returns)
        for child in [*node.decorator_list, node.args, *node.body]:
            self.visit(child)

    visit_FunctionDef = visit_AsyncFunctionDef = _function


def python39_problems(source: str, name: str = "<module>") -> list[str]:
    """What in `source` a Python 3.9 rejects when it parses, imports or runs it (empty: nothing found)."""
    try:
        tree = ast.parse(source, name, feature_version=PY39)
    except SyntaxError as err:
        return [f"line {err.lineno}: {err.msg} (3.9 grammar)"]
    checker = _Checker()
    checker.visit(tree)
    if checker.annotation_unions and not checker.future_annotations:
        lines = ", ".join(map(str, checker.annotation_unions[:5]))
        checker.problems.append(f"lines {lines}: `X | Y` annotations without `from __future__ import annotations`")
    return checker.problems


def pushed_files() -> dict[str, bytes]:
    """Every Python file the driver pushes to the node, by its path in the bundle."""
    with tarfile.open(fileobj=io.BytesIO(agent_bundle())) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()  # type: ignore[union-attr]
                if m.name.endswith(".py")}


def unpack_bundle(target: Path) -> list[str]:
    """The bundle unpacked into `target`, as on the node; the dotted names of its modules."""
    with tarfile.open(fileobj=io.BytesIO(agent_bundle())) as archive:
        archive.extractall(target, filter="data")
        names = [m.name for m in archive.getmembers() if m.name.endswith(".py")]
    return sorted(n.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for n in names)


def find_python39() -> str | None:
    """A Python 3.9 interpreter on this machine: $NODECONF_PYTHON39, python3.9 on PATH, or pyenv's; else None."""
    pyenv = sorted((Path.home() / ".pyenv" / "versions").glob("3.9*/bin/python3.9"))
    for candidate in [os.environ.get("NODECONF_PYTHON39"), shutil.which("python3.9"), *map(str, pyenv)]:
        if not candidate:
            continue
        try:
            probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
                                   capture_output=True, text=True, timeout=10, check=False)
        except OSError:
            continue
        if probe.stdout.strip() == "True":
            return candidate
    return None
