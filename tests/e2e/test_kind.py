"""`--node kind` for real: create the cluster nodeconf-limitedswap-RUNID with kind, run the kube driver on its node,
delete it. Runs where kind works (kind and a container engine on PATH, the engine's `info` succeeds); skips with the
reason elsewhere. Takes minutes (kind pulls its node image the first time).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nodeconf.infra.kind.provision import DETECTED, PROVIDERS, missing_tools, open_kind_node
from nodeconf.loader import load_kubelet_config

LIMITED_SWAP = Path(__file__).resolve().parents[2] / "workloads" / "kep-5359" / "kubelet-config" / "limited-swap.yaml"


def kind_unusable() -> str | None:
    """Why kind cannot create a cluster here, None when it can."""
    missing = missing_tools()
    if missing:
        return f"{' and '.join(missing)} not on PATH"
    provider = os.environ.get("KIND_EXPERIMENTAL_PROVIDER", "")
    engine = PROVIDERS.get(provider) or next(e for e in DETECTED if shutil.which(e))
    try:
        info = subprocess.run([engine, "info"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"`{engine} info` failed: {err}"
    if info.returncode:
        lines = info.stderr.strip().splitlines()
        return f"`{engine} info` failed: {lines[-1] if lines else f'exit {info.returncode}'}"
    return None


REASON = kind_unusable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"kind cannot create a cluster here: {REASON}")


def clusters() -> list[str]:
    return subprocess.run(["kind", "get", "clusters"], capture_output=True, text=True, timeout=60,
                          check=True).stdout.split()


def test_kind_node_runs_the_kube_driver_and_is_deleted_afterwards() -> None:
    before = set(clusters())
    node = open_kind_node(None, kubelet_config=None, keep=False, profile=None, progress=print)
    try:
        name = node.spec.removeprefix("kube:kind-")
        assert name.startswith("nodeconf-limitedswap-") and name in clusters() and name not in before
        facts = node.facts()
        assert facts.memory_capacity > 0 and "memory" in facts.cgroup_controllers
        # The config kind was given is the one the node's kubelet runs (its /configz), as nodeconf compares it.
        assert node.configure(load_kubelet_config(LIMITED_SWAP)) == ()
    finally:
        node.close()
    assert name not in clusters()
