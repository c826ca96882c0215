"""A Kubernetes node's real cgroup paths in the oracle's frame (semantics/cgroup_paths.py), so suites compare
the same paths on every node.

The kubelet names its cgroups from `cgroupRoot` (kind: `/kubelet` → `kubelet.slice/kubelet-kubepods.slice/
kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod<uid>.slice`; pkg/kubelet/cm/cgroup_manager_linux.go
ToSystemd) and the API server assigns pod uids. The frame is found on the node (the kubepods cgroup above the
reader); a path below it is rewritten to start at `kubepods.slice` (or `kubepods`), without the cgroupRoot's name
prefix, and with the manifest's uid in place of the API's. Container leaves keep their runtime names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SYSTEMD_ROOT = "kubepods.slice"
CGROUPFS_ROOT = "kubepods"


@dataclass(frozen=True)
class CgroupFrame:
    """The kubepods cgroup as found on the node (a path relative to the cgroup root)."""

    kubepods: str

    def __post_init__(self) -> None:
        leaf = self.leaf
        if not (leaf in (CGROUPFS_ROOT, SYSTEMD_ROOT) or leaf.endswith(f"-{SYSTEMD_ROOT}")):
            raise ValueError(f"{self.kubepods!r} is not a kubepods cgroup")

    @property
    def leaf(self) -> str:
        return self.kubepods.rsplit("/", 1)[-1]

    @property
    def systemd(self) -> bool:
        return self.leaf.endswith(".slice")

    @property
    def prefix(self) -> str:
        """What the cgroupRoot adds to every systemd unit name (`kubelet-` on kind), else ''."""
        return self.leaf[: -len(SYSTEMD_ROOT)] if self.systemd else ""

    @property
    def root(self) -> str:
        return SYSTEMD_ROOT if self.systemd else CGROUPFS_ROOT

    def canonical(self, path: str, uids: Mapping[str, str] | None = None) -> str:
        """The path in the oracle's frame; `uids` maps the API's pod uids to the manifests' ones.

        Paths outside kubepods are returned unchanged.
        """
        if path != self.kubepods and not path.startswith(f"{self.kubepods}/"):
            return path
        parts = [self.root]
        for part in path[len(self.kubepods):].strip("/").split("/") if path != self.kubepods else ():
            if self.prefix and part.startswith(f"{self.prefix}kubepods"):
                part = part[len(self.prefix):]
            for real, model in (uids or {}).items():
                part = part.replace(f"pod{real.replace('-', '_')}", f"pod{model.replace('-', '_')}")
                part = part.replace(f"pod{real}", f"pod{model}")
            parts.append(part)
        return "/".join(parts)
