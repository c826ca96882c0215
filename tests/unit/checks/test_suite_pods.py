"""The suites' manifest helpers: seed pods loaded as written, scaled only by whole powers of two."""

from __future__ import annotations

import secrets
import subprocess
import sys

import pytest

from nodeconf.manifest import MEMORY, SWAP
from suites.toolkit.pods import fit_to_node, memory_divisor, pod, renamed, scaled, stop_program, with_container

MI = 1024**2
GI = 1024**3
VM_MEMORY = 2 * GI


def test_kep_pod_level_swap_mixed_scales_to_a_2gib_node() -> None:
    mixed = pod("kep-5359/use-case-4-pod-level-swap-mixed.yaml")
    # largest figure is the pod's 8Gi limit; an eighth of 2 GiB is 256 MiB: 8Gi / 32.
    assert memory_divisor(mixed, VM_MEMORY) == 32
    small = fit_to_node(mixed, VM_MEMORY)
    assert small.resources is not None
    assert small.resources.requests[MEMORY].value() == 128 * MI
    assert small.resources.limits[MEMORY].value() == 256 * MI
    assert small.resources.limits[SWAP].value() == 64 * MI
    c1, c2, c3, _ = small.containers
    assert c1.resources.limits[SWAP].is_zero()
    assert c1.resources.limits[MEMORY].value() == 32 * MI
    assert c2.resources.limits[SWAP].value() == 16 * MI
    assert c3.resources.is_empty()


def test_small_pods_are_deployed_as_written() -> None:
    demo = pod("requests-limits/res-demo.yaml")
    assert memory_divisor(demo, VM_MEMORY) == 1
    assert fit_to_node(demo, VM_MEMORY) is demo


def test_scaling_keeps_cpu() -> None:
    guaranteed = pod("kep-5359/guaranteed-with-swap.yaml")
    small = scaled(guaranteed, 8)
    assert small.containers[0].resources.limits["cpu"] == guaranteed.containers[0].resources.limits["cpu"]
    assert small.containers[0].resources.limits[MEMORY].value() == 128 * MI


def test_renamed_pod_gets_its_own_uid() -> None:
    demo = pod("requests-limits/res-demo.yaml")
    other = renamed(demo, "res-demo-2")
    assert other.name == "res-demo-2" and other.uid != demo.uid


def test_with_container_replaces_only_what_is_given() -> None:
    burner = pod("requests-limits/burner.yaml")
    changed = with_container(burner, "burner", limits={"cpu": "300m", "memory": "16Mi"})
    assert changed.containers[0].command == burner.containers[0].command
    assert changed.containers[0].resources.requests == burner.containers[0].resources.requests
    assert changed.containers[0].resources.limits["cpu"].milli_value() == 300


def test_unknown_container_and_manifest_are_named() -> None:
    with pytest.raises(LookupError, match="has no container 'nope'"):
        with_container(pod("requests-limits/res-demo.yaml"), "nope", command=["true"])
    with pytest.raises(FileNotFoundError, match=r"workloads/none\.yaml"):
        pod("none.yaml")
    with pytest.raises(LookupError, match="expected one pod, found 3"):
        pod("requests-limits/qos-classes.yaml")


def test_stop_program_is_pkill_f_without_procps() -> None:
    """python:slim has no pkill: the suites stop a workload with python3 itself, pkill's way (SIGTERM to every
    process whose command line contains the word, exit 1 when none), never matching its own command line."""
    word = f"nodeconf-canary-{secrets.token_hex(4)}.py"
    canary = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", word])
    try:
        argv = stop_program(word)
        assert not any(word in part for part in argv)
        assert subprocess.run(argv, check=False, timeout=30).returncode == 0
        assert canary.wait(timeout=10) == -15  # SIGTERM
        assert subprocess.run(argv, check=False, timeout=30).returncode == 1
    finally:
        canary.kill()
        canary.wait()
