"""Which API refusals of a pod are the behaviour under test (the pod is rejected, as the oracle may predict) and
which belong to the cluster (RBAC, Pod Security, admission webhooks, a new namespace's ServiceAccount).

Only two kinds are rejections: the API server's validation of the pod's resources (422 Invalid, every cause
under `spec.containers[*].resources`, `spec.initContainers[*].resources`, `spec.resources` or `spec.overhead`;
pkg/apis/core/validation/validation.go) and the LimitRanger and ResourceQuota admission plugins (403 Forbidden;
plugin/pkg/admission/limitranger/admission.go, plugin/pkg/admission/resourcequota/controller.go).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nodeconf.nodes.base import NodeError, NotApplicable
from nodeconf.nodes.kube.api import KubeApiError, dig

RESOURCE_FIELD = re.compile(r"^spec\.(?:(?:initContainers|containers)\[\d+\]\.resources|resources|overhead)(?:[.\[]|$)")
# Field paths in an Invalid message when the Status carries no causes: `...is invalid: [spec.x: Invalid ...`.
_MESSAGE_FIELD = re.compile(r"(?:is invalid: \[?|, )(spec[A-Za-z0-9_.\[\]]*): ")
# LimitRanger (minConstraint, maxConstraint, limitRequestRatioConstraint) and ResourceQuota messages.
ADMISSION_MARKERS = ("usage per ", "max limit to request ratio per ", "exceeded quota: ", "failed quota: ",
                     "must specify ")
WEBHOOK_MARKER = "admission webhook "
# serviceaccount admission plugin: the namespace's `default` ServiceAccount is created asynchronously.
SERVICE_ACCOUNT_RACE = "error looking up service account "


def invalid_fields(err: KubeApiError) -> list[str]:
    """The fields an Invalid Status names: its causes, else the field paths in its message."""
    return [c["field"] for c in err.causes if c.get("field")] or _MESSAGE_FIELD.findall(err.message)


def rejection(err: KubeApiError, resize: bool = False) -> str | None:
    """The rejection message when the refusal is the API's resource validation or LimitRange/quota admission;
    None for every other refusal. A resize patch changes resources only, so any Invalid answer to it counts."""
    if WEBHOOK_MARKER in err.message:
        return None
    if err.status == 422 and err.reason in ("Invalid", ""):
        fields = invalid_fields(err)
        if resize or (fields and all(RESOURCE_FIELD.match(f) for f in fields)):
            return err.message
    if err.status == 403 and any(marker in err.message for marker in ADMISSION_MARKERS):
        return err.message
    return None


def is_service_account_race(err: KubeApiError) -> bool:
    return err.status == 403 and SERVICE_ACCOUNT_RACE in err.message


def infrastructure_error(err: KubeApiError, what: str) -> NodeError:
    """A refusal that says nothing about the node: a NodeError naming its likely cause."""
    if WEBHOOK_MARKER in err.message:
        cause = "an admission webhook of the cluster refused it"
    elif SERVICE_ACCOUNT_RACE in err.message:
        cause = "the namespace's default ServiceAccount was not created in time (is the controller manager up?)"
    elif "violates PodSecurity" in err.message:
        cause = "Pod Security admission refused it (the run's namespaces need the privileged level)"
    elif err.status == 403:
        cause = "the user lacks a permission (nodeconf/infra/kube/rbac.yaml lists the ones nodeconf needs)"
    else:
        cause = "the API server refused it for a reason nodeconf does not check"
    return NodeError(f"{what}: {cause}: {err}")


# What the privileged reader pod (hostPID, privileged, the host's /sys/fs/cgroup) needs, by the refusal's words.
READER_NEEDS = (
    ("unable to validate against any security context constraint",
     "OpenShift: the run namespaces' service accounts need the privileged SCC "
     "(nodeconf/infra/kube/rbac.yaml, OpenShift)"),
    ("GKE Warden", "GKE Autopilot admits no privileged pod: run nodeconf on a GKE Standard node pool"),
    ("violates PodSecurity", "Pod Security admission: the run namespaces need pod-security.kubernetes.io/enforce="
                             "privileged (nodeconf sets it; a cluster policy or exemption list overrides it)"),
    (WEBHOOK_MARKER, "a policy engine (Gatekeeper, Kyverno, ...) refused it: exempt namespaces labelled "
                     "app.kubernetes.io/managed-by=nodeconf from its privileged, hostPID and hostPath rules"),
    ("cannot create resource", "the role needs `create` on pods in the run namespaces (nodeconf/infra/kube/rbac.yaml)"),
)


def reader_refusal(err: KubeApiError, node: str) -> NodeError:
    """The refused reader pod in one line: what the cluster must allow, then the API server's words."""
    need = next((text for marker, text in READER_NEEDS if marker in err.message),
                "the cluster refused a privileged pod with hostPID and a hostPath mount of /sys/fs/cgroup")
    return NodeError(f"the evidence reader cannot run on node {node}: {need} ({err.status}: {err.message})")


# Pod fields the API server drops without an error while their feature gate is off on it (the strategies'
# dropDisabledFields, pkg/api/pod/util.go): field path → gate.
GATED_POD_FIELDS = {("spec", "resources"): "PodLevelResources"}


def dropped_gated_field(sent: Mapping[str, Any], stored: Mapping[str, Any]) -> NotApplicable | None:
    """NotApplicable naming the field and gate when the API server stored the pod without a gated field that was
    sent (its gate is off there: the check needs it), else None."""
    for path, gate in GATED_POD_FIELDS.items():
        if dig(sent, *path) and not dig(stored, *path):
            return NotApplicable(f"the API server dropped {'.'.join(path)} from the pod (its {gate} feature gate is "
                                 f"off): this check needs {gate} on the API server")
    return None
