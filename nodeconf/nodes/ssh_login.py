"""The SSH part of a node spec: `ssh://[user@]host[:port]?key=FILE&known_hosts=FILE|host_key=…&config=FILE&jump=…&sudo=1`,
resolved as OpenSSH would (the user's ssh config, the ssh-agent), keys only.

Source: issue 10 (passwords refused, nothing secret echoed: `redact`); issue 12 (one spec, parsed once); issue 32
item 6 (the agent, ~/.ssh/config, ProxyJump, a user with sudo); ssh_config(5) for HostName, User, Port,
IdentityFile, UserKnownHostsFile and ProxyJump (`none` turns it off; command-line values beat the config's).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from nodeconf.errors import NodeSpecError

USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")
IPV6 = re.compile(r"\[([0-9A-Fa-f:.]+)\]")
PUBLIC_KEY = re.compile(r"[a-z0-9@.-]+ [A-Za-z0-9+/]+={0,2}")
DEFAULT_USER = "root"  # nodeconf's default login (not the local user's name, as plain ssh would)
AGENT_ENV = "SSH_AUTH_SOCK"
SUDO_OPTION = "sudo"


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
        user, host, port = _written_target(text[len("ssh://"):], redact(text))
        return cls(user or DEFAULT_USER, host, port or 22)

    @property
    def known_hosts_name(self) -> str:
        """The name OpenSSH and paramiko file this host's key under."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    @property
    def display(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}" + ("" if self.port == 22 else f":{self.port}")


@dataclass(frozen=True)
class SshAuth:
    """How a login proves who it is: private key files, and the running ssh-agent's keys (never a password)."""

    keys: tuple[Path, ...] = ()
    agent: bool = False


@dataclass(frozen=True)
class SshHop:
    """A bastion the connection goes through (ProxyJump): where, and how to log in there."""

    target: SshTarget
    auth: SshAuth


@dataclass(frozen=True)
class SshLogin:
    """An SSH node: the target (its HostName, User and Port resolved), how to log in, the pinned host keys (a key
    and/or known_hosts files, also for the bastions), the bastions in order, and whether commands go through sudo.
    `alias` is the host as the spec names it (a Host of the ssh config), kept for the spec's canonical text."""

    target: SshTarget
    auth: SshAuth
    known_hosts: tuple[Path, ...] = ()
    host_key: str | None = None
    jumps: tuple[SshHop, ...] = ()
    sudo: bool = False
    alias: str = ""

    @property
    def key(self) -> Path | None:
        """The first private key file offered (None: the ssh-agent's keys only)."""
        return self.auth.keys[0] if self.auth.keys else None

    @property
    def display(self) -> str:
        """`user@alias[:port]`, the port also when 22 if the config may give another: re-parsed, it resolves to
        this login again."""
        shown = SshTarget(self.target.user, self.alias or self.target.host, self.target.port).display
        aliased = bool(self.alias) and self.alias != self.target.host
        return f"{shown}:22" if aliased and self.target.port == 22 else shown


def redact(text: str) -> str:
    """The spec text with whatever may be an SSH password (`:` before the first `@`) masked up to the last `@`."""
    first_at = text.find("@")
    if not text.startswith("ssh://") or first_at < 0 or ":" not in text[len("ssh://"):first_at] \
            or _ats_only_in_jump(text):
        return text
    user = text[len("ssh://"):first_at].partition(":")[0]
    return f"ssh://{user}:***@{text[text.rindex('@') + 1:]}"


def _ats_only_in_jump(text: str) -> bool:
    """True for `ssh://host:port?…jump=user@bastion…`: a plain host and port, and every `@` in a jump= value."""
    netloc, question, query = text[len("ssh://"):].partition("?")
    if not question or "@" in netloc:
        return False
    try:
        _written_target(netloc, "")
    except NodeSpecError:
        return False
    return all("@" not in item or item.startswith("jump=") for item in query.split("&"))


