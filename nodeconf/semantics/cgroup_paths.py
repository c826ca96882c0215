"""Cgroup paths relative to the cgroup root for the systemd and cgroupfs drivers (seed requests-limits-qos
"What the numbers turn into"; pkg/kubelet/cm/cgroup_manager_linux.go, containerd's cri-containerd scopes)."""

from __future__ import annotations

import hashlib
import re

from nodeconf.semantics.expectation import QosClass

SYSTEMD = "systemd"
CGROUPFS = "cgroupfs"
# Pod UIDs become path components: only letters, digits and dashes may pass (no `/`, `..`, `_`).
_SAFE_UID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,126}[A-Za-z0-9])?")
_QOS_NAMES = {QosClass.BURSTABLE: "burstable", QosClass.BEST_EFFORT: "besteffort"}


def is_safe_uid(uid: str) -> bool:
    """True when the uid can name a cgroup without escaping its parent."""
    return _SAFE_UID.fullmatch(uid) is not None


def _checked(uid: str) -> str:
    if not is_safe_uid(uid):
        raise ValueError(f"pod uid {uid!r} cannot name a cgroup")
    return uid


def container_id(pod_uid: str, container_name: str) -> str:
    """A deterministic 64-hex container id from pod uid + container name (the enforcer builds the same)."""
    return hashlib.sha256(f"{_checked(pod_uid)}/{container_name}".encode()).hexdigest()


def sandbox_id(pod_uid: str) -> str:
    """A deterministic 64-hex id for the pod's sandbox (pause) container."""
    return hashlib.sha256(f"{_checked(pod_uid)}/sandbox".encode()).hexdigest()


def kubepods(driver: str) -> str:
    """The node-allocatable cgroup: `kubepods.slice` (systemd) or `kubepods` (cgroupfs)."""
    return "kubepods.slice" if driver == SYSTEMD else "kubepods"


def qos_cgroup(qos: QosClass, driver: str) -> str:
    """The QoS cgroup; Guaranteed pods sit directly in kubepods."""
    root = kubepods(driver)
    if qos is QosClass.GUARANTEED:
        return root
    name = _QOS_NAMES[qos]
    return f"{root}/kubepods-{name}.slice" if driver == SYSTEMD else f"{root}/{name}"


def pod_cgroup(uid: str, qos: QosClass, driver: str) -> str:
    """The pod cgroup: `kubepods-<qos>-pod<uid with _>.slice` (systemd) or `pod<uid>` (cgroupfs)."""
    parent = qos_cgroup(qos, driver)
    uid = _checked(uid)
    if driver == SYSTEMD:
        prefix = "kubepods" if qos is QosClass.GUARANTEED else f"kubepods-{_QOS_NAMES[qos]}"
        return f"{parent}/{prefix}-pod{uid.replace('-', '_')}.slice"
    return f"{parent}/pod{uid}"


def container_cgroup(pod_path: str, cid: str, driver: str) -> str:
    """A container cgroup below its pod: `cri-containerd-<id>.scope` (systemd) or `<id>` (cgroupfs)."""
    return f"{pod_path}/cri-containerd-{cid}.scope" if driver == SYSTEMD else f"{pod_path}/{cid}"


def reserved_cgroup(name: str, driver: str) -> str:
    """systemReservedCgroup / kubeReservedCgroup as a path below the cgroup root, as the kubelet's cgroup manager
    names it (cgroup_manager_linux.go CgroupName): cgroupfs splits the literal name at `/` (ParseCgroupfsToCgroupName);
    systemd takes its last component without `.slice`, splits it at `-` and expands the slice (ParseSystemdToCgroupName,
    ToSystemd, runc ExpandSlice): `/kube-reserved` → `kube.slice/kube-reserved.slice`. ValueError for the root, `.`/`..`
    or a name systemd cannot expand (empty part: `a--b`, `-a`)."""
    if driver == SYSTEMD:
        base = name.rstrip("/").rsplit("/", 1)[-1].removesuffix(".slice")
        parts = base.split("-")
        if base in ("", "-"):
            raise ValueError(f"reserve cgroup {name!r} names the root cgroup")
        if "" in parts:
            raise ValueError(f"reserve cgroup {name!r}: systemd cannot expand the slice {base}.slice (empty part)")
        return "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))
    components = [c for c in name.split("/") if c]
    if not components:
        raise ValueError(f"reserve cgroup {name!r} names the root cgroup")
    if any(c in (".", "..") for c in components):
        raise ValueError(f"reserve cgroup {name!r}: nodeconf does not resolve `.` or `..` in a cgroup name")
    return "/".join(components)
