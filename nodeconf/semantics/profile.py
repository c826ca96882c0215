"""Profiles: a Kubernetes minor version with its feature-gate defaults, as the oracle keys its rules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig

SUPPORTED_VERSIONS = ("1.34", "1.35", "1.36", "1.37", "1.38")
DEFAULT_VERSION = "1.38"
PROFILE_VERSION = re.compile(r"\d+\.\d+")  # what --profile and a matrix entry accept: X.Y

# Gate defaults of each profile; a gate absent from a version's table does not exist there and is always off.
# MemoryQoS: alpha and off through 1.36 (requests/limits article: "in 1.36 it is still alpha and disabled by
# default"), beta and on from 1.37 (Kubernetes blog "v1.37: Memory QoS Graduates to Beta").
# WorkloadControlledSwap: alpha in 1.38 (KEP-5359 "Milestones: Alpha v1.38", "Graduation Criteria / Alpha: Feature
# implemented behind a feature flag WorkloadControlledSwap"; SEMANTICS.md "Swap": its rules hold "with the
# WorkloadControlledSwap feature gate on"), so off by default as every alpha gate (Kubernetes docs "Feature Gates":
# "Alpha ... Disabled by default"): a profile describes a node with default gates; only the kubelet config's
# featureGates turn an alpha gate on (issue 32), as the KEP-5359 checks do in the kubelet config they configure.
# NodeSwap is GA since 1.34 and has no gate here.
# PodLevelResources: beta and on since 1.34 (requests/limits article); PodLevelResourcesFixKubeletQOSClass
# exists from 1.36 and is on from 1.37 (kubernetes#137150).
# InPlacePodVerticalScalingAllocatedStatus: alpha in 1.32, deprecated and off from 1.33, "remove in 1.36"
# (pkg/features/kube_features.go); upstream's newer node resize e2e ("Pod InPlace Resize Container Basic Cases")
# no longer sets it, so it exists through 1.35 here. It changes nothing the kubelet does: the kubelet reports a
# container's allocatedResources whatever its value (semantics/resize.py allocated_resources).
_GATE_DEFAULTS: Mapping[str, Mapping[str, bool]] = {
    "1.34": {"MemoryQoS": False, "PodLevelResources": True, "InPlacePodVerticalScalingAllocatedStatus": False},
    "1.35": {"MemoryQoS": False, "PodLevelResources": True, "InPlacePodVerticalScalingAllocatedStatus": False},
    "1.36": {"MemoryQoS": False, "PodLevelResources": True, "PodLevelResourcesFixKubeletQOSClass": False},
    "1.37": {"MemoryQoS": True, "PodLevelResources": True, "PodLevelResourcesFixKubeletQOSClass": True},
    "1.38": {
        "MemoryQoS": True,
        "PodLevelResources": True,
        "PodLevelResourcesFixKubeletQOSClass": True,
        "WorkloadControlledSwap": False,
    },
}

# Gates every profile knows, with their default. CustomCPUCFSQuotaPeriod: alpha and off; kubelet validation refuses
# a non-default cpuCFSQuotaPeriod without it (pkg/kubelet/apis/config/validation). KubeletPSI: alpha in 1.33, beta
# and on from 1.34 (pkg/features/kube_features.go), so on in every supported profile.
# InPlacePodVerticalScalingExclusiveCPUs: alpha and off since 1.32 (kube_features.go; upstream's newest node resize
# e2e still switches it). The kubelet reads it only where the CPU manager's policy is static (allocation
# handlers.go, before allocation_manager.go canResizePod: a Guaranteed pod's cpu resize is Infeasible unless the gate
# is on; with it on the containers keep the CPUs they hold, policy_static.go Allocate; semantics/cpu_manager.py).
# DisableCPUQuotaWithExclusiveCPUs: beta and on from 1.33 (kube_features.go): no CFS quota where the static policy
# gives a container CPUs of its own.
_EVERY_VERSION: Mapping[str, bool] = {
    "CustomCPUCFSQuotaPeriod": False,
    "KubeletPSI": True,
    "InPlacePodVerticalScalingExclusiveCPUs": False,
    "DisableCPUQuotaWithExclusiveCPUs": True,
}

# memoryThrottlingFactor when the kubelet config leaves it out: 0.9 through 1.36 (v1beta1
# DefaultMemoryThrottlingFactor; Memory QoS v1.36 post), null from 1.37 = no memory.high (v1.37 Memory QoS blog).
_DEFAULT_THROTTLING_FACTOR: Mapping[str, float | None] = {
    "1.34": 0.9,
    "1.35": 0.9,
    "1.36": 0.9,
    "1.37": None,
    "1.38": None,
}

# Known shipped deviations from the seeds, by upstream issue, with the last minor version that ships them.
MEMORY_HIGH_WITHOUT_MEMORY = "kubernetes#137685"
KUBEPODS_MEMORY_LOW_MISSING = "kubernetes#140267"
_DEVIATIONS_UNTIL: Mapping[str, int] = {
    # kubelet skips memory.high when request == limit == 0 (BestEffort); fixed by kubernetes#138139 in 1.37.
    MEMORY_HIGH_WITHOUT_MEMORY: 36,
    # TieredReservation: kubepods gets no memory.low, so the kernel caps the burstable slice's effective
    # memory.low to 0; the fix (kubepods memory.low = Σ Burstable requests) merged 2026-07-07 for 1.37, and the
    # 1.37 docs (pod-qos.md) and the qos_container_manager tests (TestQOSCgroupsWithSystemPartition) expect it.
    KUBEPODS_MEMORY_LOW_MISSING: 36,
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

    @property
    def default_memory_throttling_factor(self) -> float | None:
        """memoryThrottlingFactor when the kubelet config omits it (None: memory.high is not written)."""
        return _DEFAULT_THROTTLING_FACTOR[self.version]

    def ships(self, issue: str) -> bool:
        """True when this version's kubelet ships the known deviation tracked by `issue`."""
        return self.minor <= _DEVIATIONS_UNTIL.get(issue, -1)


def gate_warnings(config: KubeletConfig, profile: Profile) -> tuple[str, ...]:
    """One warning per featureGates entry this profile does not know: it is ignored, never silently (issue 15).

    A kubelet refuses a gate it does not know at all (component-base featuregate "unrecognized feature gate");
    nodeconf cannot tell that from a real gate it does not model, so it warns and keeps the profile's defaults.
    """
    return tuple(
        f"featureGates.{name}: not a gate nodeconf models for Kubernetes {profile.version}; ignored (a kubelet "
        "that does not know it refuses to start)"
        for name in config.feature_gates
        if name not in profile.gates
    )


def profile_for(version: str = DEFAULT_VERSION, config: KubeletConfig | None = None) -> Profile:
    """The profile of `version`, with the kubelet config's featureGates applied where the gate exists."""
    if version not in SUPPORTED_VERSIONS:
        raise InputError(
            f"unknown Kubernetes version {version!r} (supported: {', '.join(SUPPORTED_VERSIONS)})",
            field="--profile",
        )
    defaults = {**_EVERY_VERSION, **_GATE_DEFAULTS[version]}
    overrides = {k: v for k, v in (config.feature_gates if config else {}).items() if k in defaults}
    return Profile(version=version, gates={**defaults, **overrides})
