"""The agent on a temporary cgroup-like tree: admission, values written at every level, sums, processes,
restarts, OOMKilled recognition, resize deferral, eviction, state across restarts, clean shutdown."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeconf.enforcer import pod_table
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.agent_error import AgentError
from nodeconf.enforcer.lifecycle import Faults
from nodeconf.enforcer.patch import patched_pod
from nodeconf.errors import InputError
from nodeconf.manifest import Pod
from nodeconf.manifest_reader import object_from_dict
from suites.toolkit.builders import container, pod_manifest
from tests.unit.enforcer.enforcer_support import (
    ARTICLE_NODE,
    make_agent,
    res_demo,
    running_agent,
    tick_until,
)

BURSTABLE = "kubepods.slice/kubepods-burstable.slice"
WORKLOADS = Path(__file__).resolve().parents[3] / "workloads"
MI = 2**20
# KEP-5359's gate: alpha in 1.38, off unless the kubelet config turns it on (nodeconf/semantics/profile.py).
WORKLOAD_SWAP_ON = {"WorkloadControlledSwap": True}


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    yield from running_agent(tmp_path)


def read(agent: Agent, path: str, file: str) -> str | None:
    return agent.tree.read(path, file)


def containers(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    items = status["containers"]
    assert isinstance(items, list)
    return {c["name"]: c for c in items}


def test_res_demo_files_are_the_articles(agent: Agent) -> None:
    """Seed requests-limits-qos hands-on: container 35 / 50000 100000 / 134217728 / oom.group 1, pod weight 10."""
    status = agent.run_pod(res_demo())["status"]
    hello = containers(status)["hello"]
    pod_path = status["cgroup"]
    assert pod_path.startswith(f"{BURSTABLE}/kubepods-burstable-pod")
    assert [read(agent, hello["cgroup"], f) for f in ("cpu.weight", "cpu.max", "memory.max", "memory.oom.group")] \
        == ["35", "50000 100000", "134217728", "1"]
    assert [read(agent, pod_path, f) for f in ("cpu.weight", "cpu.max", "memory.max", "memory.oom.group")] \
        == ["10", "50000 100000", "134217728", "0"]
    pause = containers(status)["POD"]
    assert (read(agent, pause["cgroup"], "cpu.weight"), read(agent, pause["cgroup"], "memory.max")) == ("1", "max")
    assert hello["oomScoreAdj"] == 963 and pause["oomScoreAdj"] == -998
    assert hello["state"] == "running" and hello["argv"] == ["sleep", "infinity"]


def test_controllers_enabled_top_down(agent: Agent) -> None:
    status = agent.run_pod(res_demo())["status"]
    for path in ("", "kubepods.slice", BURSTABLE, status["cgroup"]):
        assert (agent.tree.root / path / "cgroup.subtree_control").read_text().split() == [
            "cpuset", "cpu", "memory", "pids", "hugetlb"]


def test_burstable_sum_follows_pods(agent: Agent) -> None:
    """Burstable slice shares = sum of requests: 250m → 256 shares → linear weight 10; none → 2 shares → 1."""
    agent.run_pod(res_demo())
    assert read(agent, BURSTABLE, "cpu.weight") == "10"
    agent.delete("default/res-demo")
    assert read(agent, BURSTABLE, "cpu.weight") == "1"
    assert [p.name for p in (agent.tree.root / BURSTABLE).iterdir() if p.is_dir()] == []


def test_rejected_pod_creates_nothing(agent: Agent) -> None:
    agent.configure({"kind": "KubeletConfiguration", "featureGates": WORKLOAD_SWAP_ON})  # KEP-5359's alpha gate
    before = sorted(str(p) for p in agent.tree.root.rglob("*"))
    doc = pod_manifest(container("c", requests={"memory": "64Mi", "swap": "1Gi"}, limits={"memory": "1Gi"}),
                       name="asks-swap")
    result = agent.run_pod(doc)
    assert result["admitted"] is False
    assert any("swap may only be specified in limits, not requests" in e for e in result["errors"])
    assert sorted(str(p) for p in agent.tree.root.rglob("*")) == before
    with pytest.raises(AgentError, match="no pod default/asks-swap"):
        agent.status("default/asks-swap")


@pytest.mark.parametrize("bad", [
    {"metadata": {"name": "Bad_Name"}}, {"metadata": {"name": "ok", "namespace": "../etc"}},
    {"metadata": {"name": "ok", "uid": "../../x"}},
])
def test_unsafe_names_never_reach_a_path(agent: Agent, bad: dict[str, dict[str, str]]) -> None:
    doc = res_demo()
    doc["metadata"] = bad["metadata"]
    with pytest.raises(AgentError, match="invalid"):
        agent.run_pod(doc)


def test_duplicate_pod_refused(agent: Agent) -> None:
    agent.run_pod(res_demo())
    with pytest.raises(AgentError, match="already exists"):
        agent.run_pod(res_demo())


@pytest.mark.parametrize("policy, exit_code, expect_restarts, expect_phase", [
    ("Always", 3, True, "Running"),
    ("OnFailure", 3, True, "Running"),
    ("OnFailure", 0, False, "Succeeded"),
    ("Never", 3, False, "Failed"),
], ids=["always-error", "onfailure-error", "onfailure-success", "never-error"])
def test_restart_policy(agent: Agent, policy: str, exit_code: int, expect_restarts: bool, expect_phase: str) -> None:
    doc = pod_manifest(container("c", command=["sh", "-c", f"sleep 0.05; exit {exit_code}"]), name="crash",
                       restartPolicy=policy)
    agent.run_pod(doc)
    if expect_restarts:
        tick_until(agent, lambda: containers(agent.status("default/crash"))["c"]["restartCount"] >= 2)
        c = containers(agent.status("default/crash"))["c"]
        assert c["lastState"]["terminated"]["exitCode"] == exit_code
        assert c["lastState"]["terminated"]["reason"] == "Error"
    else:
        tick_until(agent, lambda: agent.status("default/crash")["phase"] == expect_phase)
        c = containers(agent.status("default/crash"))["c"]
        assert (c["state"], c["exitCode"], c["restartCount"]) == ("terminated", exit_code, 0)
        assert not agent.tree.exists(agent.status("default/crash")["cgroup"]), "a finished pod's cgroup is removed"


def test_oom_kill_in_memory_events_makes_oomkilled_137(agent: Agent) -> None:
    """A SIGKILLed container whose memory.events oom_kill rose is OOMKilled with 137 (runc/containerd)."""
    _oom_killed_eater(agent)
    c = containers(agent.status("default/eater"))["eater"]
    assert (c["exitCode"], c["reason"]) == (137, "OOMKilled")
    assert any(e["reason"] == "OOMKilling" for e in agent.status("default/eater")["events"])


def test_oom_reason_fault_reports_error(tmp_path: Path) -> None:
    """`oom-reason=ignore`: the same OOM kill is reported with reason Error (the exit code stays 137)."""
    for faulty in running_agent(tmp_path, Faults.parse(["oom-reason=ignore"])):
        _oom_killed_eater(faulty)
        c = containers(faulty.status("default/eater"))["eater"]
        assert (c["exitCode"], c["reason"]) == (137, "Error")


def _oom_killed_eater(agent: Agent) -> None:
    """A container SIGKILLed after its memory.events oom_kill rose, until its pod (restartPolicy Never) failed."""
    agent.run_pod(pod_manifest(container("eater", command=["sleep", "30"]), name="eater", restartPolicy="Never"))
    c = containers(agent.status("default/eater"))["eater"]
    (agent.tree.dir(c["cgroup"]) / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    os.kill(c["pid"], signal.SIGKILL)
    tick_until(agent, lambda: agent.status("default/eater")["phase"] == "Failed")


def test_sigkill_without_oom_is_error_137(agent: Agent) -> None:
    agent.run_pod(pod_manifest(container("k", command=["sleep", "30"]), name="killed", restartPolicy="Never"))
    os.kill(containers(agent.status("default/killed"))["k"]["pid"], signal.SIGKILL)
    tick_until(agent, lambda: agent.status("default/killed")["phase"] == "Failed")
    c = containers(agent.status("default/killed"))["k"]
    assert (c["exitCode"], c["reason"]) == (137, "Error")


def test_init_container_runs_before_regular(agent: Agent, tmp_path: Path) -> None:
    marker = tmp_path / "init-done"
    doc = pod_manifest(container("main", command=["sh", "-c", f"test -e {marker} && sleep 30"]), name="ordered",
                       init=[container("init", command=["sh", "-c", f"sleep 0.1; touch {marker}"])])
    agent.run_pod(doc)
    assert containers(agent.status("default/ordered"))["main"]["state"] == "waiting"
    tick_until(agent, lambda: agent.status("default/ordered")["phase"] == "Running")
    status = containers(agent.status("default/ordered"))
    assert (status["init"]["state"], status["init"]["exitCode"]) == ("terminated", 0)
    assert status["main"]["state"] == "running" and status["main"]["restartCount"] == 0


def test_cpu_weight_fault_writes_the_old_formula(tmp_path: Path) -> None:
    """The article: 250m → 35 with runc ≥ 1.3.2, 10 with the old formula; a faulty node writes 10."""
    for agent in running_agent(tmp_path, Faults.parse(["cpu-weight-formula=linear"])):
        hello = containers(agent.run_pod(res_demo())["status"])["hello"]
        assert read(agent, hello["cgroup"], "cpu.weight") == "10"
        assert agent.facts.cpu_weight_formula == "nonlinear", "the faulty node still claims the true formula"


@pytest.mark.parametrize("fault", ["cpu-weight=linear", "cpu-weight-formula=cubic", "memory-throttling-factor=2",
                                   "memory-throttling-factor=x"], ids=["unknown", "formula", "factor-range", "factor"])
def test_bad_fault_refused(fault: str) -> None:
    with pytest.raises(ValueError, match="bad fault"):
        Faults.parse([fault])


def test_swap_decrease_waits_for_usage(agent: Agent) -> None:
    """KEP-5359 resize: a limits.swap decrease waits while memory.swap.current ≥ the new limit."""
    agent.configure({"kind": "KubeletConfiguration", "featureGates": WORKLOAD_SWAP_ON,
                     "memorySwap": {"swapBehavior": "WorkloadControlledSwap"}})
    doc = pod_manifest(container("s", requests={"memory": "64Mi"},
                                        limits={"memory": "128Mi", "swap": "256Mi"}), name="swapper")
    cgroup = containers(agent.run_pod(doc)["status"])["s"]["cgroup"]
    assert read(agent, cgroup, "memory.swap.max") == str(256 * MI)
    (agent.tree.dir(cgroup) / "memory.swap.current").write_text(f"{100 * MI}\n")
    patch = {"spec": {"containers": [{"name": "s", "resources": {"limits": {"swap": "64Mi"}}}]}}
    assert agent.resize("default/swapper", patch)["status"] == "InProgress"
    agent.tick()
    assert read(agent, cgroup, "memory.swap.max") == str(256 * MI)
    (agent.tree.dir(cgroup) / "memory.swap.current").write_text(f"{10 * MI}\n")
    tick_until(agent, lambda: agent.status("default/swapper")["resize"]["status"] == "Applied")
    assert read(agent, cgroup, "memory.swap.max") == str(64 * MI)


@pytest.mark.parametrize(("faults", "status", "memory_max"), [((), "InProgress", 96 * MI),
                                                              (("resize-usage=ignore",), "Applied", 32 * MI)],
                         ids=["waits", "resize-usage-ignored"])
def test_memory_decrease_below_usage_waits(tmp_path: Path, faults: tuple[str, ...], status: str,
                                           memory_max: int) -> None:
    """A memory limit decreased below memory.current waits and memory.max keeps the old limit; the
    `resize-usage=ignore` fault decides without usage and writes it at once."""
    for agent in running_agent(tmp_path, Faults.parse(faults)):
        doc = pod_manifest(container("m", requests={"memory": "96Mi"}, limits={"memory": "96Mi"}), name="holder")
        cgroup = containers(agent.run_pod(doc)["status"])["m"]["cgroup"]
        (agent.tree.dir(cgroup) / "memory.current").write_text(f"{48 * MI}\n")
        patch = {"spec": {"containers": [{"name": "m", "resources": {"requests": {"memory": "32Mi"},
                                                                    "limits": {"memory": "32Mi"}}}]}}
        assert agent.resize("default/holder", patch)["status"] == status
        assert read(agent, cgroup, "memory.max") == str(memory_max)


@pytest.mark.parametrize(("faults", "sidecar_max"), [((), str(64 * MI)), (("sidecar-resize=ignore",), str(32 * MI))],
                         ids=["resized", "sidecar-resize-ignored"])
def test_sidecar_resize(tmp_path: Path, faults: tuple[str, ...], sidecar_max: str) -> None:
    """A resize patch naming a sidecar resizes it with the regular container; `sidecar-resize=ignore` drops the
    initContainers of the patch, so the sidecar keeps its limit while the regular container is resized."""
    for agent in running_agent(tmp_path, Faults.parse(faults)):
        res = {"memory": "32Mi"}
        doc = pod_manifest(container("c", res, res), name="with-sidecar",
                           init=[container("s", res, res, command=["sleep", "30"], restartPolicy="Always")])
        status = containers(agent.run_pod(doc)["status"])
        bigger = {"requests": {"memory": "64Mi"}, "limits": {"memory": "64Mi"}}
        patch = {"spec": {"containers": [{"name": "c", "resources": bigger}],
                          "initContainers": [{"name": "s", "resources": bigger}]}}
        assert agent.resize("default/with-sidecar", patch)["status"] == "Applied"
        assert (read(agent, status["c"]["cgroup"], "memory.max"),
                read(agent, status["s"]["cgroup"], "memory.max")) == (str(64 * MI), sidecar_max)


@pytest.mark.parametrize(("faults", "retried"), [((), "Applied"), (("resize-retry=ignore",), "Deferred")],
                         ids=["retried", "resize-retry-ignored"])
def test_deferred_resize_retried_after_another_pod_shrinks(tmp_path: Path, faults: tuple[str, ...],
                                                           retried: str) -> None:
    """Upstream pod_resize.go "pod-resize-retry-deferred-test-1" on the 2-CPU article node: A of 1000m and B of 600m;
    B to 1200m is Deferred with cpu.max unchanged; once A shrinks to 400m a tick applies B's resize (kubelet
    RetryPendingResizes on a pod's resize); `resize-retry=ignore` leaves it Deferred."""
    for agent in running_agent(tmp_path, Faults.parse(faults)):
        def cpu(name: str, milli: int) -> dict[str, Any]:
            res = {"cpu": f"{milli}m"}
            return {"spec": {"containers": [{"name": name, "resources": {"requests": res, "limits": res}}]}}

        agent.run_pod(pod_manifest(container("ca", {"cpu": "1000m"}, {"cpu": "1000m"}), name="a"))
        b = containers(agent.run_pod(pod_manifest(container("cb", {"cpu": "600m"}, {"cpu": "600m"}),
                                                  name="b"))["status"])["cb"]
        assert agent.resize("default/b", cpu("cb", 1200))["status"] == "Deferred"
        assert read(agent, b["cgroup"], "cpu.max") == "60000 100000"
        assert agent.resize("default/a", cpu("ca", 400))["status"] == "Applied"
        for _ in range(3):
            agent.tick()
        assert agent.status("default/b")["resize"]["status"] == retried
        assert read(agent, b["cgroup"], "cpu.max") == ("120000 100000" if retried == "Applied" else "60000 100000")


