"""Namespace admission: LimitRanger defaults and bounds, ResourceQuota usage (seed requests-limits-qos)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from nodeconf.manifest import CPU, MEMORY, Container, LimitRange, LimitRangeItem, Pod, ResourceQuota, Resources
from nodeconf.quantity import Quantity, format_amount
from nodeconf.semantics.expectation import QosClass
from nodeconf.semantics.hugepages import PREFIX as HUGEPAGES_PREFIX
from nodeconf.semantics.pod_resources import aggregate_containers, pod_limits, pod_requests, with_api_defaults
from nodeconf.semantics.profile import Profile, profile_for
from nodeconf.semantics.qos import pod_qos

Amounts = dict[str, Fraction]
# quota_used for one quota over the admitted pods; admit() takes an incremental one from expect() so that
# admitting N pods sums each pod once instead of N times.
QuotaUsed = Callable[[ResourceQuota, Sequence[Pod]], Amounts]
_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"),
                     (-6, "u"), (-9, "n"))
# Resources whose quota forces every container to state them (quota/v1/evaluator/core/pods.go validationSet).
_MUST_SPECIFY = {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
# Compute resources a pod is charged for (pods.go podComputeUsageHelper).
_COMPUTE = (CPU, MEMORY, "ephemeral-storage")


@dataclass(frozen=True)
class AdmissionResult:
    """The pod as the API server stores it (defaults applied) and the refusals; admitted when none."""

    pod: Pod
    errors: tuple[str, ...] = ()

    @property
    def admitted(self) -> bool:
        return not self.errors


def canonical(amount: Fraction, like: Quantity | None) -> str:
    """Quantity.String(): the binary form when `like` was written with a binary suffix, else decimal SI."""
    if amount == 0:
        return "0"
    binary = like is not None and like.text.endswith(_BINARY_SUFFIXES)
    if binary and amount.denominator == 1:
        return format_amount(amount)
    for exponent, suffix in _DECIMAL_SUFFIXES:
        mantissa = amount / Fraction(10) ** exponent
        if mantissa.denominator == 1:
            return f"{mantissa.numerator}{suffix}"
    return format_amount(amount)


def _forbidden(pod: Pod, messages: Sequence[str]) -> str:
    """admission.NewForbidden around an aggregate: one message bare, several as "[a, b]" (utilerrors)."""
    body = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    return f'pods "{pod.name}" is forbidden: {body}'


def item_defaults(item: LimitRangeItem) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    """Default limit ← max, default request ← default limit ← min (core/v1 SetDefaults_LimitRangeItem)."""
    limits = {**item.max, **item.default}
    requests = {**item.min, **limits, **item.default_request}
    return limits, requests


def _with_defaults(container: Container, items: Sequence[LimitRangeItem]) -> Container:
    """Fill only absent requests and limits (limitranger mergeContainerResources)."""
    limits = dict(container.resources.limits)
    requests = dict(container.resources.requests)
    for item in items:
        default_limits, default_requests = item_defaults(item)
        for name, q in default_limits.items():
            limits.setdefault(name, q)
        for name, q in default_requests.items():
            requests.setdefault(name, q)
    return replace(container, resources=Resources(requests=requests, limits=limits))


def _ratio_error(kind: str, name: str, ratio: Quantity, request: Quantity | None,
                 limit: Quantity | None) -> str | None:
    """limitRequestRatioConstraint (plugin/pkg/admission/limitranger/admission.go)."""
    shown = canonical(ratio.amount, ratio)
    if request is None or request.is_zero():
        return f"{name} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0"
    if limit is None or limit.is_zero():
        return f"{name} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0"
    observed = limit.amount / request.amount
    if observed > ratio.amount:
        return (f"{name} max limit to request ratio per {kind} is {shown}, "
                f"but provided ratio is {float(observed):f}")
    return None


def bound_errors(kind: str, item: LimitRangeItem, requests: Mapping[str, Quantity],
                 limits: Mapping[str, Quantity]) -> list[str]:
    """minConstraint, maxConstraint and limitRequestRatioConstraint of one item (limitranger admission.go)."""
    errors: list[str] = []
    for name, low in item.min.items():
        req, lim = requests.get(name), limits.get(name)
        shown = canonical(low.amount, low)
        if req is None:
            errors.append(f"minimum {name} usage per {kind} is {shown}.  No request is specified")
        elif req < low:
            errors.append(f"minimum {name} usage per {kind} is {shown}, but request is {canonical(req.amount, req)}")
        elif lim is not None and lim < low:
            errors.append(f"minimum {name} usage per {kind} is {shown}, but limit is {canonical(lim.amount, lim)}")
    for name, high in item.max.items():
        req, lim = requests.get(name), limits.get(name)
        shown = canonical(high.amount, high)
        if lim is None:
            errors.append(f"maximum {name} usage per {kind} is {shown}.  No limit is specified")
        elif lim > high:
            errors.append(f"maximum {name} usage per {kind} is {shown}, but limit is {canonical(lim.amount, lim)}")
        elif req is not None and req > high:
            errors.append(f"maximum {name} usage per {kind} is {shown}, but request is {canonical(req.amount, req)}")
    for name, ratio in item.max_limit_request_ratio.items():
        error = _ratio_error(kind, name, ratio, requests.get(name), limits.get(name))
        if error is not None:
            errors.append(error)
    return errors


def _quantities(amounts: Amounts) -> dict[str, Quantity]:
    return {name: Quantity.of(amount) for name, amount in amounts.items()}


def limit_range_errors(pod: Pod, ranges: Sequence[LimitRange]) -> list[str]:
    """Container items check every container; Pod items check the pod's summed requests and limits."""
    errors: list[str] = []
    for limit_range in ranges:
        for item in limit_range.limits:
            if item.type == "Container":
                for c in pod.all_containers:
                    errors += bound_errors("Container", item, c.resources.requests, c.resources.limits)
            elif item.type == "Pod":
                errors += bound_errors("Pod", item, _quantities(aggregate_containers(pod, limits=False)),
                                       _quantities(aggregate_containers(pod, limits=True)))
    return errors


