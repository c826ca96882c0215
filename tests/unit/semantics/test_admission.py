"""Namespace admission against the article: LimitRange defaults and bounds, the quota walk-through, scopes."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from nodeconf.loader import load_objects
from nodeconf.manifest import Container, LimitRange, LimitRangeItem, Pod, ResourceQuota, Resources
from nodeconf.quantity import Quantity
from nodeconf.semantics.admission import admit, canonical, item_defaults, quota_used
from nodeconf.semantics.profile import profile_for

RL = Path(__file__).resolve().parents[3] / "workloads" / "requests-limits"
MI = 2**20


def objects(*names: str) -> list[Pod | LimitRange | ResourceQuota]:
    return load_objects([RL / n for n in names])


NAMESPACE = [o for o in objects("limitrange.yaml", "quota.yaml") if not isinstance(o, Pod)]
QUOTA_TEST_PODS = {p.name: p for p in objects("quota-test-pods.yaml") if isinstance(p, Pod)}


def q(text: str) -> Quantity:
    return Quantity.parse(text)


def plain_values(resources: Resources) -> dict[str, dict[str, str]]:
    return {"limits": {k: str(v) for k, v in resources.limits.items()},
            "requests": {k: str(v) for k, v in resources.requests.items()}}


def test_limitrange_default_limit_falls_back_to_max() -> None:
    (limit_range,) = [o for o in NAMESPACE if isinstance(o, LimitRange)]
    limits, requests = item_defaults(limit_range.limits[0])
    assert {k: str(v) for k, v in limits.items()} == {"cpu": "2", "memory": "128Mi"}
    assert {k: str(v) for k, v in requests.items()} == {"cpu": "100m", "memory": "128Mi"}


def test_plain_pod_gets_the_limitrange_defaults() -> None:
    # Article: {"limits":{"cpu":"2","memory":"128Mi"},"requests":{"cpu":"100m","memory":"128Mi"}}
    result = admit(QUOTA_TEST_PODS["plain"], NAMESPACE, [])
    assert result.admitted
    assert plain_values(result.pod.containers[0].resources) == {
        "limits": {"cpu": "2", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}


@pytest.mark.parametrize(
    "name, message",
    [
        ("huge", 'pods "huge" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi'),
        ("tiny", 'pods "tiny" is forbidden: minimum memory usage per Container is 32Mi, but request is 16Mi'),
    ],
)
def test_article_limitrange_refusals(name: str, message: str) -> None:
    assert admit(QUOTA_TEST_PODS[name], NAMESPACE, []).errors == (message,)


def test_article_quota_walkthrough_20_admitted_21st_refused() -> None:
    (template,) = objects("big-deployment.yaml")
    assert isinstance(template, Pod)
    admitted: list[Pod] = []
    refused: list[str] = []
    for i in range(40):
        result = admit(replace(template, name=f"big-{i:02d}", uid=""), NAMESPACE, admitted)
        if result.admitted:
            admitted.append(result.pod)
        else:
            refused.extend(result.errors)
    assert len(admitted) == 20
    assert len(refused) == 20
    assert refused[0] == (
        'pods "big-20" is forbidden: exceeded quota: budget, requested: pods=1,requests.cpu=100m, '
        "used: pods=20,requests.cpu=2, limited: pods=20,requests.cpu=2"
    )
    # Article's `describe resourcequota budget` after the 20 pods.
    (budget,) = [o for o in NAMESPACE if isinstance(o, ResourceQuota)]
    used = quota_used(budget, admitted, profile_for())
    assert used == {
        "count/jobs.batch": 0, "limits.memory": 2560 * MI, "persistentvolumeclaims": 0, "pods": 20,
        "requests.cpu": 2, "requests.ephemeral-storage": 0, "requests.memory": 2560 * MI, "requests.storage": 0,
    }
    assert canonical(used["limits.memory"], q("4Gi")) == "2560Mi"


@pytest.mark.parametrize(
    ("file", "refused", "message", "admitted"),
    [
        pytest.param("admission-requests-quota.yaml", "no-requests",
                     'pods "no-requests" is forbidden: failed quota: requests-only: must specify '
                     "requests.cpu,requests.memory", "with-requests", id="quota-without-limitrange-requires-requests"),
        pytest.param("admission-besteffort-quota.yaml", "besteffort",
                     'pods "besteffort" is forbidden: exceeded quota: no-besteffort, requested: pods=1, used: pods=0, '
                     "limited: pods=0", "burstable", id="besteffort-scope-forbids-besteffort-pods"),
        pytest.param("admission-ratio-limitrange.yaml", "above-ratio",
                     'pods "above-ratio" is forbidden: memory max limit to request ratio per Container is 2, '
                     "but provided ratio is 3.000000", "within-ratio", id="max-limit-request-ratio"),
    ],
)
def test_namespace_refuses_one_pod_and_admits_the_other(file: str, refused: str, message: str,
                                                         admitted: str) -> None:
    found = objects(file)
    ns = [o for o in found if not isinstance(o, Pod)]
    pods = {p.name: p for p in found if isinstance(p, Pod)}
    assert admit(pods[refused], ns, []).errors == (message,)
    assert admit(pods[admitted], ns, []).admitted


def pod(name: str, namespace: str, *containers: tuple[dict[str, str], dict[str, str]]) -> Pod:
    return Pod(name=name, namespace=namespace, containers=tuple(
        Container(f"c{i}", resources=Resources(requests={k: q(v) for k, v in r.items()},
                                               limits={k: q(v) for k, v in lim.items()}))
        for i, (r, lim) in enumerate(containers)))


def test_not_besteffort_scope_ignores_besteffort_pods() -> None:
    quota = ResourceQuota("nb", "ns", hard={"pods": q("1")}, scopes=("NotBestEffort",))
    besteffort = pod("be", "ns", ({}, {}))
    burstable = pod("b", "ns", ({"cpu": "100m"}, {}))
    assert admit(besteffort, [quota], [burstable]).admitted
    assert admit(replace(burstable, name="b2"), [quota], [besteffort, burstable]).errors == (
        'pods "b2" is forbidden: exceeded quota: nb, requested: pods=1, used: pods=1, limited: pods=1',
    )


def test_other_namespaces_do_not_count() -> None:
    quota = ResourceQuota("one", "a", hard={"pods": q("1")})
    assert admit(pod("x", "b", ({}, {})), [quota], [pod("y", "b", ({}, {}))]).admitted
    assert not admit(pod("x", "a", ({}, {})), [quota], [pod("y", "a", ({}, {}))]).admitted


def test_pod_item_sums_containers_and_errors_aggregate() -> None:
    # Errors come in the LimitRange's item order (limitranger PodValidateLimitFunc), aggregated as "[a, b]".
    limit_range = LimitRange("lr", "ns", limits=(
        LimitRangeItem(type="Pod", max={"memory": q("1Gi")}),
        LimitRangeItem(type="Container", min={"cpu": q("200m")}),
    ))
    p = pod("two", "ns", ({"memory": "600Mi", "cpu": "100m"}, {"memory": "600Mi"}),
            ({"memory": "600Mi", "cpu": "300m"}, {"memory": "600Mi"}))
    assert admit(p, [limit_range], []).errors == (
        'pods "two" is forbidden: [maximum memory usage per Pod is 1Gi, but limit is 1200Mi, '
        "minimum cpu usage per Container is 200m, but request is 100m]",
    )


def test_limit_alone_defaults_request_before_limitrange() -> None:
    item = LimitRangeItem(type="Container", default_request={"memory": q("1Gi")})
    limit_range = LimitRange("lr", "ns", limits=(item,))
    result = admit(pod("l", "ns", ({}, {"memory": "64Mi"})), [limit_range], [])
    assert str(result.pod.containers[0].resources.requests["memory"]) == "64Mi"


@pytest.mark.parametrize(
    "amount, like, text",
    [
        (Fraction(2), "2", "2"), (Fraction(21, 10), "100m", "2100m"), (Fraction(2560 * MI), "128Mi", "2560Mi"),
        (Fraction(2_560_000_000), "128M", "2560M"), (Fraction(1000), "1", "1k"), (Fraction(3 * 2**30), "1Gi", "3Gi"),
    ],
    ids=["int", "milli", "binary", "decimal-mega", "kilo", "gi"],
)
def test_canonical_quantity_strings(amount: Fraction, like: str, text: str) -> None:
    assert canonical(amount, q(like)) == text


def test_admit_below_terminating_quota_limit() -> None:
    """Upstream resourcequota admission_test TestAdmitBelowTerminatingQuotaLimit: a pod with activeDeadlineSeconds
    is charged to the Terminating quota only; the NotTerminating one does not see it (pods.go isTerminating)."""
    terminating = ResourceQuota("quota-terminating", "ns", hard={"pods": q("1")}, scopes=("Terminating",))
    not_terminating = ResourceQuota("quota-non-terminating", "ns", hard={"pods": q("1")}, scopes=("NotTerminating",))
    deadline = replace(pod("d", "ns", ({"cpu": "100m"}, {})), active_deadline_seconds=60)
    plain = pod("p", "ns", ({"cpu": "100m"}, {}))
    quotas = [terminating, not_terminating]
    assert quota_used(terminating, [deadline, plain], profile_for())["pods"] == 1
    assert quota_used(not_terminating, [deadline, plain], profile_for())["pods"] == 1
    assert admit(replace(deadline, name="d2"), quotas, [deadline, plain]).errors == (
        'pods "d2" is forbidden: exceeded quota: quota-terminating, requested: pods=1, used: pods=1, '
        "limited: pods=1",)
    assert admit(replace(plain, name="p2"), quotas, [deadline]).admitted


def test_hugepages_are_charged_as_requests_to_a_quota() -> None:
    """Upstream quota/v1/evaluator/core/pods.go podComputeUsageHelper (requestedResourcePrefixes): a hugepages
    limit, defaulted to the request, is charged as `hugepages-2Mi` and `requests.hugepages-2Mi`; nothing as limits."""
    quota = ResourceQuota("huge", "ns", hard={"requests.hugepages-2Mi": q("6Mi"), "hugepages-2Mi": q("6Mi")})
    first = pod("h1", "ns", ({}, {"memory": "64Mi", "hugepages-2Mi": "4Mi"}))
    admitted = admit(first, [quota], []).pod
    assert quota_used(quota, [admitted], profile_for()) == {"requests.hugepages-2Mi": 4 * MI, "hugepages-2Mi": 4 * MI}
    assert admit(replace(first, name="h2"), [quota], [admitted]).errors == (
        'pods "h2" is forbidden: exceeded quota: huge, requested: hugepages-2Mi=4Mi,requests.hugepages-2Mi=4Mi, '
        "used: hugepages-2Mi=4Mi,requests.hugepages-2Mi=4Mi, limited: hugepages-2Mi=6Mi,requests.hugepages-2Mi=6Mi",)
