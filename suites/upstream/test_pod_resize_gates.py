"""Opt-in (`-m resize_extended`): in-place resizes of one pod each, beyond the default run's tables. Upstream's node e2e
resize tests (test/e2e_node/pod_resize_test.go), each under the four settings of the kubelet gates
InPlacePodVerticalScalingAllocatedStatus and InPlacePodVerticalScalingExclusiveCPUs and its three CPU manager
policies (none; static with no options or FullPCPUsOnlyOption), its Extended Cases, and the Guaranteed pods with
three containers of test/e2e/common/node: created, resized, rolled back; after each step every cgroup value as the
oracle says, each container's status resources and allocated resources, and its restart count as upstream expects.

Source: kubernetes test/e2e_node/pod_resize_test.go (doPodResizeTests and doPodResizeExtendTests: patchAndVerify
verifies the cgroups, the status resources, the restarts and under static the CPUs after the resize and the rollback),
test/e2e/common/node/pod_resize.go and pod_level_resources_resize.go ("guaranteed pods with multiple containers",
doPatchAndRollback); suites/upstream/resize_gate_table.py and resize_table.py. The gates reach the node through the
kubelet config's featureGates. Under policy none neither changes what this kubelet does (nodeconf/semantics/profile.py:
ExclusiveCPUs is read only under the static CPU manager policy, AllocatedStatus by no kubelet code path); under static
ExclusiveCPUs decides whether a Guaranteed pod's cpu resize is Infeasible, and with it on a container keeps the CPUs
it holds, as released kubelets do, where upstream's test expects their count to follow the resize
(semantics/cpu_manager.py). The checks run under the newest profile that has both gates (AllocatedStatus is gone
from 1.36).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from nodeconf.fixtures.node import Deploy
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.nodes.base import Node, PodStatus
from nodeconf.quantity import Quantity
from nodeconf.semantics.cpu_manager import STATIC_RESIZE_MESSAGE
from nodeconf.semantics.expectation import Expected
from nodeconf.semantics.profile import profile_for
from nodeconf.semantics.resize import POD_ALLOCATED_RULE, STATUS_RESOURCES_RULE
from suites.toolkit.checks import check_pod, deploy_pods
from suites.toolkit.compare import ComparedValue, assert_matches, compare_value
from suites.toolkit.kubelet import Applied, Kubelet, Oracle, with_gates
from suites.toolkit.resize import decision
from suites.upstream.resize_gate_table import (
    ALLOCATED_STATUS,
    CASES,
    EXTENDED_CASES,
    EXTENDED_DESCRIBE,
    FILE,
    GATE_SETTINGS,
    RESERVED_SYSTEM_CPUS,
    STATIC_POLICIES,
    CpuPolicy,
    Gates,
    ResizeCase,
)
from suites.upstream.resize_steps import Resizable, resize_step
from suites.upstream.resize_table import (
    BURSTABLE_EXTENDED,
    BURSTABLE_EXTENDED_CASES,
    MULTI_CONTAINER,
    MULTI_CONTAINER_CASES,
    PLR_BURSTABLE_POD_LEVEL_CASES,
    PLR_POD_LEVEL_ADDED_CASES,
    PLR_RESIZE_TEST,
    PLR_SIDECAR_POD_LEVEL_CASES,
)
from suites.upstream.shared import Res, container, make_pod

pytestmark = [
    pytest.mark.resize_extended,
    pytest.mark.runs_alone("switches the kubelet's feature gates (a kubelet restart) and resizes against the node's "
                           "allocatable"),
]

RESIZE = "upstream test/e2e_node/pod_resize_test.go patchAndVerify (oracle: decide_resize)"
MULTI_RESIZE = "upstream test/e2e/common/node/pod_resize.go doPatchAndRollback (oracle: decide_resize)"
PLR_RESIZE = "upstream test/e2e/common/node/pod_level_resources_resize.go doPatchAndRollbackPLR (oracle: decide_resize)"
RESTART = "the upstream test's expected RestartCount (rollback: the same containers restart again)"
STATUS = f"upstream VerifyPodStatusResources; {STATUS_RESOURCES_RULE}"
NEWEST_WITH_GATES = "1.35"  # AllocatedStatus: deprecated in 1.33, removed in 1.36 (semantics/profile.py)


def gates_profile(running: str) -> str:
    """The run's profile when its kubelet knows both gates, else the newest that does."""
    return running if ALLOCATED_STATUS in profile_for(running).gates else NEWEST_WITH_GATES


