"""Validation of every name that reaches a path or a command (DNS-1123, uids, cgroup paths and files)."""

from __future__ import annotations

import hashlib
import re

# DNS-1123 label (pod names may be subdomains; k8s.io/apimachinery/pkg/util/validation IsDNS1123Subdomain).
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_UID = re.compile(r"[0-9a-fA-F-]{1,64}")
_CGROUP_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:-]{0,254}")
_CGROUP_FILE = re.compile(r"[a-z]+(\.[A-Za-z0-9_]+)+")  # hugetlb.2MB.max: the size in capitals
# Longest file name component on Linux file systems (NAME_MAX, include/uapi/linux/limits.h).
NAME_MAX = 255
# Hex digits of the sha256 that stand for a name cut short.
_DIGEST = 32


class UnsafeName(ValueError):
    """A name that must not reach a path or a command."""


def pod_name(text: str) -> str:
    """A pod name: a DNS-1123 subdomain of at most 253 characters."""
    if len(text) > 253 or not _SUBDOMAIN.fullmatch(text):
        raise UnsafeName(f"invalid pod name {text!r} (expected a DNS-1123 subdomain)")
    return text


def label(text: str, what: str) -> str:
    """A namespace or container name: a DNS-1123 label of at most 63 characters."""
    if len(text) > 63 or not _LABEL.fullmatch(text):
        raise UnsafeName(f"invalid {what} {text!r} (expected a DNS-1123 label)")
    return text


def uid(text: str) -> str:
    """A pod uid: hex digits and dashes."""
    if not _UID.fullmatch(text):
        raise UnsafeName(f"invalid pod uid {text!r}")
    return text


def cgroup_path(text: str, owned: tuple[str, ...]) -> str:
    """A relative cgroup path below one of the owned top-level cgroups; no `..`, no absolute paths."""
    parts = text.split("/")
    if not parts or parts[0] not in owned or not all(_CGROUP_COMPONENT.fullmatch(p) for p in parts):
        raise UnsafeName(f"cgroup path {text!r} is not below {' or '.join(owned)}")
    return text


def cgroup_file(text: str) -> str:
    """A cgroup interface file name such as `memory.swap.max`."""
    if not _CGROUP_FILE.fullmatch(text):
        raise UnsafeName(f"invalid cgroup file name {text!r}")
    return text


def log_file(namespace: str, pod: str, container: str) -> str:
    """A container's log file name `NAMESPACE_POD_CONTAINER.log` (unambiguous: `_` is in no DNS-1123 name); past
    NAME_MAX bytes (pod names reach 253) its start, `-` and a hash of the whole name."""
    name = f"{namespace}_{pod}_{container}.log"
    if len(name.encode()) <= NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]
    return f"{name[:NAME_MAX - _DIGEST - len('-.log')]}-{digest}.log"
