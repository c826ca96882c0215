"""What the CRI runtime sends, as the kubelet sends it: the LinuxContainerResources from the oracle's files (read
back by protobuf's generated message), the pod cgroup as cgroup_parent per cgroup driver, the container cgroup the
runtime makes (containerd getCgroupsPath, RUNTIME-FACTS §1), and one token per state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.enforcer import oci_bundle
from nodeconf.enforcer.cri import messages as m
from nodeconf.enforcer.cri.proto import encode
from nodeconf.enforcer.cri.runtime import SANDBOX_LINE, CriRuntime

api = pytest.importorskip("cri_api.v1.api_pb2")
POD_SLICE = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice"
POD_PATH = "kubepods/burstable/pod1234-5678"
FILES = {"cpu.max": "50000 100000", "memory.max": "268435456", "memory.swap.max": "0", "memory.min": "0",
         "memory.high": "241591910", "hugetlb.2MB.max": "4194304", "hugetlb.2MB.rsvd.max": "4194304",
         "hugetlb.1GB.max": "0", "cpu.weight": "20"}


def runtime(tmp_path: Path, systemd: bool = True) -> CriRuntime:
    return CriRuntime(tmp_path, (), systemd, socket_path=str(tmp_path / "none.sock"))


def test_the_kubelets_resources_reach_the_runtime_field_by_field(tmp_path: Path) -> None:
    cri = oci_bundle.cri_resources(FILES, 512)
    sent = api.LinuxContainerResources()
    sent.ParseFromString(encode(m.LINUX_CONTAINER_RESOURCES, runtime(tmp_path).resources_for(cri, True)))
    assert (sent.cpu_quota, sent.cpu_period, sent.cpu_shares, sent.memory_limit_in_bytes) == (
        50000, 100000, 512, 268435456)
    assert dict(sent.unified) == {"memory.swap.max": "0", "memory.high": "241591910"}
    assert sorted((h.page_size, h.limit) for h in sent.hugepage_limits) == [("1GB", 0), ("2MB", 4194304)]
    assert sent.memory_swap_limit_in_bytes == 0  # the kubelet sends no CRI swap on cgroup v2 (RUNTIME-FACTS 2a)


def test_an_unlimited_container_sends_zeros_which_the_runtime_reads_as_unset(tmp_path: Path) -> None:
    cri = oci_bundle.cri_resources({"cpu.max": "max 100000", "memory.max": "max"}, 2)
    sent = runtime(tmp_path).resources_for(cri, True)
    assert (sent["cpu_quota"], sent["memory_limit_in_bytes"], sent["cpu_period"]) == (0, 0, 100000)
    assert "hugepage_limits" not in sent


@pytest.mark.parametrize(("systemd", "pod", "parent", "container"), [
    (True, POD_SLICE, "kubepods-burstable-pod1234_5678.slice", f"{POD_SLICE}/cri-containerd-abc.scope"),
    (False, POD_PATH, f"/{POD_PATH}", f"{POD_PATH}/abc"),
])
def test_cgroup_parent_and_the_container_cgroup_follow_the_driver(tmp_path: Path, systemd: bool, pod: str,
                                                                  parent: str, container: str) -> None:
    cri = runtime(tmp_path, systemd)
    assert cri.cgroup_parent(pod) == parent
    assert cri.live_cgroup(pod, "abc") == container


def test_one_token_per_state_directory(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    first, again, other = runtime(tmp_path), runtime(tmp_path), runtime(tmp_path / "other")
    assert first.token == again.token != other.token
    assert first.workload_image.endswith(":" + first.token)
    assert (tmp_path / "cri-token").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("dump", "image"), [
    # containerd 1.6/1.7 `config dump` (CRI plugin section) and 2.x (the image plugin's pinned images).
    ('[plugins."io.containerd.grpc.v1.cri"]\n    sandbox_image = "registry.k8s.io/pause:3.8"\n',
     "registry.k8s.io/pause:3.8"),
    ("[plugins.'io.containerd.cri.v1.images'.pinned_images]\n      sandbox = 'registry.k8s.io/pause:3.10'\n",
     "registry.k8s.io/pause:3.10"),
])
def test_the_sandbox_image_is_read_from_either_config_dump(dump: str, image: str) -> None:
    found = SANDBOX_LINE.search(dump)
    assert found is not None and found.group(1) == image