def _canonical(doc: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={Quantity.of(Quantity.parse(v).amount)}" for k, v in sorted(doc.items()))


def _resources_text(doc: Mapping[str, Mapping[str, str]]) -> str:
    return "; ".join(f"{k} {_canonical(doc[k])}" for k in ("requests", "limits") if doc.get(k))


def status_resource_rows(name: str, status: PodStatus, pod: Pod, step: str) -> list[ComparedValue]:
    """Each container's status.resources against the test's resources (VerifyPodStatusResources), its
    status.allocatedResources against their requests, and, for a pod with pod-level resources, its
    status.allocatedResources against the pod-level requests (pod_level_resources_resize.go VerifyPodLevelStatus),
    each where the node reports the field (an API server drops a container's with its own
    InPlacePodVerticalScalingAllocatedStatus off)."""
    rows = []
    for c in pod.all_containers:
        got = status.container(c.name)
        want = _resources_doc(c.resources.requests, c.resources.limits)
        rows.append(compare_value(name, c.name, "(status)", f"status.resources {step}",
                                  Expected(_resources_text(want), STATUS), _resources_text(got.resources or {})))
        if got.allocated_resources is not None:
            rows.append(compare_value(name, c.name, "(status)", f"status.allocatedResources {step}",
                                      Expected(_canonical(want.get("requests", {})), STATUS_RESOURCES_RULE),
                                      _canonical(got.allocated_resources)))
    if pod.resources is not None and status.allocated_resources is not None:
        want_pod = _resources_doc(pod.resources.requests, {}).get("requests", {})
        rule = f"upstream VerifyPodLevelStatus; {POD_ALLOCATED_RULE}"
        rows.append(compare_value(name, "", "(status)", f"pod status.allocatedResources {step}",
                                  Expected(_canonical(want_pod), rule), _canonical(status.allocated_resources)))
    return rows


def _resources_doc(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> dict[str, dict[str, str]]:
    return {k: {n: str(q) for n, q in v.items()} for k, v in (("requests", requests), ("limits", limits)) if v}


def resize_body(case: ResizeCase, resources: Mapping[str, Res], pod_res: Res | None = None,
                env: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, object]:
    """A resize patch setting these requests and limits per container (a sidecar's under initContainers) and at pod
    level, and the env it names (the test's patch; its rollback, ResizeContainerPatch / MakeResizePatch, names the
    original values and no env)."""
    sidecars = {c.name for c in case.containers if c.sidecar}
    spec: dict[str, object] = {}
    for key, names in (("containers", [n for n in resources if n not in sidecars]),
                       ("initContainers", [n for n in resources if n in sidecars])):
        if names:
            spec[key] = [_entry(n, resources[n], (env or {}).get(n, {})) for n in names]
    if pod_res is not None:
        spec["resources"] = pod_res.doc()
    return {"spec": spec}


def _entry(name: str, res: Res, env: Mapping[str, str]) -> dict[str, object]:
    """One container's entry of a resize patch: its name, the env it names (if any) and its resources."""
    entry: dict[str, object] = {"name": name}
    if env:
        entry["env"] = [{"name": k, "value": v} for k, v in env.items()]
    entry["resources"] = res.doc()
    return entry


def _cases(policies: Sequence[CpuPolicy | None]) -> list[object]:
    return [pytest.param(case, gates, policy, id=f"{case.id}-{gates.id}" + (f"-{policy.id}" if policy else ""),
                         marks=pytest.mark.upstream_e2e(file=FILE, case=gates.case_text(case, policy)))
            for policy in policies for gates in GATE_SETTINGS for case in CASES]


def with_cpu_manager(config: KubeletConfig, policy: CpuPolicy | None) -> KubeletConfig:
    """The config with upstream's static policy (cpuManagerPolicyKubeletConfig: reservedSystemCPUs 0 and the
    policy's options), or unchanged for policy "none"."""
    if policy is None:
        return config
    return replace(config, cpu_manager_policy="static", reserved_system_cpus=RESERVED_SYSTEM_CPUS,
                   cpu_manager_policy_options=policy.options)


def _drive(judge: Oracle, kubelet: Kubelet, deploy: Deploy, case: ResizeCase, rule: str, what: str) -> None:
    """The case's pod as created, after its resize and after the rollback: the node's resize answer as the oracle
    decides, every cgroup value as the oracle says, status resources as the test's, restarts as upstream expects;
    skipped where the node cannot hold the pod or its resize (upstream expects both)."""
    name = f"resize-{case.id}"
    pod, resized = case.pod(name), case.pod(name, resized=True)
    first = judge.expect([pod], kubelet.config).pods[0]
    if not first.admitted:
        pytest.skip(f"this node cannot admit the test's pod: {'; '.join(first.errors)}")
    answer, message = decision(judge, kubelet, pod, resized)
    applied = answer == "Applied"
    if not applied and message != STATIC_RESIZE_MESSAGE:
        pytest.skip(f"the test's resize does not fit this node ({answer}: {message}); upstream expects it actuated")
    deployed = deploy_pods(deploy, judge, kubelet, [pod])
    handle = deployed.handle(name)
    check_pod(handle, deployed.expected(name))
    assert_matches(f"pod {pod.ref} as created", status_resource_rows(name, handle.status(), pod, "as created"))
    running = Resizable.running(handle, deployed.expected(name), pod, kubelet)
    body = resize_body(case, case.patch, case.pod_patch, case.patch_env)
    rows = resize_step(judge, running, resized, body, case.restarts, rule, RESTART, "after resize")
    # Infeasible under the static policy without InPlacePodVerticalScalingExclusiveCPUs: the kubelet's answer
    # (semantics/cpu_manager.resize_infeasible), judged as such; upstream's test expects the resize actuated there.
    rows += status_resource_rows(name, handle.status(), resized if applied else pod, "after resize")
    if case.rollback and applied:
        rollback = resize_body(case, {c.name: c.res for c in case.containers},
                               case.pod_res if case.pod_patch else None)
        rows += resize_step(judge, running, pod, rollback, case.restarts, rule, RESTART, "after rollback")
        rows += status_resource_rows(name, handle.status(), pod, "after rollback")
    assert_matches(f"pod {pod.ref} resize {case.id}{' and rollback' if case.rollback else ''}{what}", rows)


@pytest.mark.parametrize(("case", "gates", "policy"), _cases((None, *STATIC_POLICIES)))
def test_resize_under_gates(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied,
                            deploy: Deploy, case: ResizeCase, gates: Gates, policy: CpuPolicy | None) -> None:
    """pod_resize_test.go's test under these gate values (the kubelet config's featureGates) and CPU manager policy
    (none, or static with reservedSystemCPUs 0: every container's cpuset.cpus and the exclusive containers' cpu.max
    as semantics/cpu_manager.py says). FullPCPUsOnly: upstream skips it on a node without SMT ("strict SMT alignment
    is trivially verified"); nodeconf runs it, its expectations there those of no options (CPUsPerCore 1)."""
    _under(node, oracle, base_config, _applied, deploy, case, gates, policy)


def _under(node: Node, oracle: Oracle, base_config: KubeletConfig, applied: Applied, deploy: Deploy,
           case: ResizeCase, gates: Gates, policy: CpuPolicy | None) -> None:
    """A case driven on the kubelet with these gates and CPU manager policy, judged under the gates' profile."""
    version = gates_profile(oracle.version)
    kubelet = Kubelet(node, version, base_config, applied)
    kubelet.use(with_cpu_manager(with_gates(base_config, gates.feature_gates), policy))
    what = f" under {gates.id}" + (f", {policy.id}" if policy else "")
    _drive(replace(oracle, version=version), kubelet, deploy, case, RESIZE, what)


BOTH_GATES = Gates(True, True)


@pytest.mark.parametrize(("case", "policy"), [
    pytest.param(case, policy, id=f"{case.id}-{policy.id}", marks=pytest.mark.upstream_e2e(
        file=FILE, case=BOTH_GATES.case_text(case, policy, EXTENDED_DESCRIBE)))
    for policy in STATIC_POLICIES for case in EXTENDED_CASES[policy.id]])
def test_exclusive_cpu_resize(node: Node, oracle: Oracle, base_config: KubeletConfig, _applied: Applied,
                              deploy: Deploy, case: ResizeCase, policy: CpuPolicy) -> None:
    """pod_resize_test.go doPodResizeExtendTests: Guaranteed containers with exclusive CPUs grown or shrunk with both
    gates on; the CPUs each keeps as semantics/cpu_manager.py says: those it was admitted with, as released kubelets
    keep them (upstream counts CPUs that follow the resize, from the unmerged KEP-5554 line). The mustKeepCPUs cases
    send upstream's patch with its env: the resize subresource (and the enforcer's) drops the env, so they are plain
    decreases. They need 2 to 4 CPUs of their own: a node that cannot hold them skips, with the oracle's reason."""
    _under(node, oracle, base_config, _applied, deploy, case, BOTH_GATES, policy)


def _in_both_files(cases: Sequence[ResizeCase], describes: Mapping[str, str]) -> list[object]:
    return [pytest.param(case, id=case.id, marks=[pytest.mark.upstream_e2e(file=file, case=f"{describe} / {case.name}")
                                                  for file, describe in describes.items()]) for case in cases]


@pytest.mark.parametrize("case", [*_in_both_files(MULTI_CONTAINER, MULTI_CONTAINER_CASES),
                                  *_in_both_files(BURSTABLE_EXTENDED, BURSTABLE_EXTENDED_CASES)])
def test_common_node_resize(oracle: Oracle, kubelet: Kubelet, deploy: Deploy, case: ResizeCase) -> None:
    """The Its pod_resize.go and pod_level_resources_resize.go share (pod-level resources left out): "guaranteed
    pods with multiple containers" (three containers resized in one patch) and "burstable pods - extended"
    (containers gaining limits or requests; cpu 2m/10m to 1m/5m, at or below the kubelet's minimum shares and quota),
    on the session's base kubelet config (doPatchAndRollback)."""
    _drive(oracle, kubelet, deploy, case, MULTI_RESIZE, "")


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=pytest.mark.upstream_e2e(
    file=PLR_RESIZE_TEST, case=case.name)) for case in (*PLR_BURSTABLE_POD_LEVEL_CASES, *PLR_POD_LEVEL_ADDED_CASES)])
