"""Memory QoS through `nodeconf explain`: the post's cgroup paths and values, the hierarchy, metrics, deviations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeconf.loader import load_kubelet_config, load_objects
from nodeconf.manifest import Pod
from nodeconf.node_facts import NodeFacts
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for

ROOT = Path(__file__).resolve().parents[3]
QOS = ROOT / "workloads" / "memory-qos"
TIERED = QOS / "kubelet-tiered-reservation.yaml"
MANIFESTS = [QOS / "guaranteed-512mi.yaml", QOS / "burstable-512mi.yaml", QOS / "besteffort.yaml"]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodeconf", "explain", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)


@pytest.fixture(scope="module")
def post() -> dict[str, Any]:
    done = run(*MANIFESTS, "--kubelet-config", TIERED, "--kubernetes-version", "1.36", "--memory", "8Gi")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_post_paths_and_protection(post: dict[str, Any]) -> None:
    by_name = {p["name"]: p for p in post["pods"]}
    guaranteed, burstable = by_name["guaranteed-512mi"]["cgroup"], by_name["burstable-512mi"]["cgroup"]
    # The post's `cat` paths, with the uids of its manifests.
    assert guaranteed["path"] == "kubepods.slice/kubepods-pod6a4f2e3b_1c9d_4a5e_8f7b_2d3e4f5a6b7c.slice"
    assert guaranteed["files"]["memory.min"] == "536870912"
    assert burstable["path"] == ("kubepods.slice/kubepods-burstable.slice/"
                                 "kubepods-burstable-pod8b3c7d2e_4f5a_6b7c_9d1e_3f4a5b6c7d8e.slice")
    assert burstable["files"]["memory.low"] == "536870912"
    assert {p["cgroup"]["files"]["memory.high"] for p in post["pods"]} == {"max"}


def test_post_hierarchy_and_metrics(post: dict[str, Any]) -> None:
    cgroups = post["cgroups"]
    assert cgroups["kubepods.slice"]["memory.min"] == "1073741824"  # Guaranteed 512Mi + Burstable 512Mi
    assert cgroups["kubepods.slice/kubepods-burstable.slice"]["memory.low"] == "536870912"
    assert cgroups["kubepods.slice/kubepods-besteffort.slice"]["memory.min"] == "0"
    assert post["metrics"]["kubelet_memory_qos_node_memory_min_bytes"] == 536870912
    assert post["metrics"]["kubelet_memory_qos_node_memory_low_bytes"] == 536870912


def test_besteffort_memory_high_with_accepted_deviation(post: dict[str, Any]) -> None:
    (besteffort,) = [p for p in post["pods"] if p["name"] == "besteffort"]
    cgroup = besteffort["containers"][0]["cgroup"]
    assert cgroup["files"]["memory.high"] == "7730937856"  # 0.9 × 8Gi (no eviction threshold), page-floored
    assert "kubernetes#137685" in cgroup["accepted"]["memory.high"]["max"]


def test_table_lists_the_metrics() -> None:
    done = run(*MANIFESTS, "--kubelet-config", TIERED, "--kubernetes-version", "1.36", "-o", "table")
    assert done.returncode == 0, done.stderr
    assert "kubelet_memory_qos_node_memory_min_bytes 536870912" in done.stdout
    assert "kubelet_memory_qos_node_memory_low_bytes 536870912" in done.stdout


def test_kernel_warning_reaches_the_node_expectation() -> None:
    pods = [o for o in load_objects(MANIFESTS) if isinstance(o, Pod)]
    config = load_kubelet_config(TIERED)
    old_kernel = NodeFacts(memory_capacity=8 * 2**30, kernel_version="5.4.0-42-generic")
    result = expect(pods, old_kernel, config, profile_for("1.36", config))
    assert len(result.warnings) == 1 and "5.9" in result.warnings[0]
    assert all(p.admitted for p in result.pods)
