"""nodeconf/infra/kube/rbac.yaml read, and what its rules allow a request (the API server's request info:
resource, verb)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[4]
RBAC = REPO / "nodeconf" / "infra" / "kube" / "rbac.yaml"


def rbac_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(RBAC.read_text()) if d]


def permission(method: str, path: str) -> tuple[str, str]:
    """(resource[/subresource], verb) for a core/v1 request (the API server's request info resolver:
    staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go)."""
    if not path.startswith("/api/v1/"):
        return path, method.lower()
    parts = path.removeprefix("/api/v1/").split("/")
    if parts[0] == "namespaces" and len(parts) >= 3:
        parts = parts[2:]
    resource = parts[0] + (f"/{parts[2]}" if len(parts) >= 3 else "")
    verb = {"POST": "create", "DELETE": "delete", "PATCH": "patch", "PUT": "update"}.get(method)
    return resource, verb or ("get" if len(parts) >= 2 else "list")


def allowed(rules: list[dict[str, Any]], resource: str, verb: str) -> bool:
    for rule in rules:
        if resource.startswith("/"):
            if resource in rule.get("nonResourceURLs", ()) and verb in rule["verbs"]:
                return True
        elif set(rule.get("apiGroups", ())) & {"", "security.openshift.io"} and resource in rule["resources"] \
                and verb in rule["verbs"]:
            return True
    return False
