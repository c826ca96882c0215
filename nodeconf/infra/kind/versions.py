"""Which Kubernetes version a kind node image runs, and which feature gates that version knows.

Sources: kind pkg/apis/config/defaults/image.go at each release tag (the default node image);
kubernetes pkg/features/kube_features.go (each gate's first `version.MustParse` entry).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from nodeconf.errors import InputError

# kind release -> Kubernetes version of its default node image (`const Image` in
# pkg/apis/config/defaults/image.go at the release tag). `kind version` names the release, not the image.
KIND_DEFAULT_IMAGE: Mapping[str, str] = {
    "0.24.0": "1.31.0",
    "0.25.0": "1.31.2",
    "0.26.0": "1.32.0",
    "0.27.0": "1.32.2",
    "0.28.0": "1.33.1",
    "0.29.0": "1.33.1",
    "0.30.0": "1.34.0",
    "0.31.0": "1.35.0",
    "0.32.0": "1.36.1",
}

# Feature gate -> first Kubernetes minor version that knows it (kube_features.go, the gate's first versioned
# spec); None: no release knows it. A component given a gate it does not know refuses to start
# ("unrecognized feature gate"), and kind passes a cluster's gates to every component unchecked.
GATE_SINCE: Mapping[str, tuple[int, int] | None] = {
    "MemoryQoS": (1, 22),  # alpha 1.22
    "NodeSwap": (1, 22),  # alpha 1.22, beta 1.28, GA 1.34
    "InPlacePodVerticalScaling": (1, 27),  # alpha 1.27, beta 1.33
    "PodLevelResources": (1, 32),  # alpha 1.32, beta 1.34
    "InPlacePodLevelResourcesVerticalScaling": (1, 35),  # alpha 1.35
    "PodLevelResourcesFixKubeletQOSClass": (1, 36),  # kubernetes#137150 (profile.py)
    "WorkloadControlledSwap": None,  # KEP-5359 is not merged (infra/kind/README.md)
}

KIND_VERSION = re.compile(r"\bv?(\d+\.\d+\.\d+)(-\S+)?")
IMAGE_TAG = re.compile(r":v(\d+)\.(\d+)\.(\d+)(?:[-+][^@]*)?(?:@|$)")


def kind_release(version_output: str) -> str | None:
    """The release `kind version` names (`kind v0.31.0 go1.24 linux/amd64` -> 0.31.0); None for a pre-release
    (its default image is not fixed) or unreadable output."""
    match = KIND_VERSION.search(version_output)
    if not match or match.group(2):
        return None
    return match.group(1)


def image_version(image: str) -> tuple[int, int] | None:
    """(major, minor) of a node image reference `kindest/node:v1.35.0[@sha256:...]`; None without a version tag."""
    match = IMAGE_TAG.search(image)
    return (int(match.group(1)), int(match.group(2))) if match else None


def default_image(version_output: str) -> tuple[tuple[int, int] | None, str]:
    """The Kubernetes (major, minor) of the default node image of the kind release `kind version` names."""
    release = kind_release(version_output)
    default = KIND_DEFAULT_IMAGE.get(release or "")
    if default is None:
        return None, f"the default node image of {version_output.strip() or 'this kind'}"
    major, minor, _ = default.split(".")
    return (int(major), int(minor)), f"kind v{release}'s default node image kindest/node:v{default}"


def node_image_version(cluster: Mapping[str, Any], version_output: str) -> tuple[tuple[int, int] | None, str]:
    """The Kubernetes (major, minor) every node of a kind Cluster document runs, and where that was read.

    A node's `image` when it names one, else the default image of the kind release; None when a node's version
    cannot be told or the nodes differ.
    """
    found: dict[str, tuple[int, int] | None] = {}
    for node in cluster.get("nodes") or [{}]:
        image = node.get("image") if isinstance(node, Mapping) else None
        if image:
            found[f"node image {image}"] = image_version(str(image))
        else:
            version, where = default_image(version_output)
            found[where] = version
    versions = set(found.values())
    where = ", ".join(sorted(found))
    return (versions.pop() if len(versions) == 1 else None), where


def gate_problem(gates: Iterable[str], version: tuple[int, int] | None, where: str) -> str | None:
    """Why a node running `version` cannot take these feature gates (one line), None when it can."""
    for gate in sorted(gates):
        if gate not in GATE_SINCE:
            return (f"feature gate {gate} is not in nodeconf's table of gates (infra/kind/versions.py), so "
                    f"whether {where} knows it cannot be checked")
        since = GATE_SINCE[gate]
        if since is None:
            return f"no Kubernetes release knows feature gate {gate}, and kind passes it to every component unchecked"
        if version is None:
            return (f"feature gate {gate} needs Kubernetes {since[0]}.{since[1]} or newer, and which version "
                    f"{where} runs is unknown; name the image in the config's nodes[].image")
        if version < since:
            return (f"{where} runs Kubernetes {version[0]}.{version[1]}, which does not know feature gate {gate} "
                    f"(added in {since[0]}.{since[1]})")
    return None


def check_gates(gates: Iterable[str], version: tuple[int, int] | None, where: str, source: str) -> None:
    """InputError naming the config when its gates do not fit the node image."""
    problem = gate_problem(gates, version, where)
    if problem:
        raise InputError(problem, source=source, field="featureGates")
