"""Every module's imports keep to the layers (DESIGN.md "Layers", COMMON.md one direction of dependencies)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from nodeconf.nodes.enforced.bundle import VENDORED

ROOT = Path(__file__).resolve().parents[2]
MODEL = frozenset(
    f"nodeconf.{name}"
    for name in ("quantity", "errors", "manifest", "manifest_reader", "manifest_writer", "kubelet_config",
                 "go_duration", "node_facts", "names", "cgroup_files", "workloads", "node_variant", "str_enum",
                 "unknown_fields")
)
# Standard-library modules that read files, the clock or the process environment: not in the pure layers.
IMPURE_STDLIB = frozenset(
    {"os", "sys", "time", "datetime", "subprocess", "socket", "pathlib", "io", "shutil", "tempfile", "random",
     "glob", "signal", "select", "selectors", "threading", "logging", "importlib"}
)
IMPURE_BUILTINS = frozenset({"open", "print", "input", "__import__", "eval", "exec"})


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# Layers that live inside the nodeconf package but sit above (fixtures) or beside (infra) the library.
INNER_LAYERS = ("nodeconf/fixtures", "nodeconf/infra")


def python_files(*packages: str) -> list[Path]:
    """Modules under the given directories; `nodeconf` alone means the library, without its inner layers."""
    skipped = [ROOT / inner for inner in INNER_LAYERS if inner not in packages]
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py")
                  if not any(p.is_relative_to(inner) for inner in skipped))


def resolve(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def is_module(dotted: str) -> bool:
    target = ROOT.joinpath(*dotted.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def imports(path: Path) -> set[str]:
    """Dotted names a module imports; `from pkg import mod` counts as `pkg.mod`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = resolve(path, node)
            subs = {f"{module}.{alias.name}" for alias in node.names if is_module(f"{module}.{alias.name}")}
            found.update(subs or {module})
    return found


def builtin_calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def is_stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


MODEL_FILES = [ROOT / "nodeconf" / f"{m.split('.')[1]}.py" for m in sorted(MODEL)]
SEMANTICS_FILES = python_files("nodeconf/semantics")
ENFORCER_FILES = python_files("nodeconf/enforcer")


def ids(paths: list[Path]) -> list[str]:
    return [module_name(p) for p in paths]


@pytest.mark.parametrize("path", MODEL_FILES, ids=ids(MODEL_FILES))
def test_model_imports_only_stdlib_and_model(path: Path) -> None:
    bad = {name for name in imports(path) if not (is_stdlib(name) or name in MODEL)}
    assert not bad, f"{module_name(path)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", SEMANTICS_FILES, ids=ids(SEMANTICS_FILES))
def test_semantics_imports_only_stdlib_model_and_semantics(path: Path) -> None:
    bad = {n for n in imports(path) if not (is_stdlib(n) or n in MODEL or within(n, "nodeconf.semantics"))}
    assert not bad, f"{module_name(path)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", MODEL_FILES + SEMANTICS_FILES, ids=ids(MODEL_FILES + SEMANTICS_FILES))
def test_model_and_semantics_do_no_io_and_read_no_clock(path: Path) -> None:
    impure = {n for n in imports(path) if n.split(".")[0] in IMPURE_STDLIB}
    calls = builtin_calls(path) & IMPURE_BUILTINS
    assert not impure and not calls, f"{module_name(path)} imports {sorted(impure)}, calls {sorted(calls)}"


@pytest.mark.parametrize("path", ENFORCER_FILES, ids=ids(ENFORCER_FILES))
def test_enforcer_imports_only_stdlib_model_semantics(path: Path) -> None:
    """... and the CRI client's transport, the pure-Python HTTP/2 pushed with the agent (bundle.VENDORED)."""
    bad = {
        n for n in imports(path)
        if not (is_stdlib(n) or n in MODEL or within(n, "nodeconf.semantics", "nodeconf.enforcer")
                or (within(n, *VENDORED) and module_name(path) == "nodeconf.enforcer.cri.grpc"))
    }
    assert not bad, f"{module_name(path)} imports {sorted(bad)}"