def _written_target(rest: str, shown: str, what: str = "node spec") -> tuple[str | None, str, int | None]:
    """[user@]host[:port] as written (None where left out): user and host non-empty, the port 1-65535, and no
    password (keys only)."""
    netloc, slash, path = rest.partition("/")
    if slash and path:
        raise NodeSpecError(f"{what} {shown!r} is not ssh://user@host[:port]")
    userinfo, at, hostport = netloc.rpartition("@")
    if ":" in userinfo:
        raise NodeSpecError(f"{what} {shown!r}: passwords are not accepted (keys only): give ?key=FILE")
    if at and not USER.fullmatch(userinfo):
        raise NodeSpecError(f"{what} {shown!r}: the user must be a non-empty login name, got {userinfo!r}")
    ipv6 = IPV6.match(hostport)
    if ipv6:
        host, port_part = ipv6.group(1), hostport[ipv6.end():]
    else:
        host, colon, port_text = hostport.partition(":")
        port_part = colon + port_text
        if not HOSTNAME.fullmatch(host):
            raise NodeSpecError(f"{what} {shown!r}: the host must be a non-empty host name or address, "
                                f"got {host!r}")
    user = userinfo if at else None
    if not port_part:
        return user, host, None
    port_text = port_part[1:] if port_part.startswith(":") else ""
    if not (port_text.isdigit() and 1 <= int(port_text) <= 65535):
        raise NodeSpecError(f"{what} {shown!r}: the port must be 1-65535, got {port_part.lstrip(':')!r}")
    return user, host, int(port_text)


def readable_file(name: str, value: str, shown: str) -> Path:
    path = Path(value)
    if not path.is_file() or not os.access(path, os.R_OK):
        raise NodeSpecError(f"node spec {shown!r}: {name}={value} is not a readable file")
    return path


def _readable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.R_OK)


class _SshConfig:
    """The user's ssh config (config=FILE, else ~/.ssh/config when it exists), looked up per host."""

    def __init__(self, options: dict[str, str], shown: str) -> None:
        self.shown = shown
        self.config: paramiko.SSHConfig | None = None
        if "config" in options:
            self.path: Path = readable_file("config", options["config"], shown)
        else:
            self.path = Path.home() / ".ssh" / "config"
            if not _readable(self.path):
                return
        try:
            self.config = paramiko.SSHConfig.from_path(str(self.path))
        except Exception as err:  # paramiko's parse errors have no common base: one line, exit 2
            raise NodeSpecError(f"node spec {shown!r}: cannot read the ssh config {self.path}: {err}") from None

    def lookup(self, host: str) -> dict[str, Any]:
        """The config's options for host (lower-case keys), {} without a config."""
        if self.config is None:
            return {}
        try:
            return dict(self.config.lookup(host))
        except Exception as err:  # e.g. a `Match exec` paramiko cannot run: one line, exit 2
            raise NodeSpecError(f"node spec {self.shown!r}: cannot look {host} up in the ssh config {self.path}: "
                                f"{err}") from None

    def target(self, user: str | None, host: str, port: int | None) -> tuple[SshTarget, dict[str, Any]]:
        """The target with the config's HostName, User and Port where the spec left them out."""
        found = self.lookup(host)
        port_text = str(found.get("port", "22"))
        if port is None and not (port_text.isdigit() and 1 <= int(port_text) <= 65535):
            raise NodeSpecError(f"node spec {self.shown!r}: the ssh config {self.path} gives {host} Port "
                                f"{port_text!r}, not 1-65535")
        resolved = SshTarget(user or str(found.get("user", DEFAULT_USER)), str(found.get("hostname", host)),
                             port or int(port_text))
        return resolved, found

    def auth(self, key: Path | None, found: dict[str, Any]) -> SshAuth:
        """key= alone; else the config's readable IdentityFiles and, unless IdentitiesOnly, the agent."""
        if key is not None:
            return SshAuth((key,))
        files = tuple(Path(name) for name in found.get("identityfile", ()) if _readable(Path(name)))
        only = str(found.get("identitiesonly", "no")).lower() == "yes"
        return SshAuth(files, agent=bool(os.environ.get(AGENT_ENV)) and not (only and files))

    def known_hosts(self, found: dict[str, Any]) -> tuple[Path, ...]:
        """The config's UserKnownHostsFile that exist, else ~/.ssh/known_hosts when it exists."""
        named = str(found.get("userknownhostsfile", "")).split()
        candidates = [Path(os.path.expanduser(name)) for name in named if name != "none"] if named else \
            [Path.home() / ".ssh" / "known_hosts"]
        return tuple(path for path in candidates if _readable(path))