def test_resize_cpu_increase_applied_at_once(agent: Agent) -> None:
    """The article's patch: res-demo cpu limit to one core → cpu.max 100000 100000 at once."""
    hello = containers(agent.run_pod(res_demo())["status"])["hello"]
    patch = {"spec": {"containers": [{"name": "hello", "resources": {"limits": {"cpu": "1"}}}]}}
    assert agent.resize("default/res-demo", patch) == {"status": "Applied", "message": ""}
    assert read(agent, hello["cgroup"], "cpu.max") == "100000 100000"
    assert containers(agent.status("default/res-demo"))["hello"]["pid"] == hello["pid"], "no restart"


def test_status_reports_resources_and_allocation_after_a_resize(agent: Agent) -> None:
    """As the kubelet's convertToAPIContainerStatuses: status.resources are the requests and limits the container
    runs with, status.allocatedResources its allocated requests; both follow an applied resize."""
    agent.run_pod(res_demo())
    patch = {"spec": {"containers": [{"name": "hello", "resources": {"requests": {"cpu": "300m"},
                                                                    "limits": {"cpu": "1"}}}]}}
    assert agent.resize("default/res-demo", patch)["status"] == "Applied"
    hello = containers(agent.status("default/res-demo"))["hello"]
    assert hello["resources"] == {"requests": {"cpu": "300m", "memory": "128Mi"},
                                  "limits": {"cpu": "1", "memory": "128Mi"}}
    assert hello["allocatedResources"] == {"cpu": "300m", "memory": "128Mi"}
    assert agent.status("default/res-demo")["allocatedResources"] == {"cpu": "300m", "memory": "128Mi"}, "pod's"


