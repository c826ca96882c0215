"""The Kubernetes version of a kind node image and the feature gates it knows (nodeconf/infra/kind/versions.py).

Expected values: kind's default images per release (pkg/apis/config/defaults/image.go at the tags v0.30.0,
v0.31.0, v0.32.0) and each gate's first version in kubernetes pkg/features/kube_features.go.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodeconf.infra.kind.configs import KIND_DIR, kind_configs
from nodeconf.infra.kind.versions import gate_problem, image_version, kind_release, node_image_version


@pytest.mark.parametrize(("output", "release"), [
    ("kind v0.31.0 go1.24.4 linux/amd64\n", "0.31.0"),
    ("0.30.0\n", "0.30.0"),  # kind version -q
    ("kind v0.33.0-alpha.12+0123456789abcd go1.25.0 linux/amd64", None),
    ("", None),
])
def test_kind_release(output: str, release: str | None) -> None:
    assert kind_release(output) == release


@pytest.mark.parametrize(("image", "version"), [
    ("kindest/node:v1.35.0@sha256:aabfbaf916de1af22a1e0bf56307b9f775e8e8961a61a653c86e373320dbea2e", (1, 35)),
    ("kindest/node:v1.37.0-rc.1", (1, 37)),
    ("registry.example:5000/kindest/node:v1.34.2", (1, 34)),
    ("kindest/node:latest", None),
    ("kindest/node@sha256:aabf", None),
])
def test_image_version(image: str, version: tuple[int, int] | None) -> None:
    assert image_version(image) == version


def test_node_images_decide_over_the_default_and_must_agree() -> None:
    kind = "kind v0.32.0 go1.24 linux/amd64"
    assert node_image_version({"nodes": [{"role": "control-plane"}]}, kind) == (
        (1, 36), "kind v0.32.0's default node image kindest/node:v1.36.1")
    assert node_image_version({}, "kind v0.30.0 go1.24 linux/amd64")[0] == (1, 34)
    pinned = {"nodes": [{"role": "control-plane", "image": "kindest/node:v1.34.0"}]}
    assert node_image_version(pinned, kind) == ((1, 34), "node image kindest/node:v1.34.0")
    mixed = {"nodes": [{"image": "kindest/node:v1.34.0"}, {"role": "worker"}]}
    assert node_image_version(mixed, kind)[0] is None


@pytest.mark.parametrize(("gates", "version", "problem"), [
    ({"MemoryQoS"}, (1, 35), None),
    ({"PodLevelResources"}, (1, 32), None),
    ({"PodLevelResources"}, (1, 31), "the image runs Kubernetes 1.31, which does not know feature gate "
                                     "PodLevelResources (added in 1.32)"),
    ({"WorkloadControlledSwap"}, (1, 36), "no Kubernetes release knows feature gate WorkloadControlledSwap, and kind "
                                          "passes it to every component unchecked"),
    ({"NoSuchGate"}, (1, 36), "feature gate NoSuchGate is not in nodeconf's table of gates "
                              "(nodeconf/infra/kind/versions.py), so whether the image knows it cannot be checked"),
    ({"MemoryQoS"}, None, "feature gate MemoryQoS needs Kubernetes 1.22 or newer, and which version the image runs "
                          "is unknown; name the image in the config's nodes[].image"),
    (set(), None, None),
])
def test_gate_problem(gates: set[str], version: tuple[int, int] | None, problem: str | None) -> None:
    assert gate_problem(gates, version, "the image") == problem


@pytest.mark.parametrize("path", sorted(KIND_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_config_fits_the_newest_kinds_default_image(path: Path) -> None:
    """Each config in nodeconf/infra/kind/ creates a cluster with kind v0.32.0's default image (Kubernetes 1.36)."""
    config = kind_configs(KIND_DIR)[path]
    cluster = yaml.safe_load(path.read_text(encoding="utf-8"))
    version, where = node_image_version(cluster, "kind v0.32.0 go1.24 linux/amd64")
    assert gate_problem(config.feature_gates, version, where) is None
