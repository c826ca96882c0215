"""Run commands and copy files on a node over SSH (paramiko), with the host key pinned, never auto-added."""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import select
import shlex
import tarfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import paramiko

from nodeconf.nodes.ssh_login import SshLogin, SshTarget
from nodeconf.nodes.transport.base import DEFAULT_TIMEOUT, CommandResult, Transport, TransportError

CONNECT_TIMEOUT = 10.0


class HostKeyError(TransportError):
    """The server's host key is not the pinned one (or none is pinned): never retried, never accepted."""


class _RefuseUnknownHost(paramiko.MissingHostKeyPolicy):
    """Refuse any host key that is not pinned (no blind auto-add)."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise HostKeyError(
            f"host key of {hostname} ({key.get_name()} {key.fingerprint}) is not pinned; refusing to connect"
        )


class SshTransport(Transport):
    """One SSH connection to a node: run argv lists, put files, push directory trees."""

    def __init__(self, client: paramiko.SSHClient, target: SshTarget) -> None:
        self._client = client
        self.target = target
        self._sftp: paramiko.SFTPClient | None = None

    @classmethod
    def connect(cls, target: SshTarget, key_file: Path, *, host_key: str | None = None,
                known_hosts: Path | None = None, accept_unknown_host: bool = False,
                timeout: float = CONNECT_TIMEOUT) -> SshTransport:
        """Log in with a private key; the server's key must match host_key or known_hosts, unless asked."""
        client = paramiko.SSHClient()
        if known_hosts is not None:
            client.load_host_keys(str(known_hosts))
        if host_key is not None:
            key_type, key = parse_public_key(host_key)
            client.get_host_keys().add(target.known_hosts_name, key_type, key)
        client.set_missing_host_key_policy(
            paramiko.AutoAddPolicy() if accept_unknown_host else _RefuseUnknownHost()
        )
        try:
            client.connect(target.host, port=target.port, username=target.user, key_filename=str(key_file),
                           timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
                           allow_agent=False, look_for_keys=False)
        except paramiko.BadHostKeyException as err:
            client.close()
            raise HostKeyError(f"host key of {target.known_hosts_name} does not match the pinned key") from err
        except (paramiko.SSHException, OSError) as err:
            client.close()
            raise TransportError(f"cannot log in to {target.user}@{target.known_hosts_name}: {err}") from err
        except HostKeyError:
            client.close()
            raise
        return cls(client, target)

    @classmethod
    def login(cls, login: SshLogin, *, timeout: float = CONNECT_TIMEOUT) -> SshTransport:
        """Connect as an `ssh://` node spec says: its key, its pinned host key (never an unknown host)."""
        return cls.connect(login.target, login.key, host_key=login.host_key, known_hosts=login.known_hosts,
                           timeout=timeout)

    def run(self, argv: Sequence[str], *, input: bytes | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> CommandResult:
        """Run argv (shell-quoted) on the node and return its status and output; TransportError on timeout."""
        if not argv:
            raise ValueError("run() needs a non-empty argv")
        command = shlex.join(argv)
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
        channel.exec_command(shlex.join(argv))
        return SshStream(channel)

    def put(self, remote_path: str, data: bytes, mode: int = 0o644) -> None:
        """Write bytes to a file on the node (SFTP) and set its mode."""
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
        """Close the SFTP session and the connection."""
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        self._client.close()

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
