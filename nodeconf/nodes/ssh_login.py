"""The SSH part of a node spec: `ssh://user@host[:port]?key=FILE&known_hosts=FILE|host_key=…`, keys only.

Source: issue 10 (passwords refused, nothing secret echoed: `redact`); issue 12 (one spec, parsed once).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from nodeconf.errors import NodeSpecError

USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")
IPV6 = re.compile(r"\[([0-9A-Fa-f:.]+)\]")
PUBLIC_KEY = re.compile(r"[a-z0-9@.-]+ [A-Za-z0-9+/]+={0,2}")


@dataclass(frozen=True)
class SshTarget:
    """Where to log in: user, host and port, parsed from `ssh://user@host[:port]` (user defaults to root)."""

    user: str
    host: str
    port: int = 22

    @classmethod
    def parse(cls, text: str) -> SshTarget:
        """Parse exactly `ssh://user@host[:port]`; NodeSpecError naming the problem otherwise."""
        if not text.startswith("ssh://"):
            raise NodeSpecError(f"node spec {redact(text)!r} is not ssh://user@host[:port]")
        return _ssh_target(text[len("ssh://"):], redact(text))

    @property
    def known_hosts_name(self) -> str:
        """The name OpenSSH and paramiko file this host's key under."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    @property
    def display(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}" + ("" if self.port == 22 else f":{self.port}")


@dataclass(frozen=True)
class SshLogin:
    """An SSH node: the target, the private key file, and the pinned host key (a known_hosts file or a key)."""

    target: SshTarget
    key: Path
    known_hosts: Path | None = None
    host_key: str | None = None


def redact(text: str) -> str:
    """The spec text with whatever may be an SSH password (`:` before the first `@`) masked up to the last `@`."""
    first_at = text.find("@")
    if not text.startswith("ssh://") or first_at < 0 or ":" not in text[len("ssh://"):first_at]:
        return text
    user = text[len("ssh://"):first_at].partition(":")[0]
    return f"ssh://{user}:***@{text[text.rindex('@') + 1:]}"


def _ssh_target(rest: str, shown: str) -> SshTarget:
    """user@host[:port] with user and host non-empty, the port 1-65535, and no password (keys only)."""
    netloc, slash, path = rest.partition("/")
    if slash and path:
        raise NodeSpecError(f"node spec {shown!r} is not ssh://user@host[:port]")
    userinfo, at, hostport = netloc.rpartition("@")
    if ":" in userinfo:
        raise NodeSpecError(f"node spec {shown!r}: passwords are not accepted (keys only): give ?key=FILE")
    user = userinfo if at else "root"
    if not USER.fullmatch(user):
        raise NodeSpecError(f"node spec {shown!r}: the user must be a non-empty login name, got {user!r}")
    ipv6 = IPV6.match(hostport)
    if ipv6:
        host, port_part = ipv6.group(1), hostport[ipv6.end():]
    else:
        host, colon, port_text = hostport.partition(":")
        port_part = colon + port_text
        if not HOSTNAME.fullmatch(host):
            raise NodeSpecError(f"node spec {shown!r}: the host must be a non-empty host name or address, "
                                f"got {host!r}")
    if not port_part:
        return SshTarget(user, host)
    port_text = port_part[1:] if port_part.startswith(":") else ""
    if not (port_text.isdigit() and 1 <= int(port_text) <= 65535):
        raise NodeSpecError(f"node spec {shown!r}: the port must be 1-65535, got {port_part.lstrip(':')!r}")
    return SshTarget(user, host, int(port_text))


def readable_file(name: str, value: str, shown: str) -> Path:
    path = Path(value)
    if not path.is_file() or not os.access(path, os.R_OK):
        raise NodeSpecError(f"node spec {shown!r}: {name}={value} is not a readable file")
    return path


def ssh_login(rest: str, options: dict[str, str], shown: str) -> SshLogin:
    """The SSH target, a readable private key, and a pinned host key (host-key checking never only warns)."""
    target = _ssh_target(rest, shown)
    if "key" not in options:
        raise NodeSpecError(f"node spec {shown!r} needs ?key=FILE (a private key file; passwords are not accepted)")
    key = readable_file("key", options["key"], shown)
    if "known_hosts" not in options and "host_key" not in options:
        raise NodeSpecError(f"node spec {shown!r} needs the node's host key: ?known_hosts=FILE or "
                            "?host_key=TYPE%20BASE64")
    known_hosts = readable_file("known_hosts", options["known_hosts"], shown) if "known_hosts" in options else None
    host_key = options.get("host_key")
    if host_key is not None and not PUBLIC_KEY.fullmatch(host_key):
        raise NodeSpecError(f"node spec {shown!r}: host_key must be `TYPE BASE64` (a public key line)")
    return SshLogin(target, key, known_hosts, host_key)