def test_burstable_pod_level_resize(oracle: Oracle, kubelet: Kubelet, deploy: Deploy, case: ResizeCase) -> None:
    """pod_level_resources_resize.go's "PLR pod-level burstable pods" pod-level entries and "burstable pods -
    pod-level resources": Burstable containers keep their values while the pod-level resources move or are added
    (doPatchAndRollbackPLR, rolled back where upstream does), no restart."""
    _drive(oracle, kubelet, deploy, case, PLR_RESIZE, "")


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=pytest.mark.upstream_e2e(
    file=PLR_RESIZE_TEST, case=case.name)) for case in PLR_SIDECAR_POD_LEVEL_CASES])
def test_pod_level_resize_with_sidecar(oracle: Oracle, kubelet: Kubelet, deploy: Deploy, case: ResizeCase) -> None:
    """pod_level_resources_resize.go's "PLR guaranteed qos" pod-level entries under the "+ resize initContainers"
    policies: a container and its sidecar under pod-level resources that move; the two restart, per their policy,
    where they have no value of their own for the resource that moved (doPatchAndRollbackPLR)."""
    _drive(oracle, kubelet, deploy, case, PLR_RESIZE, "")


@pytest.mark.kubelet_code
@pytest.mark.parametrize("policy", [pytest.param(p, id=p.id) for p in STATIC_POLICIES])
def test_exclusive_cpu_beside_the_shared_pool(node: Node, oracle: Oracle, base_config: KubeletConfig,
                                              _applied: Applied, deploy: Deploy, policy: CpuPolicy) -> None:
    """nodeconf's own (no upstream case runs it on a 2-CPU node): under upstream's static-policy config, a
    Guaranteed pod of one 1-CPU container beside a Burstable one; each container's cpuset.cpus (the exclusive CPU,
    the shared pool of the rest) and the exclusive container's and its pod's cpu.max without quota, as the oracle
    says; skipped where the node cannot admit the pair."""
    version = gates_profile(oracle.version)
    kubelet = Kubelet(node, version, base_config, _applied)
    kubelet.use(with_cpu_manager(with_gates(base_config, BOTH_GATES.feature_gates), policy))
    judge = replace(oracle, version=version)
    pods = [make_pod("exclusive-cpu", [container("c1", Res("1", "1", "64Mi", "64Mi"))]),
            make_pod("shared-cpu", [container("c1", Res(mem_req="64Mi"))])]
    expected = judge.expect(pods, kubelet.config)
    if not all(p.admitted for p in expected.pods):
        pytest.skip(f"this node cannot admit the pair: {'; '.join(e for p in expected.pods for e in p.errors)}")
    deployed = deploy_pods(deploy, judge, kubelet, pods)
    for pod in pods:
        check_pod(deployed.handle(pod.name), deployed.expected(pod.name))
