"""Well-formed pods the API server refuses, and its warnings (pkg/apis/core/validation/validation.go)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from nodeconf.manifest import CPU, MEMORY, SWAP, Container, Pod, Resources
from nodeconf.quantity import Quantity
from nodeconf.semantics.cgroup_paths import is_safe_uid
from nodeconf.semantics.hugepages import is_hugepage_resource, page_size
from nodeconf.semantics.pod_resources import aggregate_containers, is_pod_level_resource
from nodeconf.semantics.profile import Profile

# apimachinery/pkg/util/validation: RFC 1123 label and subdomain.
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Standard container resources (pkg/apis/core/helper IsStandardContainerResourceName), plus swap, which the
# swap oracle validates itself (KEP-5359).
_STANDARD = {CPU, MEMORY, "ephemeral-storage", SWAP}
# ValidatePodSpec: activeDeadlineSeconds in [1, math.MaxInt32] (validation.InclusiveRangeError).
_MAX_INT32 = 2**31 - 1


def _label_error(path: str, value: str) -> str | None:
    if len(value) > 63 or not _LABEL.fullmatch(value):
        return (
            f'{path}: Invalid value: "{value}": a lowercase RFC 1123 label must consist of lower case '
            "alphanumeric characters or '-', start and end with an alphanumeric character, at most 63 long"
        )
    return None


def _subdomain_error(path: str, value: str) -> str | None:
    if len(value) > 253 or not _SUBDOMAIN.fullmatch(value):
        return (
            f'{path}: Invalid value: "{value}": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def _known_resource(name: str) -> bool:
    return name in _STANDARD or name.startswith("hugepages-") or "/" in name


def _resource_errors(resources: Resources, path: str, pod_level: bool) -> Iterator[str]:
    """ValidateResourceRequirements / validatePodResourceRequirements: names, signs, request ≤ limit."""
    for kind, items in (("limits", resources.limits), ("requests", resources.requests)):
        for name, q in items.items():
            if pod_level and not is_pod_level_resource(name) and name != SWAP:
                yield f'{path}.{kind}[{name}]: Unsupported value: "{name}": supported values: "cpu", "memory"'
            elif not _known_resource(name):
                yield f'{path}.{kind}[{name}]: Invalid value: "{name}": must be a standard resource type'
            if q.amount < 0:
                yield f'{path}.{kind}[{name}]: Invalid value: "{q}": must be greater than or equal to 0'
    for name, request in resources.requests.items():
        limit = resources.limits.get(name)
        if is_hugepage_resource(name) and not pod_level:
            if limit is None:
                yield f"{path}.limits: Required value: Limit must be set for non overcommitable resources"
            elif request.amount != limit.amount:
                yield f'{path}.requests: Invalid value: "{request}": must be equal to {name} limit of {limit}'
        elif name != SWAP and limit is not None and request > limit:
            yield (
                f'{path}.requests: Invalid value: "{request}": must be less than or equal to '
                f"{name} limit of {limit}"
            )
    if not pod_level:
        yield from _hugepage_errors(resources, path)


def _hugepage_errors(resources: Resources, path: str) -> Iterator[str]:
    """Huge pages in a container: whole pages of a valid size, and only beside a cpu or memory request or limit
    (validation.go ValidateContainerResourceRequirements, validateResourceQuantityHugePageValue: new pods never
    get AllowIndivisibleHugePagesValues). Requests must equal limits (above: hugepages are not overcommitable,
    helper.IsOvercommitAllowed)."""
    named = False
    for kind, items in (("limits", resources.limits), ("requests", resources.requests)):
        for name, q in items.items():
            if not is_hugepage_resource(name):
                continue
            named = True
            size = page_size(name)
            if size is None or q.amount.denominator != 1 or q.amount % size:
                yield f'{path}.{kind}[{name}]: Invalid value: "{q}": {q} is not positive integer multiple of {name}'
    if named and not {CPU, MEMORY} & {*resources.requests, *resources.limits}:
        yield f"{path}: Forbidden: HugePages require cpu or memory"


def _container_errors(c: Container, path: str, seen: set[str]) -> Iterator[str]:
    error = _label_error(f"{path}.name", c.name)
    if error:
        yield error
    if c.name in seen:
        yield f'{path}.name: Duplicate value: "{c.name}"'
    seen.add(c.name)
    yield from _resource_errors(c.resources, f"{path}.resources", pod_level=False)


def _pod_level_errors(pod: Pod, profile: Profile) -> Iterator[str]:
    """Pod-level resources against the containers (validation.go validatePodResources and
    validatePodResourceConsistency, read at kubernetes 000f260).

    Requests: the pod-level request must cover the containers' aggregate request (AggregateContainerRequests:
    regular containers and sidecars summed, or the largest init container if bigger). Limits: each regular
    container's own limit must not exceed the pod-level limit; limits are never summed, so containers that
    each take the whole pod limit are valid, and init containers are not checked by this rule. Both rules cover
    pod-level huge pages too (IsSupportedPodLevelResource, kubernetes#130577): a hugepages request the pod names
    covers the containers' aggregate, a container's hugepages limit stays within the pod's of that size.
    """
    if pod.resources is None:
        return
    if not profile.gate("PodLevelResources"):
        yield "spec.resources: Forbidden: pod-level resources need the PodLevelResources feature gate"
        return
    yield from _resource_errors(pod.resources, "spec.resources", pod_level=True)
    requests = pod.resources.requests
    aggregate = aggregate_containers(pod, limits=False)
    for name in requests:
        if is_pod_level_resource(name) and name in aggregate and requests[name].amount < aggregate[name]:
            yield (
                f'spec.resources.requests[{name}]: Invalid value: "{requests[name]}": must be greater than '
                f"or equal to aggregate container requests of {Quantity.of(aggregate[name])}"
            )
    for i, c in enumerate(pod.containers):
        for name in filter(is_pod_level_resource, pod.resources.limits):
            pod_limit, own = pod.resources.limit(name), c.resources.limit(name)
            if pod_limit is not None and own is not None and own > pod_limit:
                yield (
                    f'spec.resources.containers[{i}][{name}].limits: Invalid value: "{own}": must be less than '
                    f"or equal to pod limits of {pod_limit}"
                )


def pod_errors(pod: Pod, profile: Profile) -> tuple[str, ...]:
    """Why the API server would refuse this (API-defaulted) pod; empty when it is valid."""
    errors: list[str] = []
    for path, value, check in (
        ("metadata.name", pod.name, _subdomain_error),
        ("metadata.namespace", pod.namespace, _label_error),
    ):
        error = check(path, value)
        if error:
            errors.append(error)
    if not is_safe_uid(pod.uid):
        errors.append(f'metadata.uid: Invalid value: "{pod.uid}": only letters, digits and dashes')
    # validation.go validateOverhead: each overhead quantity must be non-negative (ValidateResourceQuantityValue).
    errors.extend(f'spec.overhead[{name}]: Invalid value: "{q}": must be greater than or equal to 0'
                  for name, q in pod.overhead.items() if q.amount < 0)
    seen: set[str] = set()
    for prefix, containers in (("spec.initContainers", pod.init_containers), ("spec.containers", pod.containers)):
        for i, c in enumerate(containers):
            errors.extend(_container_errors(c, f"{prefix}[{i}]", seen))
    for i, c in enumerate(pod.containers):
        if c.restart_policy is not None:
            errors.append(f"spec.containers[{i}].restartPolicy: Forbidden: may not be set for non-init containers")
    for i, c in enumerate(pod.init_containers):
        if c.restart_policy not in (None, "Always"):
            errors.append(
                f'spec.initContainers[{i}].restartPolicy: Unsupported value: "{c.restart_policy}": '
                'supported values: "Always"'
            )
    deadline = pod.active_deadline_seconds
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        errors.append(
            f'spec.activeDeadlineSeconds: Invalid value: {deadline}: must be between 1 and {_MAX_INT32}, inclusive'
        )
    errors.extend(_pod_level_errors(pod, profile))
    return tuple(errors)


def pod_warnings(pod: Pod) -> tuple[str, ...]:
    """API server warnings: a fractional byte memory value such as `400m` (pkg/api/pod/warnings.go)."""
    warnings = []
    levels = [(f"spec.containers[{i}]", c.resources) for i, c in enumerate(pod.containers)]
    levels += [(f"spec.initContainers[{i}]", c.resources) for i, c in enumerate(pod.init_containers)]
    if pod.resources is not None:
        levels.append(("spec", pod.resources))
    for path, resources in levels:
        for kind, items in (("requests", resources.requests), ("limits", resources.limits)):
            q = items.get(MEMORY)
            if q is not None and q.amount.denominator != 1:
                warnings.append(
                    f'{path}.resources.{kind}[memory]: fractional byte value "{q}" is invalid, must be an integer'
                )
    return tuple(warnings)
