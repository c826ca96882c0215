"""Read manifest and kubelet config files (multi-document YAML, `List` objects) into typed objects."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.manifest import LimitRange, Pod, ResourceQuota, object_from_dict

KubeObject = Pod | LimitRange | ResourceQuota
# libyaml's safe loader when PyYAML was built with it (about 8x faster), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read: {err.__class__.__name__}", source=str(path)) from None


def _documents(text: str, source: str) -> list[Any]:
    """All YAML documents of a file, empty ones dropped; a syntax error names the line."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise InputError(f"invalid YAML: {where}{err.problem or err.context}", source=source) from None
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {err}", source=source) from None


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


def objects_from_text(text: str, source: str = "") -> list[KubeObject]:
    """The typed objects of one YAML text; every document must be a known kind."""
    return [object_from_dict(doc, source) for doc in _flatten(_documents(text, source), source)]


def load_objects(paths: Iterable[str | Path]) -> list[KubeObject]:
    """The typed objects of all files, in file and document order; InputError names the file."""
    objects: list[KubeObject] = []
    for raw in paths:
        path = Path(raw)
        found = objects_from_text(_read(path), str(path))
        if not found:
            raise InputError("no Kubernetes objects in file", source=str(path))
        objects.extend(found)
    return objects


def load_kubelet_config(path: str | Path) -> KubeletConfig:
    """A KubeletConfiguration file (exactly one document)."""
    source = str(path)
    docs = _documents(_read(Path(path)), source)
    if len(docs) != 1:
        raise InputError(f"expected one KubeletConfiguration document, found {len(docs)}", source=source)
    return kubelet_config_from_dict(docs[0], source)