def quota_usage(pod: Pod, profile: Profile) -> Amounts:
    """What one pod charges to a quota (quota/v1/evaluator/core/pods.go PodUsageFunc, podComputeUsageHelper), zeros
    removed; hugepages are charged as `hugepages-<size>` and `requests.hugepages-<size>`, never as limits."""
    usage: Amounts = {"pods": Fraction(1), "count/pods": Fraction(1)}
    requests, limits = pod_requests(pod, profile), pod_limits(pod, profile)
    for name in _COMPUTE:
        if requests.get(name):
            usage[name] = usage[f"requests.{name}"] = requests[name]
        if limits.get(name):
            usage[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():  # requestedResourcePrefixes: hugepages-<size> counts as a request only
        if name.startswith(HUGEPAGES_PREFIX) and amount:
            usage[name] = usage[f"requests.{name}"] = amount
    return usage


def is_terminating(pod: Pod) -> bool:
    """activeDeadlineSeconds set and ≥ 0 (quota/v1/evaluator/core/pods.go isTerminating)."""
    return pod.active_deadline_seconds is not None and pod.active_deadline_seconds >= 0


def _scope_matches(quota: ResourceQuota, pod: Pod, qos: QosClass) -> bool:
    """Every scope must match: Terminating/NotTerminating by activeDeadlineSeconds, BestEffort/NotBestEffort by
    QoS class (pods.go podMatchesScopeFunc). Other scopes (PriorityClass, CrossNamespacePodAffinity) are not
    modelled and match every pod."""
    matches = {
        "Terminating": is_terminating(pod),
        "NotTerminating": not is_terminating(pod),
        "BestEffort": qos is QosClass.BEST_EFFORT,
        "NotBestEffort": qos is not QosClass.BEST_EFFORT,
    }
    return all(matches.get(scope, True) for scope in quota.scopes)


def quota_used(quota: ResourceQuota, pods: Sequence[Pod], profile: Profile) -> Amounts:
    """status.used: every hard resource, summed over the pods the quota's scopes select (quota controller)."""
    used: Amounts = {k: Fraction(0) for k in quota.hard}
    for pod in pods:
        if pod.namespace == quota.namespace and _scope_matches(quota, pod, pod_qos(pod, profile)):
            for k, v in quota_usage(pod, profile).items():
                if k in used:
                    used[k] += v
    return used


def _container_usage_names(container: Container) -> set[str]:
    """Resource names a container states, as quota sees them (pods.go podComputeUsageHelper)."""
    names: set[str] = set()
    for name in container.resources.requests:
        if name in (CPU, MEMORY):
            names |= {name, f"requests.{name}"}
    for name in container.resources.limits:
        if name in (CPU, MEMORY):
            names.add(f"limits.{name}")
    return names


def _like(pod: Pod, quota: ResourceQuota, key: str) -> Quantity | None:
    """The quantity whose format a printed amount takes: the pod's own spelling, else the quota's."""
    resource = key.split(".", 1)[-1] if key.startswith(("requests.", "limits.")) else key
    side = "limits" if key.startswith("limits.") else "requests"
    for c in pod.all_containers:
        found = (c.resources.limits if side == "limits" else c.resources.requests).get(resource)
        if found is not None:
            return found
    return quota.hard.get(key)


def _pretty(values: Mapping[str, Fraction], keys: Sequence[str], pod: Pod, quota: ResourceQuota) -> str:
    """quota prettyPrint: sorted `name=quantity` pairs joined by commas."""
    return ",".join(f"{k}={canonical(values[k], _like(pod, quota, k))}" for k in keys)


def quota_errors(pod: Pod, quotas: Sequence[ResourceQuota], others: Sequence[Pod], profile: Profile,
                 used_by: QuotaUsed | None = None) -> list[str]:
    """"must specify" and "exceeded quota" of the first quota the pod breaks (resourcequota controller.go)."""
    qos = pod_qos(pod, profile)
    for quota in quotas:
        if not _scope_matches(quota, pod, qos):
            continue
        required = set(quota.hard) & _MUST_SPECIFY
        missing: set[str] = set()
        for c in pod.all_containers:
            missing |= required - _container_usage_names(c)
        if missing:
            return [f"failed quota: {quota.name}: must specify {','.join(sorted(missing))}"]
        requested = {k: v for k, v in quota_usage(pod, profile).items() if k in quota.hard}
        used = used_by(quota, others) if used_by is not None else quota_used(quota, others, profile)
        exceeded = sorted(k for k, v in requested.items() if used[k] + v > quota.hard[k].amount)
        if exceeded:
            hard = {k: quota.hard[k].amount for k in exceeded}
            return [f"exceeded quota: {quota.name}, requested: {_pretty(requested, exceeded, pod, quota)}, "
                    f"used: {_pretty(used, exceeded, pod, quota)}, limited: {_pretty(hard, exceeded, pod, quota)}"]
    return []


def admit(pod: Pod, namespace_objects: Sequence[LimitRange | ResourceQuota], admitted_so_far: Sequence[Pod],
          profile: Profile | None = None, used_by: QuotaUsed | None = None) -> AdmissionResult:
    """API defaulting, then LimitRanger (mutate + validate), then ResourceQuota against the admitted pods.

    Source: seed requests-limits-qos "LimitRange"/"ResourceQuota"/hands-on; plugin/pkg/admission/limitranger,
    plugin/pkg/admission/resourcequota. Only objects and pods of the pod's namespace take part.
    """
    profile = profile or profile_for()
    ranges = [o for o in namespace_objects if isinstance(o, LimitRange) and o.namespace == pod.namespace]
    quotas = [o for o in namespace_objects if isinstance(o, ResourceQuota) and o.namespace == pod.namespace]
    defaulted = with_api_defaults(pod)
    items = [i for r in ranges for i in r.limits if i.type == "Container"]
    if items:
        defaulted = defaulted.with_containers(
            [_with_defaults(c, items) for c in defaulted.containers],
            [_with_defaults(c, items) for c in defaulted.init_containers],
        )
    range_errors = limit_range_errors(defaulted, ranges)
    if range_errors:
        return AdmissionResult(defaulted, (_forbidden(defaulted, range_errors),))
    # quota_used sums only the quota's namespace (= the pod's), so the admitted pods need no filtering here.
    failures = quota_errors(defaulted, quotas, admitted_so_far, profile, used_by)
    return AdmissionResult(defaulted, tuple(_forbidden(defaulted, [f]) for f in failures))
