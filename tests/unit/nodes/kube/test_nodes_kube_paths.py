"""Real cgroup paths of a Kubernetes node in the oracle's frame (kind's cgroupRoot prefix, API-assigned uids)."""

from __future__ import annotations

import pytest

from nodeconf.nodes.kube.paths import CgroupFrame
from nodeconf.semantics.cgroup_paths import pod_cgroup
from nodeconf.semantics.expectation import QosClass

REAL = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
MODEL = "0f6a3c1e-2b4d-4e8f-9a1b-3c5d7e9f1a2b"
REAL_ = REAL.replace("-", "_")
SCOPE = "cri-containerd-" + "a" * 64 + ".scope"


@pytest.mark.parametrize(("kubepods", "path", "canonical"), [
    pytest.param("kubelet.slice/kubelet-kubepods.slice",
                 f"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
                 f"kubelet-kubepods-burstable-pod{REAL_}.slice/{SCOPE}",
                 f"{pod_cgroup(MODEL, QosClass.BURSTABLE, 'systemd')}/{SCOPE}", id="kind-burstable-container"),
    pytest.param("kubelet.slice/kubelet-kubepods.slice",
                 f"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{REAL_}.slice",
                 pod_cgroup(MODEL, QosClass.GUARANTEED, "systemd"), id="kind-guaranteed-pod"),
    pytest.param("kubelet.slice/kubelet-kubepods.slice",
                 "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice",
                 "kubepods.slice/kubepods-besteffort.slice", id="kind-qos-level"),
    pytest.param("kubelet.slice/kubelet-kubepods.slice", "kubelet.slice/kubelet-kubepods.slice", "kubepods.slice",
                 id="kind-kubepods"),
    pytest.param("kubepods.slice",
                 f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{REAL_}.slice",
                 pod_cgroup(MODEL, QosClass.BEST_EFFORT, "systemd"), id="systemd"),
    pytest.param("kubepods", f"kubepods/burstable/pod{REAL}/{'b' * 64}",
                 f"{pod_cgroup(MODEL, QosClass.BURSTABLE, 'cgroupfs')}/{'b' * 64}", id="cgroupfs"),
    pytest.param("kubelet/kubepods", f"kubelet/kubepods/pod{REAL}",
                 pod_cgroup(MODEL, QosClass.GUARANTEED, "cgroupfs"), id="cgroupfs-under-a-root"),
    pytest.param("kubelet.slice/kubelet-kubepods.slice", "system.slice/containerd.service",
                 "system.slice/containerd.service", id="outside-kubepods"),
    pytest.param("kubepods.slice", "kubepods.slice.bak/x", "kubepods.slice.bak/x", id="prefix-is-not-a-parent"),
])
def test_canonical_paths(kubepods: str, path: str, canonical: str) -> None:
    assert CgroupFrame(kubepods).canonical(path, {REAL: MODEL}) == canonical


def test_without_a_uid_map_the_uid_stays() -> None:
    frame = CgroupFrame("kubelet.slice/kubelet-kubepods.slice")
    path = f"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{REAL_}.slice"
    assert frame.canonical(path) == f"kubepods.slice/kubepods-pod{REAL_}.slice"


@pytest.mark.parametrize("kubepods", ["system.slice", "kubelet.slice/kubepods-burstable.slice", "notkubepods"])
def test_a_frame_needs_a_kubepods_cgroup(kubepods: str) -> None:
    with pytest.raises(ValueError, match="not a kubepods cgroup"):
        CgroupFrame(kubepods)
