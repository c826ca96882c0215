"""The layers of a reference node a spec can choose: Debian release, PID 1 and container runtime (issue 13).

Data only, so the node spec (nodes) validates `vm?debian=&init=&runtime=` and the image recipe (infra) builds from
the same names. Source: issue 13 item 1 (releases bullseye|bookworm|trixie|sid, init minimal|systemd, runtime
direct|runc|crun; defaults bookworm, minimal, direct); runtime=containerd: Debian's containerd, driven over CRI
(issue 28).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RELEASES = ("bullseye", "bookworm", "trixie", "sid")
INITS = ("minimal", "systemd")
RUNTIMES = ("direct", "runc", "crun", "containerd")
VARIANT_OPTIONS = {"debian": RELEASES, "init": INITS, "runtime": RUNTIMES}
# (init, runtime) pairs no reference node is built as, and why (docs/node-variants.md). nodeconf's minimal init
# starts sshd and nothing else, so no containerd would answer on its socket; a containerd started there would use its
# cgroupfs driver, which the kubelet's default cgroupDriver=systemd (the run's kubelet config) does not match.
REFUSED = {("minimal", "containerd"): "runtime=containerd needs init=systemd: nodeconf's minimal init starts no "
                                      "service, so no containerd would run on the node"}


@dataclass(frozen=True)
class Variant:
    """One node variant: Debian release (kernel and userland), init (PID 1) and container runtime."""

    debian: str = "bookworm"
    init: str = "minimal"
    runtime: str = "direct"

    def __post_init__(self) -> None:
        for name, allowed in VARIANT_OPTIONS.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"unknown {name}={value!r}: choose one of {'|'.join(allowed)}")
        refused = REFUSED.get((self.init, self.runtime))
        if refused:
            raise ValueError(refused)

    @property
    def is_reference(self) -> bool:
        """True for the project's reference node (bookworm, nodeconf's init, nodeconf's launcher)."""
        return self == Variant()

    def label(self) -> str:
        """e.g. trixie-systemd-runc."""
        return f"{self.debian}-{self.init}-{self.runtime}"


def parse_variant(options: Mapping[str, str]) -> Variant:
    """The variant named by node-spec options debian=, init=, runtime= (others ignored); ValueError, one line."""
    return Variant(**{name: options[name] for name in VARIANT_OPTIONS if name in options})
