"""Run commands and copy files on a node over SSH (paramiko), through its bastions, as root or through `sudo -n`,
with every host key pinned, never auto-added."""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import os
import select
import shlex
import tarfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import paramiko

from nodeconf.nodes.ssh_login import AGENT_ENV, SshAuth, SshLogin, SshTarget
from nodeconf.nodes.transport.base import DEFAULT_TIMEOUT, CommandResult, Transport, TransportError

CONNECT_TIMEOUT = 10.0
# sudo(8): -n never prompts (a password it would ask for is an error), -- ends its options.
SUDO = ("sudo", "-n", "--")


class HostKeyError(TransportError):
    """The server's host key is not the pinned one (or none is pinned): never retried, never accepted."""


class _RefuseUnknownHost(paramiko.MissingHostKeyPolicy):
    """Refuse any host key that is not pinned (no blind auto-add)."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise HostKeyError(
            f"host key of {hostname} ({key.get_name()} {key.fingerprint}) is not pinned; refusing to connect"
        )


class SshTransport(Transport):
    """One SSH connection to a node (through its bastions, if any): run argv lists, put files, push directory trees;
    with `sudo`, every command runs as root through `sudo -n --` and files are written by such a command."""

    def __init__(self, client: paramiko.SSHClient, target: SshTarget, *, sudo: bool = False,
                 bastions: Sequence[paramiko.SSHClient] = ()) -> None:
        self._client = client
        self.target = target
        self.sudo = sudo
        self._bastions = tuple(bastions)
        self._sftp: paramiko.SFTPClient | None = None

    @classmethod
    def connect(cls, target: SshTarget, key_file: Path | None, *, host_key: str | None = None,
                known_hosts: Path | None = None, accept_unknown_host: bool = False,
                timeout: float = CONNECT_TIMEOUT) -> SshTransport:
        """Log in with a private key (None: the ssh-agent's keys); the server's key must match host_key or
        known_hosts, unless asked."""
        auth = SshAuth((key_file,)) if key_file is not None else SshAuth(agent=True)
        client = _logged_in(target, auth, _pinned(target, (known_hosts,) if known_hosts else (), host_key),
                            timeout, accept_unknown_host=accept_unknown_host)
        return cls(client, target)

    @classmethod
    def login(cls, login: SshLogin, *, timeout: float = CONNECT_TIMEOUT) -> SshTransport:
        """Connect as an `ssh://` node spec says: through its bastions (each host key pinned, never an unknown
        host), with its keys or the ssh-agent's; then make sure commands run as root (directly, or `sudo -n`)."""
        pinned = _pinned(login.target, login.known_hosts, login.host_key)
        bastions: list[paramiko.SSHClient] = []
        try:
            sock: paramiko.Channel | None = None
            onward = [*(hop.target for hop in login.jumps[1:]), login.target]  # where each bastion leads
            for hop, after in zip(login.jumps, onward, strict=False):
                bastions.append(_logged_in(hop.target, hop.auth, pinned, timeout, sock=sock))
                sock = _tunnel(bastions[-1], hop.target, after, timeout)
            client = _logged_in(login.target, login.auth, pinned, timeout, sock=sock)
        except BaseException:
            for bastion in reversed(bastions):
                bastion.close()
            raise
        transport = cls(client, login.target, sudo=login.sudo, bastions=bastions)
        try:
            transport._require_root()
        except BaseException:
            transport.close()
            raise
        return transport

    def _require_root(self) -> None:
        """TransportError with one line unless commands run as root: `sudo -n` works without a password, or the
        login is uid 0."""
        who = self.target.display
        if self.sudo:
            result = self.run(["true"], timeout=CONNECT_TIMEOUT)
            if result.rc != 0:
                said = result.stderr.decode(errors="replace").strip().splitlines()
                raise TransportError(f"`sudo -n true` as {who} failed: {said[-1] if said else f'exit {result.rc}'}; "
                                     "sudo=1 needs sudo without a password (NOPASSWD in sudoers) and without a tty")
            return
        if self.target.user == "root":
            return
        uid = self.run(["id", "-u"], timeout=CONNECT_TIMEOUT).stdout.decode(errors="replace").strip()
        if uid != "0":
            raise TransportError(f"{who} is not root (uid {uid or '?'}): nodeconf runs its commands as root; add "
                                 "sudo=1 to run them through `sudo -n` as this user")

    def _as_root(self, argv: Sequence[str]) -> list[str]:
        return [*SUDO, *argv] if self.sudo else list(argv)

    def run(self, argv: Sequence[str], *, input: bytes | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> CommandResult:
        """Run argv (shell-quoted) on the node and return its status and output; TransportError on timeout."""
        if not argv:
            raise ValueError("run() needs a non-empty argv")
        command = shlex.join(self._as_root(argv))
        deadline = time.monotonic() + timeout
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise TransportError(f"connection to {self.target.known_hosts_name} is closed")
        channel = transport.open_session(timeout=timeout)
        try:
            channel.exec_command(command)
            feeder = threading.Thread(target=_feed, args=(channel, input), daemon=True)
            feeder.start()
            stdout, stderr = _collect(channel, deadline, command)
            if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
                raise TransportError(f"`{command}` did not finish within {timeout:g} s")
            rc = channel.recv_exit_status()
            if rc == -1 and not transport.is_active():
                raise TransportError(f"`{command}`: connection to {self.target.known_hosts_name} lost")
            return CommandResult(tuple(argv), rc, stdout, stderr)
        finally:
            channel.close()

    def open_stream(self, argv: Sequence[str], *, timeout: float | None = None) -> SshStream:
        """Start a long-lived command whose stdin/stdout are a byte stream (reads wait at most timeout)."""
        if not argv:
            raise ValueError("open_stream() needs a non-empty argv")
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise TransportError(f"connection to {self.target.known_hosts_name} is closed")
        channel = transport.open_session(timeout=CONNECT_TIMEOUT)
        channel.settimeout(timeout)
        channel.exec_command(shlex.join(self._as_root(argv)))
        return SshStream(channel)

    def put(self, remote_path: str, data: bytes, mode: int = 0o644) -> None:
        """Write bytes to a file on the node (SFTP; with sudo, by a root command reading them) and set its mode."""
        if self.sudo:
            self.run_expect((0,), ["sh", "-c", 'cat > "$1" && chmod "$2" "$1"', "put", remote_path, f"{mode:o}"],
                            input=data)
            return
        sftp = self._sftp_client()
        with sftp.open(remote_path, "wb") as handle:
            handle.write(data)
        sftp.chmod(remote_path, mode)

    def put_tree(self, local_dir: Path, remote_dir: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Copy a local directory tree (without __pycache__) into remote_dir in one round trip (tar)."""
        if not Path(local_dir).is_dir():
            raise ValueError(f"put_tree: {local_dir} is not a directory")
        archive = tar_tree(Path(local_dir))
        script = 'mkdir -p "$1" && tar -x -f - -C "$1" --no-same-owner'
        self.run_expect((0,), ["sh", "-c", script, "put_tree", remote_dir], input=archive, timeout=timeout)

    def close(self) -> None:
        """Close the SFTP session, the connection, then the bastions' connections."""
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        self._client.close()
        for bastion in reversed(self._bastions):
            bastion.close()

    def __enter__(self) -> SshTransport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self._client.open_sftp()
        return self._sftp


class SshStream:
    """A command running on the node, spoken to line by line; its stderr is drained and its tail kept."""

    STDERR_TAIL = 65536

    def __init__(self, channel: paramiko.Channel) -> None:
        self._channel = channel
        self._reader = channel.makefile("rb")
        self._stderr = bytearray()
        self._drainer = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drainer.start()

    def write(self, data: bytes) -> None:
        """Send bytes to the command's stdin."""
        self._channel.sendall(data)

    def readline(self, timeout: float | None = None) -> bytes:
        """One line of the command's stdout (b"" at its end); TimeoutError past `timeout` seconds (default: the
        stream's timeout)."""
        if timeout is not None:
            self._channel.settimeout(timeout)
        line: bytes = self._reader.readline()
        return line

    def stderr_tail(self) -> str:
        """The last 64 KiB the command wrote to stderr."""
        return bytes(self._stderr).decode(errors="replace")

    def close(self) -> None:
        """End the command's stdin and close the channel."""
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            self._channel.shutdown_write()
        self._reader.close()
        self._channel.close()

    def _drain_stderr(self) -> None:
        """Read stderr so a chatty command never blocks on a full SSH window."""
        while True:
            try:
                chunk = self._channel.recv_stderr(65536)
            except (OSError, EOFError, paramiko.SSHException):
                return
            if not chunk:
                return
            self._stderr += chunk
            del self._stderr[:-self.STDERR_TAIL]


def _pinned(target: SshTarget, known_hosts: Sequence[Path], host_key: str | None) -> paramiko.HostKeys:
    """The host keys a login accepts: the known_hosts files' entries, and host_key for the target."""
    pinned = paramiko.HostKeys()
    for path in known_hosts:
        pinned.load(str(path))
    if host_key is not None:
        key_type, key = parse_public_key(host_key)
        pinned.add(target.known_hosts_name, key_type, key)
    return pinned


def _logged_in(target: SshTarget, auth: SshAuth, pinned: paramiko.HostKeys, timeout: float, *,
               sock: paramiko.Channel | None = None, accept_unknown_host: bool = False) -> paramiko.SSHClient:
    """A client logged in to target (over sock, a bastion's tunnel, if given) with auth's keys and the agent's,
    never a password; the server's key must be pinned, unless asked."""
    if auth.agent and not auth.keys:
        _require_agent_keys(target)
    # paramiko's connect takes a list of key files too (its typing says one); None: no file
    key_files: Any = [str(path) for path in auth.keys] or None
    client = paramiko.SSHClient()
    client.get_host_keys().update(pinned)
    client.set_missing_host_key_policy(
        paramiko.AutoAddPolicy() if accept_unknown_host else _RefuseUnknownHost()
    )
    try:
        client.connect(target.host, port=target.port, username=target.user,
                       key_filename=key_files, sock=sock,
                       timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
                       allow_agent=auth.agent, look_for_keys=False)
    except paramiko.BadHostKeyException as err:
        client.close()
        raise HostKeyError(f"host key of {target.known_hosts_name} does not match the pinned key") from err
    except (paramiko.SSHException, OSError) as err:
        client.close()
        raise TransportError(f"cannot log in to {target.user}@{target.known_hosts_name}: {err}") from err
    except HostKeyError:
        client.close()
        raise
    return client


def _require_agent_keys(target: SshTarget) -> None:
    """TransportError with one line when the ssh-agent, the only key source, offers no key."""
    agent = paramiko.Agent()
    try:
        if not agent.get_keys():
            raise TransportError(f"cannot log in to {target.display}: the ssh-agent ({AGENT_ENV}="
                                 f"{os.environ.get(AGENT_ENV, '')}) holds no keys or cannot be reached; ssh-add a "
                                 "key or give ?key=FILE")
    finally:
        agent.close()


def _tunnel(bastion: paramiko.SSHClient, via: SshTarget, to: SshTarget, timeout: float) -> paramiko.Channel:
    """A direct-tcpip channel from the bastion to the next host's SSH port (what ProxyJump asks the bastion)."""
    transport = bastion.get_transport()
    try:
        if transport is None:
            raise paramiko.SSHException("not connected")
        return transport.open_channel("direct-tcpip", (to.host, to.port), ("127.0.0.1", 0), timeout=timeout)
    except (paramiko.SSHException, OSError) as err:
        raise TransportError(f"the jump host {via.display} did not open a connection to {to.host}:{to.port}: "
                             f"{err}") from err


def parse_public_key(line: str) -> tuple[str, paramiko.PKey]:
    """The key type and key of an OpenSSH public key line `TYPE BASE64 [COMMENT]`."""
    fields = line.split()
    if len(fields) < 2:
        raise ValueError(f"not an OpenSSH public key line: {line[:40]!r}")
    try:
        key = paramiko.PKey.from_type_string(fields[0], base64.b64decode(fields[1], validate=True))
    except (paramiko.SSHException, paramiko.pkey.UnknownKeyType, ValueError, binascii.Error) as err:
        raise ValueError(f"unreadable {fields[0]} public key: {err}") from err
    return fields[0], key


def tar_tree(local_dir: Path) -> bytes:
    """A tar archive of a directory's contents, skipping __pycache__, with owner root."""
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if "__pycache__" in Path(info.name).parts:
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for child in sorted(local_dir.iterdir()):
            archive.add(child, arcname=child.name, filter=clean)
    return buffer.getvalue()


def _feed(channel: paramiko.Channel, data: bytes | None) -> None:
    """Send stdin to the remote command, then end it (runs in its own thread to avoid a deadlock)."""
    try:
        if data:
            channel.sendall(data)
        channel.shutdown_write()
    except (OSError, EOFError, paramiko.SSHException):
        return


def _collect(channel: paramiko.Channel, deadline: float, command: str) -> tuple[bytes, bytes]:
    """Read stdout and stderr until the remote end closes them, or raise TransportError at the deadline."""
    stdout, stderr = bytearray(), bytearray()
    while True:
        while channel.recv_ready():
            stdout += channel.recv(65536)
        while channel.recv_stderr_ready():
            stderr += channel.recv_stderr(65536)
        if (channel.eof_received or channel.closed) and not channel.recv_ready() \
                and not channel.recv_stderr_ready():
            return bytes(stdout), bytes(stderr)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TransportError(f"`{command}` did not finish in time")
        try:
            select.select([channel], [], [], min(remaining, 1.0))
        except (OSError, ValueError) as err:
            raise TransportError(f"`{command}`: connection lost ({err})") from err
