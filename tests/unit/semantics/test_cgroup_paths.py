"""Cgroup paths for the systemd and cgroupfs drivers (seed requests-limits-qos cgroup tree)."""

from __future__ import annotations

import pytest

from nodeconf.semantics import cgroup_paths
from nodeconf.semantics.expectation import QosClass

UID = "61fc9751-ad7b-4318-9db3-078bbf2e5eb5"  # the article's res-demo pod


@pytest.mark.parametrize(
    ("qos", "driver", "path"),
    [
        (QosClass.BURSTABLE, "systemd", "kubepods.slice/kubepods-burstable.slice/"
                                        "kubepods-burstable-pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5.slice"),
        (QosClass.BEST_EFFORT, "systemd", "kubepods.slice/kubepods-besteffort.slice/"
                                          "kubepods-besteffort-pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5.slice"),
        (QosClass.GUARANTEED, "systemd", "kubepods.slice/kubepods-pod61fc9751_ad7b_4318_9db3_078bbf2e5eb5.slice"),
        (QosClass.BURSTABLE, "cgroupfs", f"kubepods/burstable/pod{UID}"),
        (QosClass.BEST_EFFORT, "cgroupfs", f"kubepods/besteffort/pod{UID}"),
        (QosClass.GUARANTEED, "cgroupfs", f"kubepods/pod{UID}"),
    ],
    ids=lambda v: v.value if isinstance(v, QosClass) else None,
)
def test_pod_paths(qos: QosClass, driver: str, path: str) -> None:
    assert cgroup_paths.pod_cgroup(UID, qos, driver) == path


def test_container_paths_and_ids() -> None:
    cid = cgroup_paths.container_id(UID, "hello")
    assert len(cid) == 64 and all(ch in "0123456789abcdef" for ch in cid)
    assert cid == cgroup_paths.container_id(UID, "hello")
    assert cid not in (cgroup_paths.container_id(UID, "other"), cgroup_paths.sandbox_id(UID))
    assert cgroup_paths.container_cgroup("p", cid, "systemd") == f"p/cri-containerd-{cid}.scope"
    assert cgroup_paths.container_cgroup("p", cid, "cgroupfs") == f"p/{cid}"


def test_node_levels() -> None:
    assert cgroup_paths.kubepods("systemd") == "kubepods.slice"
    assert cgroup_paths.qos_cgroup(QosClass.BURSTABLE, "systemd") == "kubepods.slice/kubepods-burstable.slice"
    assert cgroup_paths.qos_cgroup(QosClass.BEST_EFFORT, "cgroupfs") == "kubepods/besteffort"


@pytest.mark.parametrize("uid", ["../../etc", "a/b", "", "x_y", "-a", "a" * 200])
def test_unsafe_uids_never_reach_a_path(uid: str) -> None:
    assert not cgroup_paths.is_safe_uid(uid)
    with pytest.raises(ValueError, match="cannot name a cgroup"):
        cgroup_paths.pod_cgroup(uid, QosClass.BURSTABLE, "systemd")
