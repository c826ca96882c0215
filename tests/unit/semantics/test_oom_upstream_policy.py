"""oom_score_adj against the cases of upstream's pkg/kubelet/qos/policy_test.go TestGetContainerOOMScoreAdjust.

Each case keeps upstream's name as its id and its [low, high] range per container; like upstream, the function
is called directly (some of these pods ask more cpu at container level than at pod level, which API validation
would refuse; test_pod_level_validation covers that rule). Not mirrored: "memory-limit-cpu-request", whose pod is
not API-defaulted upstream (a memory limit alone would default the request, which nodeconf always applies).
"""

from __future__ import annotations

from typing import Any

import pytest

from nodeconf.manifest import Pod
from nodeconf.semantics.oom import oom_score_adj
from nodeconf.semantics.pod_resources import with_api_defaults
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.qos import pod_qos
from suites.toolkit.builders import container as ctr
from suites.toolkit.builders import pod

PROFILE = profile_for("1.38")
STANDARD = 8_000_000_000  # standardMemoryAmount
MEM_REQ = str(STANDARD // 8)  # sampleDefaultMemRequest
MEM_LIM = str(1000 + STANDARD // 8)  # sampleDefaultMemLimit
POD_REQ = str(STANDARD // 4)  # sampleDefaultPodMemRequest
POD_LIM = str(1000 + STANDARD // 4)  # sampleDefaultPodMemLimit
ALWAYS = {"restartPolicy": "Always"}


def sample(name: str, request: str = MEM_REQ, **extra: Any) -> dict[str, Any]:
    """sampleContainer / sampleInitContainer / the sidecars: memory request and the default memory limit."""
    return ctr(name, {"memory": request}, {"memory": MEM_LIM}, **extra)


def pod_level(limit: str, *containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (),
              request: str = POD_REQ) -> Pod:
    return pod(*containers, init=init, resources={"requests": {"cpu": "5m", "memory": request},
                                                  "limits": {"cpu": "5m", "memory": limit}})


def both(name: str, cpu_req: str, mem_req: str, cpu_lim: str, mem_lim: str, **extra: Any) -> dict[str, Any]:
    return ctr(name, {"cpu": cpu_req, "memory": mem_req}, {"cpu": cpu_lim, "memory": mem_lim}, **extra)


CASES = [
    ("cpu-limit", pod(ctr("cpu-limit", None, {"cpu": "10"})), 4_000_000_000, {"cpu-limit": (999, 999)}),
    ("zero-memory-limit", pod(ctr("zero-memory-limit", None, {"memory": "0"})), 7230457451,
     {"zero-memory-limit": (1000, 1000)}),
    ("no-request-limit", pod(ctr("no-request-limit")), 4_000_000_000, {"no-request-limit": (1000, 1000)}),
    ("equal-request-limit-cpu-memory",
     pod(both("equal-request-limit-cpu-memory", "5m", "10G", "5m", "10G")), 123456789,
     {"equal-request-limit-cpu-memory": (-997, -997)}),
    ("cpu-unlimited-memory-limited-with-requests",
     pod(ctr("cpu-unlimited-memory-limited-with-requests", {"memory": str(STANDARD // 2), "cpu": "5m"},
             {"memory": "10G"})), STANDARD, {"cpu-unlimited-memory-limited-with-requests": (495, 505)}),
    ("request-no-limit", pod(ctr("request-no-limit", {"memory": str(STANDARD - 1), "cpu": "5m"})), STANDARD,
     {"request-no-limit": (3, 3)}),
    ("cluster-critical", pod(ctr("cluster-critical"), priorityClassName="system-cluster-critical",
                             priority=2_000_000_000), 4_000_000_000, {"cluster-critical": (1000, 1000)}),
    ("node-critical", pod(ctr("node-critical"), priorityClassName="system-node-critical", priority=2_000_001_000),
     4_000_000_000, {"node-critical": (-997, -997)}),
    ("burstable-unique-container-pod", pod(sample("burstable-unique-container")), STANDARD,
     {"burstable-unique-container": (875, 880)}),
    ("burstable-mixed-unique-main-container-pod", pod(sample("main-1"), init=(sample("init-container"),)),
     STANDARD, {"init-container": (875, 880), "main-1": (875, 880)}),
    ("burstable-mixed-multi-container-small-sidecar-pod",
     pod(sample("main-1"), init=(sample("init-container"),
                                 sample("sidecar-small-container", str(STANDARD // 20), **ALWAYS))),
     STANDARD, {"init-container": (875, 880), "sidecar-small-container": (875, 875), "main-1": (875, 875)}),
    ("burstable-mixed-multi-container-sample-request-pod",
     pod(sample("main-1"), init=(sample("init-container"), sample("sidecar-container", **ALWAYS))),
     STANDARD, {"init-container": (875, 880), "sidecar-container": (875, 875), "main-1": (875, 875)}),
    ("burstable-mixed-multi-container-big-sidecar-container-pod",
     pod(sample("main-1"), init=(sample("init-container"),
                                 sample("sidecar-big-container", str(STANDARD // 2), **ALWAYS))),
     STANDARD, {"init-container": (875, 880), "sidecar-big-container": (500, 500), "main-1": (875, 875)}),
    ("guaranteed-pod-resources-no-container-resources",
     pod_level(POD_REQ, ctr("no-request-limit-1"), ctr("no-request-limit-2")), 4_000_000_000,
     {"no-request-limit-1": (-997, -997), "no-request-limit-2": (-997, -997)}),
    ("guaranteed-pod-resources-equal-container-resources",
     pod_level(POD_REQ, both("guaranteed-container-1", "5m", MEM_REQ, "5m", MEM_REQ),
               both("guaranteed-container-2", "5m", MEM_REQ, "5m", MEM_REQ)), 4_000_000_000,
     {"guaranteed-container-1": (-997, -997), "guaranteed-container-2": (-997, -997)}),
    ("guaranteed-pod-resources-unequal-container-requests",
     pod_level(POD_REQ, both("burstable-container", "3m", MEM_REQ, "5m", MEM_LIM), ctr("best-effort-container")),
     4_000_000_000, {"burstable-container": (-997, -997), "best-effort-container": (-997, -997)}),
    ("burstable-pod-resources-no-container-resources",
     pod_level(POD_LIM, ctr("no-request-limit-1"), ctr("no-request-limit-2")), 4_000_000_000,
     {"no-request-limit-1": (750, 750), "no-request-limit-2": (750, 750)}),
    ("burstable-pod-resources-equal-container-requests",
     pod_level(POD_LIM, both("guaranteed-container-1", "5m", MEM_REQ, "5m", MEM_REQ),
               both("guaranteed-container-2", "5m", MEM_REQ, "5m", MEM_REQ)), 4_000_000_000,
     {"guaranteed-container-1": (750, 750), "guaranteed-container-2": (750, 750)}),
    ("burstable-pod-resources-unequal-container-requests",
     pod_level(POD_LIM, both("burstable-container", "3m", MEM_REQ, "5m", MEM_REQ), ctr("best-effort-container")),
     4_000_000_000, {"burstable-container": (625, 625), "best-effort-container": (875, 875)}),
    ("burstable-pod-resources-no-container-resources-with-sidecar",
     pod_level(POD_LIM, ctr("no-request-limit"), init=(ctr("no-request-limit-sidecar", restartPolicy="Always"),)),
     4_000_000_000, {"no-request-limit": (750, 750), "no-request-limit-sidecar": (750, 750)}),
    ("burstable-pod-resources-equal-container-requests-with-sidecar",
     pod_level(POD_LIM, both("burstable-container", "5m", MEM_REQ, "5m", MEM_LIM),
               init=(both("burstable-sidecar", "5m", MEM_REQ, "5m", MEM_LIM, **ALWAYS),)),
     4_000_000_000, {"burstable-container": (750, 750), "burstable-sidecar": (750, 750)}),
    # Every container's limit is the whole pod limit (their sum exceeds it): valid, limits are not summed.
    ("burstable-pod-resources-unequal-container-requests-with-sidecar",
     pod_level(POD_LIM, both("burstable-container-1", "5m", "1000000000", "5m", POD_LIM),
               both("burstable-container-2", "5m", "500000000", "5m", POD_LIM),
               init=(both("burstable-sidecar", "5m", "200000000", "5m", POD_LIM, **ALWAYS),)),
     4_000_000_000,
     {"burstable-container-1": (725, 725), "burstable-container-2": (850, 850), "burstable-sidecar": (850, 850)}),
]


@pytest.mark.parametrize(("p", "capacity", "ranges"), [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_get_container_oom_score_adjust(p: Pod, capacity: int, ranges: dict[str, tuple[int, int]]) -> None:
    p = with_api_defaults(p)
    qos = pod_qos(p, PROFILE)
    got = {c.name: int(oom_score_adj(p, c, qos, capacity, PROFILE).value) for c in p.all_containers}
    assert set(got) == set(ranges)
    for name, (low, high) in ranges.items():
        assert low <= got[name] <= high, (name, got[name])
