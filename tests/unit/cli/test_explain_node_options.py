"""`nodeconf explain` on issue 15's node questions: a node without the swap controller, gates nodeconf does not
know, reserves the kubelet refuses, and activeDeadlineSeconds in quota scopes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers:\n"
       "  - {name: c, image: x, resources: {requests: {memory: 1Gi}, limits: {memory: 2Gi}}}\n")


def explain(tmp_path: Path, kubelet: str, *args: str, manifest: str = POD) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pod.yaml").write_text(manifest)
    (tmp_path / "kubelet.yaml").write_text("kind: KubeletConfiguration\n" + kubelet)
    return subprocess.run(
        [sys.executable, "-m", "nodeconf", "explain", str(tmp_path / "pod.yaml"), "--kubelet-config",
         str(tmp_path / "kubelet.yaml"), *args],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )


def container(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    c: dict[str, Any] = json.loads(done.stdout)["pods"][0]["containers"][0]
    return c


def test_no_swap_controller_writes_no_swap_setting(tmp_path: Path) -> None:
    """configureContainerSwapResources runs only if swapControllerAvailable (RUNTIME-FACTS.md §2a)."""
    limited = "memorySwap: {swapBehavior: LimitedSwap}\n"
    with_controller = container(explain(tmp_path, limited))
    assert with_controller["cgroup"]["files"]["memory.swap.max"] not in ("0", "max")
    done = explain(tmp_path, limited, "--no-swap-controller")
    without = container(done)
    assert without["cgroup"]["files"]["memory.swap.max"] == "max"
    assert "swapControllerAvailable" in without["cgroup"]["rules"]["memory.swap.max"]
    assert json.loads(done.stdout)["node"]["swapController"] is False


def test_unknown_gate_is_a_warning_naming_it(tmp_path: Path) -> None:
    done = explain(tmp_path, "featureGates: {NoSuchGate: true}\n")
    assert done.returncode == 0
    assert any(line.startswith("nodeconf: warning: featureGates.NoSuchGate:") for line in done.stderr.splitlines())
    assert "NoSuchGate" in json.loads(done.stdout)["warnings"][0]


def test_reserves_above_capacity_exit_2_in_one_line(tmp_path: Path) -> None:
    """validateNodeAllocatable: the kubelet does not start, so there is no node to explain."""
    done = explain(tmp_path, "systemReserved: {memory: 6Gi}\nkubeReserved: {memory: 2Gi}\n", "--memory", "8Gi")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("nodeconf: /") and line.endswith(
        "/kubelet.yaml: KubeletConfiguration: systemReserved/kubeReserved: the kubelet refuses to start (Node "
        "Allocatable: expected capacity >= reservation): memory reservation "
        f"{8 * 2**30 + 100 * 2**20} > capacity {8 * 2**30}"), line


def test_active_deadline_pod_counts_against_the_terminating_quota(tmp_path: Path) -> None:
    manifest = ("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: t}\nspec: {hard: {pods: '1'}, "
                "scopes: [Terminating]}\n---\n" + POD + "  activeDeadlineSeconds: 30\n---\n"
                + POD.replace("name: app", "name: app2") + "  activeDeadlineSeconds: 30\n---\n"
                + POD.replace("name: app", "name: plain"))
    done = explain(tmp_path, "", manifest=manifest)
    assert done.returncode == 0, done.stderr
    admitted = {p["name"]: p["admitted"] for p in json.loads(done.stdout)["pods"]}
    assert admitted == {"app": True, "app2": False, "plain": True}


def test_node_limits_section(tmp_path: Path) -> None:
    manifest = POD.replace("limits: {memory: 2Gi}", "limits: {memory: 2Gi, hugepages-2Mi: 4Mi}")
    done = explain(tmp_path, "podPidsLimit: 512\n", "--pids", "32768", "--hugepages", "2Mi=64Mi,1Gi=0",
                   manifest=manifest)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    pod_path = out["pods"][0]["cgroup"]["path"]
    assert out["nodeLimits"][pod_path] == {"pids.max": "512", "hugetlb.2MB.max": str(4 * 2**20),
                                           "hugetlb.2MB.rsvd.max": str(4 * 2**20), "hugetlb.1GB.max": "0",
                                           "hugetlb.1GB.rsvd.max": "0"}
    assert out["nodeLimits"]["kubepods.slice"]["pids.max"] == "32768"
    # The 64 Mi pool is capacity and allocatable hugepages-2Mi and leaves allocatable memory (setters.go MachineInfo).
    assert out["node"]["hugepages"] == {"hugepages-2Mi": {"capacity": 64 * 2**20, "allocatable": 64 * 2**20},
                                        "hugepages-1Gi": {"capacity": 0, "allocatable": 0}}
    assert out["node"]["memoryCapacity"] - out["node"]["allocatableMemory"] == (100 + 64) * 2**20
    assert "EnsureExists" in out["nodeLimitRules"][pod_path]["pids.max"]


def test_bad_hugepages_flag_is_one_line_exit_2(tmp_path: Path) -> None:
    done = explain(tmp_path, "", "--hugepages", "3Mi=6Mi")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "--hugepages: expected SIZE=TOTAL with a power-of-two SIZE" in done.stderr
