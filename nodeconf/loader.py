"""Read manifest and kubelet config files (multi-document YAML, `List` objects) into typed objects, bounded.

Every file is read up to MAX_FILE_BYTES, every YAML document is checked for depth, recursion and alias expansion
before it is built, so no input makes a long run, a big allocation or a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.manifest import LimitRange, Pod, ResourceQuota
from nodeconf.manifest_reader import object_from_dict
from nodeconf.unknown_fields import unknown_config_fields, unknown_manifest_fields

KubeObject = Pod | LimitRange | ResourceQuota
# The file name that stands for standard input (kubectl -f -).
STDIN = "-"
# nodeconf's bounds: a file larger than 16 MiB, nesting deeper than 100 (a Pod nests < 20) are refused.
MAX_FILE_BYTES = 16 * 2**20
MAX_DEPTH = 100
# go-yaml v3 decode.go allowedAliasRatio (what kubectl and the API server's YAML decoder refuse as "excessive
# aliasing"): past 100 alias-driven nodes and 1,000 nodes in all, at most 99 % of the nodes may come from aliases,
# falling linearly to 10 % between 400,000 and 4,000,000 nodes.
_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000
_MAX_INT_TEXT = 64
# libyaml's safe loader when PyYAML was built with it (about 8x faster), else the pure-Python one.
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[misc]
    """The safe loader whose int and float constructors refuse what they cannot convert as YAML errors."""


def _construct_number(loader: Any, node: Any, what: str, build: Any) -> Any:
    if len(node.value) > _MAX_INT_TEXT:
        problem = f"{what.split()[-1]} longer than {_MAX_INT_TEXT} characters"
        raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
    try:
        return build(loader, node)
    except (ValueError, OverflowError):
        raise yaml.constructor.ConstructorError(None, None, f"not {what}", node.start_mark) from None


_Loader.add_constructor("tag:yaml.org,2002:int", lambda loader, node: _construct_number(
    loader, node, "an integer", yaml.constructor.SafeConstructor.construct_yaml_int))
_Loader.add_constructor("tag:yaml.org,2002:float", lambda loader, node: _construct_number(
    loader, node, "a float", yaml.constructor.SafeConstructor.construct_yaml_float))


def _read(path: Path) -> str:
    """The file's text (`-`: standard input's), at most MAX_FILE_BYTES; a FIFO without a writer reads as empty
    instead of waiting."""
    try:
        if str(path) == STDIN:
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb") as stream:
                data = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.__class__.__name__}", source=str(path)) from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"larger than {MAX_FILE_BYTES // 2**20} MiB", source=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", source=str(path)) from None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _allowed_alias_ratio(total: int) -> float:
    if total <= _ALIAS_LOW:
        return 0.99
    if total >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (total - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def _check_graph(root: yaml.Node) -> None:
    """Refuse a composed document that nests too deep, refers to itself, or expands too much through aliases.

    Aliases share one node, so the graph is small even when its expansion is not: sizes and heights are computed
    once per node, iteratively (no recursion limit reached on deep input).
    """
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            kids = _children(node)
            size[key] = min(1 + sum(size[id(k)] for k in kids), 2**62)
            height[key] = 1 + max((height[id(k)] for k in kids), default=0)
            open_nodes.discard(key)
            if height[key] > MAX_DEPTH:
                raise _marked(node, f"nested deeper than {MAX_DEPTH} levels")
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise _marked(node, "an alias refers to a node that contains it (recursive structure)")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)
    total, distinct = size[id(root)], len(size)
    aliased = total - distinct
    if aliased > 100 and total > 1000 and aliased / total > _allowed_alias_ratio(total):
        raise _marked(root, f"excessive aliasing ({total} nodes once aliases are expanded, {distinct} written)")


def _marked(node: yaml.Node, problem: str) -> yaml.MarkedYAMLError:
    return yaml.composer.ComposerError(None, None, problem, node.start_mark)


def _documents(text: str, source: str) -> list[Any]:
    """All YAML documents of a file, empty ones dropped; an error names the line."""
    loader = _Loader(text)
    docs: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            _check_graph(node)
            doc = loader.construct_document(node)
            if doc is not None:
                docs.append(doc)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise InputError(f"invalid YAML: {where}{err.problem or err.context}", source=source) from None
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {err}", source=source) from None
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as err:
        # A tagged value its constructor cannot build (`!!timestamp abc`, `!!binary` of a mapping).
        raise InputError(f"invalid YAML: a value does not fit its tag ({err.__class__.__name__})",
                         source=source) from None
    finally:
        loader.dispose()
    return docs


def _flatten(docs: Iterable[Any], source: str) -> Iterator[Any]:
    """Expand `kind: List` (and `*List`) objects into their items (kubectl's list handling)."""
    for doc in docs:
        if isinstance(doc, Mapping) and isinstance(doc.get("kind"), str) and doc["kind"].endswith("List"):
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise InputError("expected a list", source=source, obj=doc["kind"], field="items")
            yield from _flatten(items, source)
        else:
            yield doc


class UnknownFields:
    """The fields nodeconf does not read, met while inputs load: refused at once when `strict` (--strict, the API
    server's fieldValidation=Strict), else kept and warned about by `warn()` once all input has loaded, so that a
    bad input later on stays the only line."""

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self.found: list[InputError] = []

    def __call__(self, problem: InputError) -> None:
        if self.strict:
            raise problem
        self.found.append(problem)

    def warn(self) -> None:
        """One line on stderr per field (the API server's default, Warn), each once."""
        for problem in dict.fromkeys(str(p) for p in self.found):
            print(f"nodeconf: warning: {problem}", file=sys.stderr)
        self.found.clear()


def objects_from_text(text: str, source: str = "", unknown: UnknownFields | None = None) -> list[KubeObject]:
    """The typed objects of one YAML text; every document must be a known kind. Fields nodeconf does not read go
    to `unknown`; without one they are warned about once the text has loaded."""
    own = UnknownFields() if unknown is None else unknown
    objects = []
    for doc in _flatten(_documents(text, source), source):
        objects.append(object_from_dict(doc, source))
        for problem in unknown_manifest_fields(doc, source):
            own(problem)
    if unknown is None:
        own.warn()
    return objects


def _identity(obj: KubeObject) -> tuple[str, str]:
    """What the API server keys an object by: kind and namespace/name (a workload's pod is a Pod)."""
    return type(obj).__name__, f"{obj.namespace}/{obj.name}"


def load_objects(paths: Iterable[str | Path], unknown: UnknownFields | None = None) -> list[KubeObject]:
    """The typed objects of all files, in file and document order; InputError names the file. Fields nodeconf
    does not read go to `unknown`; without one they are warned about once all files have loaded.

    The same object twice is refused, as the API server refuses creating a name that exists (AlreadyExists).
    """
    own = UnknownFields() if unknown is None else unknown
    objects: list[KubeObject] = []
    seen: dict[tuple[str, str], str] = {}
    for raw in paths:
        path = Path(raw)
        found = objects_from_text(_read(path), str(path), own)
        if not found:
            raise InputError("no Kubernetes objects in file", source=str(path))
        for obj in found:
            kind, ref = _identity(obj)
            if (kind, ref) in seen:
                raise InputError(f"already given in {seen[kind, ref]} (the API server refuses a second {kind} of "
                                 "the same namespace and name)", source=str(path), obj=f"{kind}/{ref}")
            seen[kind, ref] = str(path)
        objects.extend(found)
    if unknown is None:
        own.warn()
    return objects


def load_kubelet_config(path: str | Path, unknown: UnknownFields | None = None) -> KubeletConfig:
    """A KubeletConfiguration file (exactly one document); fields nodeconf does not read, or reads but does not
    model, go to `unknown`; without one they are warned about once the file has loaded."""
    return read_kubelet_config(path, unknown)[1]


def read_kubelet_config(path: str | Path, unknown: UnknownFields | None = None) -> tuple[str, KubeletConfig]:
    """load_kubelet_config, with the file's text as read (the one read the report's record hashes)."""
    source = str(path)
    text = _read(Path(path))
    docs = _documents(text, source)
    if len(docs) != 1:
        raise InputError(f"expected one KubeletConfiguration document, found {len(docs)}", source=source)
    config = kubelet_config_from_dict(docs[0], source)
    own = UnknownFields() if unknown is None else unknown
    for problem in unknown_config_fields(docs[0], source):
        own(problem)
    if unknown is None:
        own.warn()
    return text, config
