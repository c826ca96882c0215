"""Node shapes of real clusters, recorded from published configurations (each cites its public source): the Node
object's version, capacity and labels, and the kubelet's /configz as that configuration makes it (the kubelet's
own defaults filled in where the source leaves a field out, as configz shows them).

Only the fields nodeconf reads are recorded. The fake kubelet behind them (test_nodes_kube.FakeKube) keeps its own
cgroup layout for every shape: what a shape changes is the profile and the kubelet configuration that judge it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# The kubelet's defaults for the fields nodeconf compares, as /configz shows them when the config file leaves them
# out (pkg/kubelet/apis/config/v1beta1/defaults.go; evictionHard's default map: DefaultEvictionHard).
KUBELET_DEFAULTS: dict[str, Any] = {
    "cgroupDriver": "cgroupfs", "cgroupRoot": "/", "cpuCFSQuota": True, "cpuCFSQuotaPeriod": "100ms",
    "evictionHard": {"imagefs.available": "15%", "imagefs.inodesFree": "5%", "memory.available": "100Mi",
                     "nodefs.available": "10%", "nodefs.inodesFree": "5%"},
    "failSwapOn": True, "memoryThrottlingFactor": 0.9, "enforceNodeAllocatable": ["pods"], "maxPods": 110,
    "podPidsLimit": -1,
}


@dataclass(frozen=True)
class Shape:
    """One recorded node: where it comes from, its Node object fields and its kubelet's configuration."""

    name: str
    source: str
    kubelet_version: str
    runtime: str
    config: dict[str, Any]
    capacity: dict[str, str] = field(default_factory=lambda: {"cpu": "2", "memory": "8148820Ki", "pods": "110"})
    labels: dict[str, str] = field(default_factory=dict)
    provider_id: str = ""
    pause: bool = True  # False: CRI-O with drop_infra_ctr (no pause process)

    def configz(self) -> dict[str, Any]:
        return {"kubeletconfig": {**copy.deepcopy(KUBELET_DEFAULTS), **copy.deepcopy(self.config)}}

    def node_info(self) -> dict[str, Any]:
        return {"kernelVersion": "6.8.0-1021-aws", "kubeletVersion": self.kubelet_version,
                "containerRuntimeVersion": self.runtime, "operatingSystem": "linux"}


SHAPES = (
    Shape(
        "kind-1.36",
        "kubernetes-sigs/kind pkg/cluster/internal/kubeadm/config.go (the KubeletConfiguration kind writes: "
        "cgroupDriver systemd, cgroupRoot /kubelet, failSwapOn false, disk eviction at 0%); kindest/node v1.36.1 "
        "(kind v0.32 release notes)",
        "v1.36.1", "containerd://2.1.4",
        {"cgroupDriver": "systemd", "cgroupRoot": "/kubelet", "failSwapOn": False, "imageGCHighThresholdPercent": 100,
         "evictionHard": {"imagefs.available": "0%", "nodefs.available": "0%", "nodefs.inodesFree": "0%"}},
        provider_id="kind://docker/kind/kind-control-plane"),
    Shape(
        "kubeadm-containerd2",
        "kubernetes/kubernetes cmd/kubeadm/app/componentconfigs/kubelet.go (kubeadm's defaults: cgroupDriver "
        "systemd unless the file says otherwise) with `cgroupDriver: cgroupfs` left in /var/lib/kubelet/config.yaml "
        "from an old guide; containerd 2.x reports its systemd driver to the kubelet (KEP-4033, "
        "KubeletCgroupDriverFromCRI), configz keeps the file's value",
        "v1.35.2", "containerd://2.1.4",
        {"cgroupDriver": "cgroupfs", "rotateCertificates": True, "staticPodPath": "/etc/kubernetes/manifests"}),
    Shape(
        "eks-al2023",
        "awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go (AL2023 nodeadm: maxPods from the ENI table, "
        "kubeReserved cpu by the core formula and memory 11*maxPods+255 Mi, kubeReservedCgroup /runtime, "
        "systemReservedCgroup /system, evictionHard memory 100Mi / nodefs 10% / inodes 5%), m5.large: 29 pods",
        "v1.35.4-eks-f69f56f", "containerd://2.0.5",
        {"cgroupDriver": "systemd", "maxPods": 29, "kubeReservedCgroup": "/runtime",
         "systemReservedCgroup": "/system",
         "kubeReserved": {"cpu": "70m", "ephemeral-storage": "1Gi", "memory": "574Mi"},
         "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%"},
         "featureGates": {"RotateKubeletServerCertificate": True}},
        capacity={"cpu": "2", "memory": "7949476Ki", "pods": "29"},
        labels={"eks.amazonaws.com/nodegroup": "ng-1", "node.kubernetes.io/instance-type": "m5.large"},
        provider_id="aws:///eu-west-1a/i-0123456789abcdef0"),
    Shape(
        "gke-cos",
        "GKE node allocatable (cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes: memory 25% of the "
        "first 4 GiB + 20% of the next 4, cpu 6% of the first core + 1% of the second, eviction memory 100Mi) and "
        "kube-up's GCE kubelet (kubernetes/kubernetes cluster/gce/gci/configure-helper.sh: cgroupRoot /); "
        "e2-standard-2 on COS with cgroup v2",
        "v1.34.1-gke.1431000", "containerd://1.7.27",
        {"cgroupDriver": "systemd", "kubeReserved": {"cpu": "70m", "ephemeral-storage": "41Gi", "memory": "1843Mi"},
         "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
                          "pid.available": "10%"}},
        capacity={"cpu": "2", "memory": "8145396Ki", "pods": "110"},
        labels={"cloud.google.com/gke-nodepool": "default-pool", "cloud.google.com/gke-os-distribution": "cos"},
        provider_id="gce://project/europe-west1-b/gke-c-default-pool-1234"),
    Shape(
        "k3s",
        "k3s-io/k3s pkg/daemons/agent/agent_linux.go (the kubelet flags k3s sets: cgroup-driver from the runtime, "
        "eviction-hard imagefs.available<5%,nodefs.available<5% without memory.available, "
        "eviction-minimum-reclaim, fail-swap-on=false)",
        "v1.36.2+k3s1", "containerd://2.1.4-k3s1",
        {"cgroupDriver": "systemd", "failSwapOn": False,
         "evictionHard": {"imagefs.available": "5%", "nodefs.available": "5%"}},
        labels={"node.kubernetes.io/instance-type": "k3s"}, provider_id="k3s://k3s-server"),
    Shape(
        "crio-crun",
        "cri-o/cri-o docs (crio.conf: cgroup_manager systemd, default_runtime crun on Fedora/CentOS Stream builds, "
        "drop_infra_ctr true) with kubeadm's kubelet defaults (cmd/kubeadm/app/componentconfigs/kubelet.go)",
        "v1.37.0", "cri-o://1.37.0",
        {"cgroupDriver": "systemd", "rotateCertificates": True, "staticPodPath": "/etc/kubernetes/manifests"},
        pause=False),
)