def _hops(text: str, config: _SshConfig, key: Path | None, shown: str) -> tuple[SshHop, ...]:
    """`[user@]host[:port][,…]` (ssh -J, ProxyJump), each hop resolved through the ssh config and logged in to
    with key= and the hop's own IdentityFile or the agent."""
    hops = []
    for hop in text.split(","):
        user, host, port = _written_target(hop.removeprefix("ssh://"), shown, "jump host of node spec")
        target, found = config.target(user, host, port)
        own = config.auth(None, found)
        auth = SshAuth(((key,) if key is not None else ()) + own.keys, own.agent)
        _require_a_key(auth, f"node spec {shown!r}: the jump host {target.display}")
        hops.append(SshHop(target, auth))
    return tuple(hops)


def _require_a_key(auth: SshAuth, what: str) -> None:
    if not auth.keys and not auth.agent:
        raise NodeSpecError(f"{what} has no key: give ?key=FILE (a private key file), an IdentityFile in the ssh "
                            f"config, or run ssh-agent ({AGENT_ENV} is not set); passwords are not accepted")


def ssh_login(rest: str, options: dict[str, str], shown: str) -> SshLogin:
    """The SSH target resolved through the ssh config, a key (key=, the config's IdentityFile, or the ssh-agent),
    pinned host keys (host_key=, known_hosts=, else the config's UserKnownHostsFile or ~/.ssh/known_hosts: host-key
    checking never only warns), the bastions (jump=, else the config's ProxyJump) and sudo=0|1."""
    user, alias, port = _written_target(rest, shown)
    config = _SshConfig(options, shown)
    target, found = config.target(user, alias, port)
    key = readable_file("key", options["key"], shown) if "key" in options else None
    auth = config.auth(key, found)
    _require_a_key(auth, f"node spec {shown!r}")
    host_key = options.get("host_key")
    if host_key is not None and not PUBLIC_KEY.fullmatch(host_key):
        raise NodeSpecError(f"node spec {shown!r}: host_key must be `TYPE BASE64` (a public key line)")
    jump = options.get("jump", str(found.get("proxyjump", "none")))
    jumps = _hops(jump, config, key, shown) if jump != "none" else ()
    if "known_hosts" in options:
        known_hosts: tuple[Path, ...] = (readable_file("known_hosts", options["known_hosts"], shown),)
    else:
        known_hosts = config.known_hosts(found)
    if not known_hosts and (host_key is None or jumps):
        where = "the node's host key" if host_key is None else "the jump host's host key"
        raise NodeSpecError(f"node spec {shown!r} needs {where}: ?known_hosts=FILE, ?host_key=TYPE%20BASE64 (the "
                            "node's only), or an entry in the ssh config's UserKnownHostsFile or ~/.ssh/known_hosts")
    sudo = options.get(SUDO_OPTION, "0")
    if sudo not in ("0", "1"):
        raise NodeSpecError(f"node spec {shown!r}: sudo must be 0 or 1, got {sudo!r}")
    return SshLogin(target, auth, known_hosts, host_key, jumps, sudo == "1", alias)