@pytest.mark.parametrize(("policy", "restarts"), [("NotRequired", 0), ("RestartContainer", 1)])
def test_resize_restarts_per_policy(agent: Agent, policy: str, restarts: int) -> None:
    """A memory-limit resize restarts the container only when its memory resizePolicy is RestartContainer."""
    doc = res_demo()
    doc["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": policy}]
    hello = containers(agent.run_pod(doc)["status"])["hello"]
    patch = {"spec": {"containers": [{"name": "hello", "resources": {"limits": {"memory": "160Mi"}}}]}}
    assert agent.resize("default/res-demo", patch) == {"status": "Applied", "message": ""}
    assert read(agent, hello["cgroup"], "memory.max") == str(160 * MI)
    after = containers(agent.status("default/res-demo"))["hello"]  # restarted within the resize: no tick needed
    assert (after["state"], after["restartCount"]) == ("running", restarts)
    assert (after["pid"] == hello["pid"]) == (restarts == 0)


@pytest.mark.parametrize(("policy", "score"), [("NotRequired", "963"), ("RestartContainer", "925")])
def test_oom_score_adj_after_a_memory_request_resize(agent: Agent, policy: str, score: str) -> None:
    """128Mi → 256Mi request (limit 512Mi) on the article's node: a running process keeps 963 (the runtime sets it
    only at start), a restarted one gets 1000 − 1000·256Mi/capacity = 925."""
    doc = res_demo()
    doc["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": policy}]
    containers(agent.run_pod(doc)["status"])
    patch = {"spec": {"containers": [{"name": "hello", "resources": {"requests": {"memory": "256Mi"},
                                                                     "limits": {"memory": "512Mi"}}}]}}
    assert agent.resize("default/res-demo", patch) == {"status": "Applied", "message": ""}
    tick_until(agent, lambda: containers(agent.status("default/res-demo"))["hello"]["state"] == "running")
    after = containers(agent.status("default/res-demo"))["hello"]
    proc_value = Path(f"/proc/{after['pid']}/oom_score_adj").read_text().strip()
    assert (after["restartCount"], proc_value) == (int(policy == "RestartContainer"), score)


