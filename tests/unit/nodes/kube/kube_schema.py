"""Every object the kube driver sends, checked against the Kubernetes API's OpenAPI schemas (kubernetes-validate's
strict schemas, shipped in the package per Kubernetes version: offline, no cluster). Strict means an unknown
field fails (additionalProperties: false) as well as a wrong type; a patch is checked the same way with the
`required` keyword left out (a merge patch names only what it changes)."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import referencing

# The oldest profile nodeconf knows (nodeconf/semantics profiles) and the newest schema the package ships.
OLDEST = "1.34"


@cache
def versions() -> tuple[str, ...]:
    """The oldest supported and the newest shipped schema version, as the package names its folders."""
    root = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    shipped = sorted((m.group(1) for p in root.iterdir() if (m := re.fullmatch(r"v(\d+\.\d+)\.\d+-local-strict",
                                                                               p.name))),
                     key=lambda v: tuple(int(x) for x in v.split(".")))
    assert OLDEST in shipped, f"kubernetes-validate ships no {OLDEST} schema: {shipped}"
    return (OLDEST, shipped[-1])


def _schema(version: str, name: str) -> Any:
    path = resources.files("kubernetes_validate").joinpath(f"kubernetes-json-schema/v{version}.0-local-strict/{name}")
    return json.loads(path.read_text())


_PATCH = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"required": lambda *_: iter(())})


@cache
def validator(version: str, api_version: str, kind: str, patch: bool) -> jsonschema.protocols.Validator:
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = _schema(version, f"{kind.lower()}-{group}.json")
    docs = (schema, _schema(version, "_definitions.json"))
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        (doc["$id"], referencing.Resource.from_contents(doc)) for doc in docs)
    cls = _PATCH if patch else jsonschema.Draft202012Validator
    return cls(schema, registry=registry)


validated: Counter[tuple[str, str]] = Counter()  # (kind or "kind patch", version) → objects checked this session


def check(obj: Any, api_version: str = "", kind: str = "", patch: bool = False) -> None:
    """Raise AssertionError naming the first schema violation of `obj` under each version in versions();
    api_version and kind default to the object's own (a patch carries none)."""
    api_version, kind = api_version or obj["apiVersion"], kind or obj["kind"]
    for version in versions():
        error = jsonschema.exceptions.best_match(validator(version, api_version, kind, patch).iter_errors(obj))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            raise AssertionError(f"{kind}{' patch' if patch else ''} invalid for Kubernetes {version} at "
                                 f"{where or '(root)'}: {error.message}")
        validated[(f"{kind} patch" if patch else kind, version)] += 1
