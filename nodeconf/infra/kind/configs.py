"""The kind cluster configs beside this module (`infra/kind/*.yaml`): the kubelet configuration each gives, which
one a run uses, and which one gives a requested kubelet configuration.

Source: kind pkg/cluster/internal/kubeadm/config.go (the cluster's featureGates reach every component);
nodeconf/infra/kind/README.md (why a config is missing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_from_dict
from nodeconf.nodes.kube.facts import kubelet_config_differences

KIND_DIR = Path(__file__).resolve().parent
DEFAULT_CONFIG = "limitedswap"
CONFIG_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*")  # kind cluster names: lower case, digits, '.', '-'
KUBELET_CONFIGURATION = "KubeletConfiguration"


def kind_kubelet_config(doc: Mapping[str, Any], source: str) -> KubeletConfig:
    """The kubelet config a kind Cluster document gives: its KubeletConfiguration patch plus cluster gates.

    kind writes the cluster's `featureGates` into every component's configuration, the kubelet's included
    (kind pkg/cluster/internal/kubeadm/config.go).
    """
    patches = [yaml.safe_load(text) for text in doc.get("kubeadmConfigPatches") or ()]
    kubelet = [p for p in patches if isinstance(p, Mapping) and p.get("kind") == KUBELET_CONFIGURATION]
    if len(kubelet) != 1:
        raise InputError(f"expected one {KUBELET_CONFIGURATION} patch, found {len(kubelet)}", source=source,
                         obj="Cluster", field="kubeadmConfigPatches")
    gates = {**(doc.get("featureGates") or {}), **(kubelet[0].get("featureGates") or {})}
    return kubelet_config_from_dict({**kubelet[0], "featureGates": gates}, source=source)


def kind_configs(directory: Path = KIND_DIR) -> dict[Path, KubeletConfig]:
    """Every kind cluster config in the directory with the kubelet config it gives."""
    out: dict[Path, KubeletConfig] = {}
    for path in sorted(directory.glob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            out[path] = kind_kubelet_config(yaml.safe_load(handle) or {}, str(path))
    return out


# Why nodeconf/infra/kind/ has no config for it (nodeconf/infra/kind/README.md).
NO_KIND_CONFIG = {
    "WorkloadControlledSwap": "no released kind node image knows the WorkloadControlledSwap feature gate "
                              "(KEP-5359 is not merged) and kind passes gate names to every component unchecked, "
                              "so such a cluster does not come up",
}


def kind_advice(requested: KubeletConfig, directory: Path = KIND_DIR) -> str:
    """How to get a kind node with the requested kubelet config (a kind kubelet cannot be reconfigured in place)."""
    for path, config in kind_configs(directory).items():
        if not kubelet_config_differences(requested, config):
            return f"create the kind cluster with `kind create cluster --config {path}`"
    why = NO_KIND_CONFIG.get(requested.swap_behavior)
    if why:
        return f"no config in {directory} gives swapBehavior {requested.swap_behavior}: {why}"
    return (f"no config in {directory} matches; create the kind cluster from a copy of one with the "
            f"KubeletConfiguration patch changed")


@dataclass(frozen=True)
class KindConfig:
    """One cluster config of nodeconf/infra/kind/: its name, file, Cluster document and the kubelet config it gives."""

    name: str
    path: Path
    cluster: Mapping[str, Any]
    kubelet: KubeletConfig


def resolve_config(name: str | None, requested: KubeletConfig | None, directory: Path = KIND_DIR) -> KindConfig:
    """The config named (a file name under `directory`, `.yaml` optional), else the one giving the `requested`
    kubelet configuration (the run's, loaded once; its source names the file), else `limitedswap`; InputError with
    the reason otherwise."""
    configs = kind_configs(directory)
    by_name = {path.stem: path for path in configs}
    if name is not None:
        stem = name.removesuffix(".yaml")
        if stem not in by_name or not CONFIG_NAME.fullmatch(stem):
            raise InputError(f"no kind config {name!r} in {directory} (configs: {', '.join(sorted(by_name))})",
                             field="--node")
        path = by_name[stem]
    elif requested is not None:
        matching = [p for p, given in configs.items() if not kubelet_config_differences(requested, given)]
        if not matching:
            raise InputError(f"no kind config gives this kubelet configuration: {kind_advice(requested, directory)}",
                             source=requested.source, field="--kubelet-config")
        path = matching[0]
    else:
        path = by_name[DEFAULT_CONFIG]
    cluster = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return KindConfig(path.stem, path, cluster, configs[path])