def test_resize_changing_qos_rejected(agent: Agent) -> None:
    agent.run_pod(res_demo())
    patch = {"spec": {"containers": [{"name": "hello", "resources": {"requests": {"cpu": "500m"}}}]}}
    result = agent.resize("default/res-demo", patch)
    assert result["status"] == "Rejected"
    assert "Pod QOS Class may not change as a result of resizing" in result["message"]


def test_patched_pod_merges_by_key() -> None:
    pod = object_from_dict(res_demo())
    assert isinstance(pod, Pod)
    out = patched_pod(pod, {"spec": {"containers": [{"name": "hello", "resources": {"limits": {"cpu": "1"}}}]}})
    limits = out.containers[0].resources.limits
    assert (str(limits["cpu"]), str(limits["memory"])) == ("1", "128Mi")
    with pytest.raises(InputError, match="no container 'nope'"):
        patched_pod(pod, {"spec": {"containers": [{"name": "nope", "resources": {}}]}})


def test_eviction_in_oracle_order(tmp_path: Path) -> None:
    """Below evictionHard the pod using most above its request goes: Failed, Evicted, MemoryPressure."""
    used = {"value": 0}
    for agent in running_agent(tmp_path, node_memory_used=lambda: used["value"]):
        for name in ("calm", "greedy"):
            agent.run_pod(pod_manifest(container("c", requests={"memory": "64Mi"}), name=name))
        greedy = containers(agent.status("default/greedy"))["c"]["cgroup"]
        (agent.tree.dir(greedy) / "memory.current").write_text(f"{512 * MI}\n")
        agent.tick()
        assert not agent.pressure.conditions["MemoryPressure"]
        used["value"] = ARTICLE_NODE.memory_capacity - 50 * MI
        agent.pressure.next_check = 0.0
        agent.tick()
        status = agent.status("default/greedy")
        assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
        assert "Container c was using 512Mi, request is 64Mi" in status["message"]
        assert status["disruptedAt"] is not None, "the eviction's time orders evictions (DisruptionTarget)"
        assert agent.status("default/calm")["phase"] == "Running"
        assert agent.status("default/calm")["disruptedAt"] is None
        assert agent.pressure.conditions["MemoryPressure"]