@pytest.mark.parametrize(
    ("packages", "forbidden"),
    [
        (("nodeconf/semantics", "nodeconf/enforcer"), "nodeconf.nodes"),
        (("nodeconf/semantics",), "nodeconf.enforcer"),
        (("suites",), "nodeconf.enforcer"),
        (("nodeconf/fixtures",), "suites"),
        (("nodeconf", "nodeconf/infra"), "nodeconf.fixtures"),
        (("nodeconf", "nodeconf/infra", "nodeconf/fixtures"), "suites"),
        (("nodeconf/nodes",), "nodeconf.infra"),
        (("nodeconf/nodes", "nodeconf/semantics", "nodeconf/enforcer"), "nodeconf.run"),
        (("nodeconf/nodes/kube",), "nodeconf.enforcer"),
        (("nodeconf/nodes/kube",), "nodeconf.nodes.enforced"),
        (("nodeconf/nodes/transport",), "nodeconf.nodes.enforced"),
        (("nodeconf/nodes/transport",), "nodeconf.nodes.kube"),
        (("nodeconf", "nodeconf/infra", "nodeconf/fixtures", "suites"), "tools"),
    ],
    ids=["oracle-and-enforcer-not-nodes", "oracle-not-enforcer", "suites-not-enforcer", "fixtures-not-suites",
         "library-not-fixtures", "library-not-suites",
         "nodes-not-infra", "drivers-not-run", "kube-driver-not-enforcer", "kube-driver-not-enforced-driver",
         "transport-not-enforced-driver", "transport-not-kube-driver", "checks-not-developer-tools"],
)
def test_never_imported(packages: tuple[str, ...], forbidden: str) -> None:
    files = python_files(*packages)
    assert files, f"no modules under {packages}"
    bad = {module_name(p): sorted(n for n in imports(p) if within(n, forbidden)) for p in files}
    assert not {m: n for m, n in bad.items() if n}, f"{forbidden} imported by {bad}"


def test_no_module_imports_a_conftest() -> None:
    """Fixtures are registered by conftest files; their classes and helpers live in modules (suites/toolkit)."""
    files = python_files("nodeconf", *INNER_LAYERS, "suites", "tests", "benchmarks", "tools")
    bad = {module_name(p): sorted(n for n in imports(p) if n.split(".")[-1] == "conftest") for p in files}
    assert not {m: n for m, n in bad.items() if n}, f"conftest imported by {bad}"


def test_imports_sees_every_import_form(tmp_path: Path) -> None:
    """The checker itself sees each import form, so the layer tests above can fail."""
    sample = tmp_path / "sample.py"
    sample.write_text("import yaml\nfrom nodeconf import quantity\nfrom nodeconf.nodes import base\n"
                      "def f() -> None:\n    from nodeconf.enforcer.agent import Agent\n")
    assert imports(sample) == {"yaml", "nodeconf.quantity", "nodeconf.nodes.base", "nodeconf.enforcer.agent"}
    inside = ROOT / "nodeconf" / "semantics" / "qos.py"
    assert resolve(inside, ast.ImportFrom(module="nodes", names=[ast.alias("base")], level=2)) == "nodeconf.nodes"
    assert resolve(inside, ast.ImportFrom(module="oom", names=[ast.alias("x")], level=1)) == "nodeconf.semantics.oom"
    assert not is_stdlib("yaml") and is_stdlib("fractions") and is_stdlib("__future__")


def test_enforcer_bundle_holds_every_module_the_enforcer_imports() -> None:
    """The agent runs on the node from the bundle alone: every nodeconf module it reaches is pushed there."""
    from nodeconf.nodes.enforced.bundle import BUNDLE_MODULES, BUNDLE_PACKAGES

    bundled = {f"nodeconf.{m.removesuffix('.py')}" for m in BUNDLE_MODULES if m != "__init__.py"}
    reached: set[str] = set()
    todo = [module_name(p) for p in ENFORCER_FILES]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        target = ROOT.joinpath(*name.split("."))
        path = target.with_suffix(".py") if target.with_suffix(".py").is_file() else target / "__init__.py"
        todo += [n for n in imports(path) if within(n, "nodeconf") and is_module(n)]
    loose = {n for n in reached if n.count(".") == 1 and n.split(".")[1] not in BUNDLE_PACKAGES}
    assert loose <= bundled, f"imported by the enforcer but not bundled: {sorted(loose - bundled)}"
