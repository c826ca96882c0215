"""Profiles: a Kubernetes minor version with its feature-gate defaults, as the oracle keys its rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig

SUPPORTED_VERSIONS = ("1.34", "1.35", "1.36", "1.37", "1.38")
DEFAULT_VERSION = "1.38"

# Gate defaults of each profile. The newest profile turns the seeds' features on (SEMANTICS.md "profile");
# a gate absent from a version's table does not exist in that version and is always off.
_GATE_DEFAULTS: Mapping[str, Mapping[str, bool]] = {
    "1.34": {"MemoryQoS": False},
    "1.35": {"MemoryQoS": False},
    "1.36": {"MemoryQoS": True},
    "1.37": {"MemoryQoS": True},
    "1.38": {"MemoryQoS": True, "WorkloadControlledSwap": True},
}


@dataclass(frozen=True)
class Profile:
    """A Kubernetes version and its effective feature gates."""

    version: str = DEFAULT_VERSION
    gates: Mapping[str, bool] = field(default_factory=dict)

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    def gate(self, name: str) -> bool:
        return self.gates.get(name, False)

    def at_least(self, version: str) -> bool:
        return self.minor >= int(version.split(".")[1])


def profile_for(version: str = DEFAULT_VERSION, config: KubeletConfig | None = None) -> Profile:
    """The profile of `version`, with the kubelet config's featureGates applied where the gate exists."""
    if version not in SUPPORTED_VERSIONS:
        raise InputError(
            f"unknown Kubernetes version {version!r} (supported: {', '.join(SUPPORTED_VERSIONS)})",
            field="--kubernetes-version",
        )
    defaults = _GATE_DEFAULTS[version]
    overrides = {k: v for k, v in (config.feature_gates if config else {}).items() if k in defaults}
    return Profile(version=version, gates={**defaults, **overrides})