@pytest.mark.parametrize(("fault", "evicted"), [pytest.param(None, True, id="allocatable-enforced"),
                                               pytest.param("pods-allocatable=ignore", False, id="fault")])
def test_allocatable_eviction(tmp_path: Path, fault: str | None, evicted: bool) -> None:
    """upstream MemoryAllocatableEviction: kubeReserved leaves kubepods 300Mi, evictionHard memory.available 250Mi is
    copied to allocatableMemory.available; a kubepods working set of 140Mi (memory.current 144Mi, 4Mi inactive file)
    leaves 160Mi, below it, while the node has memory to spare (500Mi used): the hog goes, with an event naming the
    allocatable signal, the innocent pod (within its request) stays. Under `pods-allocatable=ignore` kubepods keeps
    the node's capacity and no threshold is copied: nothing goes."""
    faults = Faults.parse([fault] if fault else [])
    for agent in running_agent(tmp_path, faults, node_memory_used=lambda: 500 * MI):
        agent.configure({"kind": "KubeletConfiguration", "evictionHard": {"memory.available": "250Mi"},
                         "kubeReserved": {"memory": str(ARTICLE_NODE.memory_capacity - 300 * MI)}})
        agent.run_pod(pod_manifest(container("innocent-container", requests={"memory": "50Mi"},
                                             limits={"memory": "50Mi"}), name="innocent-pod"))
        agent.run_pod(pod_manifest(container("memory-hog"), name="memory-hog-pod"))
        hog = containers(agent.status("default/memory-hog-pod"))["memory-hog"]["cgroup"]
        (agent.tree.dir(hog) / "memory.current").write_text(f"{128 * MI}\n")
        (agent.tree.dir("kubepods.slice") / "memory.current").write_text(f"{144 * MI}\n")
        (agent.tree.dir("kubepods.slice") / "memory.stat").write_text(f"inactive_file {4 * MI}\n")
        assert read(agent, "kubepods.slice", "memory.max") == str(
            300 * MI if fault is None else ARTICLE_NODE.memory_capacity // 4096 * 4096)
        agent.pressure.next_check = 0.0
        agent.tick()
        status = agent.status("default/memory-hog-pod")
        assert (status["phase"] == "Failed" and status["reason"] == "Evicted") is evicted
        assert agent.pressure.conditions["MemoryPressure"] is evicted
        assert agent.status("default/innocent-pod")["phase"] == "Running"
        if evicted:
            assert status["message"].startswith("The node was low on resource: memory. Threshold quantity: 250Mi, "
                                                "available: 160Mi. Container memory-hog was using 128Mi, request is 0")
            assert [(e["reason"], e["message"]) for e in agent.pressure.events] == [
                ("NodeHasInsufficientMemory", f"allocatableMemory.available {160 * MI} against threshold {250 * MI}")]


def test_state_survives_a_crash(tmp_path: Path) -> None:
    """A new agent on the same state: old processes killed, cgroups rebuilt, pods restarted, counts kept."""
    first = make_agent(tmp_path)
    old = containers(first.run_pod(res_demo())["status"])["hello"]
    second = make_agent(tmp_path)
    try:
        for c in first.pods["default/res-demo"].containers:
            assert isinstance(c.proc, subprocess.Popen) and c.proc.wait(timeout=5) == -signal.SIGKILL
        tick_until(second, lambda: containers(second.status("default/res-demo"))["hello"]["state"] == "running")
        new = containers(second.status("default/res-demo"))["hello"]
        assert new["pid"] != old["pid"] and new["restartCount"] == 1
        assert read(second, new["cgroup"], "cpu.weight") == "35"
    finally:
        second.shutdown()


def test_a_started_pod_is_running_when_run_returns(agent: Agent) -> None:
    """run answers with the phase its started containers give (Running), saved with it: no tick has to save again."""
    status = agent.run_pod(res_demo())["status"]
    saved = agent.state_file.load()
    assert saved is not None
    assert (status["phase"], saved["pods"][0]["phase"]) == ("Running", "Running")
    assert not agent.supervision.update_phase(agent.pods["default/res-demo"]), "nothing left for the next tick"


def test_state_file_reads_each_process_start_once(agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """The state file records each running process with its own start time (/proc/PID/stat), read once per process
    however often the agent saves; a container started again is recorded with its new process's start."""
    reads: list[int] = []

    def counted(pid: int) -> int:
        reads.append(pid)
        return _start(pid)

    monkeypatch.setattr(pod_table, "process_start", counted)
    doc = res_demo()
    doc["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    agent.run_pod(doc)
    agent.save()
    agent.save()
    record = agent.pods["default/res-demo"]
    first = {c.name: _pid(c.pid) for c in record.containers}
    assert sorted(reads) == sorted(first.values()), "one read per process over three saves"
    patch = {"spec": {"containers": [{"name": "hello", "resources": {"limits": {"memory": "160Mi"}}}]}}
    agent.resize("default/res-demo", patch)
    tick_until(agent, lambda: containers(agent.status("default/res-demo"))["hello"]["state"] == "running")
    agent.save()
    restarted = _pid(record.container("hello").pid)
    assert restarted not in first.values() and reads.count(restarted) == 1
    saved = {c["name"]: (c["pid"], c["pidStart"]) for c in agent.pods.saved()[0]["containers"]}
    assert saved["hello"] == (restarted, _start(restarted))
    pause = next(c for c in record.containers if c.kind == "pause")
    assert saved[pause.name] == (first[pause.name], _start(first[pause.name]))


def _pid(pid: int | None) -> int:
    assert pid is not None, "a running container has a pid"
    return pid


def _start(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def test_the_oracle_is_asked_again_only_when_an_input_changed(agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked twice with the same pods, facts, config, profile, objects and CPU state, the agent's oracle answers
    from its last answer; a change of any of them (a pod, the config, the namespace objects) is computed anew."""
    asked: list[int] = []
    computed = agent.oracle.expect_fn

    def counted(pods: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(len(pods))
        return computed(pods, *args, **kwargs)

    monkeypatch.setattr(agent.oracle, "expect_fn", counted)
    agent.run_pod(res_demo())
    first = agent.enforcement.expect()
    assert agent.enforcement.expect() is first and agent.node_cgroups() and asked == [1], "one answer for the pod"
    agent.resize("default/res-demo", {"spec": {"containers": [{"name": "hello",
                                                               "resources": {"limits": {"memory": "160Mi"}}}]}})
    resized = agent.enforcement.expect()
    assert resized is not first and resized.pods[0].pod == agent.pods["default/res-demo"].pod
    agent.set_objects([{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "other"},
                        "spec": {"limits": [{"type": "Container", "default": {"memory": "64Mi"}}]}}])
    calls = len(asked)
    assert agent.enforcement.expect() is not resized and len(asked) == calls + 1, "new objects: computed anew"
    calls = len(asked)
    agent.configure({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                     "podPidsLimit": 64})
    configured = agent.enforcement.expect()
    assert len(asked) > calls and configured is agent.enforcement.expect(), "a new config: computed anew, once"
    pod_cgroup = configured.pods[0].cgroup
    assert pod_cgroup is not None and configured.node_limits[pod_cgroup.path]["pids.max"].value == "64"


def test_shutdown_leaves_nothing(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    pid = containers(agent.run_pod(res_demo())["status"])["hello"]["pid"]
    agent.shutdown()
    assert agent.tree.owned_roots() == []
    assert not (tmp_path / "state" / "state.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_exec_runs_in_the_container(agent: Agent) -> None:
    agent.run_pod(res_demo())
    result = agent.exec_in("default/res-demo", "hello", ["sh", "-c", "echo $$; cat /proc/self/oom_score_adj"], 10)
    pid, adj = result["stdout"].split()
    cgroup = containers(agent.status("default/res-demo"))["hello"]["cgroup"]
    assert (result["rc"], adj) == (0, "963")
    assert read(agent, cgroup, "cgroup.procs") == pid


def test_metrics_text(agent: Agent) -> None:
    agent.run_pod(res_demo())
    cgroup = containers(agent.status("default/res-demo"))["hello"]["cgroup"]
    (agent.tree.dir(cgroup) / "memory.swap.current").write_text("4096\n")
    text = agent.readouts.metrics()
    assert "kubelet_node_swap_allocated_bytes 0" in text
    assert 'container_swap_usage_bytes{container="hello",namespace="default",pod="res-demo"} 4096' in text


def test_old_kernel_warning_logged_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Memory QoS post: a kernel older than 5.9 gets a startup warning (memory.high livelock), never a refusal."""
    old_kernel = dataclasses.replace(ARTICLE_NODE, kernel_version="5.4.0-150-generic")
    with caplog.at_level(logging.WARNING, logger="nodeconf.enforcer"):
        agent = make_agent(tmp_path, facts=old_kernel)
    try:
        assert any("kernel 5.4.0-150-generic is older than 5.9" in r.getMessage() for r in caplog.records)
        assert agent.run_pod(res_demo())["admitted"]
    finally:
        agent.shutdown()


def _manifest_docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((WORKLOADS / "requests-limits" / name).read_text()) if d]


def test_namespace_admission_through_the_oracle(agent: Agent) -> None:
    """The article's LimitRange: `plain` gets 128Mi (default limit), `huge` (4Gi) and `tiny` (16Mi) are refused
    with the article's messages and create nothing."""
    agent.set_objects(_manifest_docs("limitrange.yaml"))
    plain, huge, tiny = _manifest_docs("quota-test-pods.yaml")
    status = agent.run_pod(plain)["status"]
    assert read(agent, containers(status)["plain"]["cgroup"], "memory.max") == str(128 * MI)
    assert "maximum memory usage per Container is 2Gi, but limit is 4Gi" in " ".join(agent.run_pod(huge)["errors"])
    assert "minimum memory usage per Container is 32Mi, but request is 16Mi" in " ".join(agent.run_pod(tiny)["errors"])
    assert [r.pod.name for r in agent.pods.values()] == ["plain"]


def test_cgroup_driver_switch(agent: Agent) -> None:
    """cgroupfs driver: kubepods/burstable/pod<uid> (SEMANTICS.md Cgroup layout); no switch under running pods."""
    cgroupfs = {"kind": "KubeletConfiguration", "cgroupDriver": "cgroupfs"}
    agent.run_pod(res_demo())
    with pytest.raises(AgentError, match="cgroupDriver cannot change from systemd to cgroupfs while pods run"):
        agent.configure(cgroupfs)
    agent.delete("default/res-demo")
    agent.configure(cgroupfs)
    assert agent.tree.owned_roots() == ["kubepods"]
    status = agent.run_pod(res_demo())["status"]
    assert status["cgroup"] == f"kubepods/burstable/pod{agent.pods['default/res-demo'].pod.uid}"
    agent.reset()
    assert agent.tree.owned_roots() == ["kubepods.slice"] and not agent.pods


def test_a_run_does_not_revisit_unchanged_cgroups_of_earlier_pods(agent: Agent,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run ensures only the cgroups it writes: the count stays flat as pods accumulate (it grew with them)."""
    ensured: list[str] = []
    real = agent.tree.ensure

    def counted(path: str) -> None:
        ensured.append(path)
        real(path)

    monkeypatch.setattr(agent.tree, "ensure", counted)
    counts = []
    for i in range(6):
        ensured.clear()
        agent.run_pod(pod_manifest(container("app", requests={"cpu": "100m", "memory": "32Mi"}), name=f"p-{i}"))
        counts.append(len(ensured))
    assert counts[1:] == [counts[1]] * 5
