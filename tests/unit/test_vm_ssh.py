"""SshTransport against an in-process paramiko server that runs commands with `sh -c` on this host.

Checks argv quoting, stdin, exit codes, timeouts, the layered API, tree pushes and host-key pinning.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import paramiko
import pytest
from paramiko import common

from nodeconf.errors import NodeSpecError
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.nodes.ssh_login import SshTarget
from nodeconf.nodes.transport.base import CommandError, CommandResult, TransportError
from nodeconf.nodes.transport.ssh import HostKeyError, SshTransport, parse_public_key, tar_tree


class _CommandServer(paramiko.ServerInterface):
    """Accepts one public key for root and runs exec requests with sh -c."""

    def __init__(self, client_key: paramiko.PKey) -> None:
        self.client_key = client_key

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return common.OPEN_SUCCEEDED if kind == "session" else common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = username == "root" and key == self.client_key
        return common.AUTH_SUCCESSFUL if ok else common.AUTH_FAILED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        threading.Thread(target=_execute, args=(channel, command.decode()), daemon=True).start()
        return True


def _execute(channel: paramiko.Channel, command: str) -> None:
    """Run command with its stdin, stdout and stderr wired to the channel, then send its exit status."""
    proc = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def feed_stdin(stdin: IO[bytes]) -> None:
        with contextlib.suppress(OSError, EOFError):
            while chunk := channel.recv(65536):
                stdin.write(chunk)
                stdin.flush()
        with contextlib.suppress(OSError):
            stdin.close()

    def pump_stderr(stderr: IO[bytes]) -> None:
        while chunk := os.read(stderr.fileno(), 65536):
            channel.sendall_stderr(chunk)

    threads = [threading.Thread(target=feed_stdin, args=(proc.stdin,), daemon=True),
               threading.Thread(target=pump_stderr, args=(proc.stderr,), daemon=True)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(OSError, EOFError):
        while chunk := os.read(proc.stdout.fileno(), 65536):
            channel.sendall(chunk)
    threads[1].join()
    with contextlib.suppress(OSError, EOFError):
        status = proc.wait()
        if status >= 0:  # like OpenSSH, a signal is reported as exit-signal, which paramiko does not read
            channel.send_exit_status(status)
        channel.shutdown_write()
        channel.close()


@dataclass(frozen=True)
class Server:
    port: int
    host_key_line: str
    client_key_file: Path

    @property
    def target(self) -> SshTarget:
        return SshTarget("root", "127.0.0.1", self.port)

    def connect(self) -> SshTransport:
        return SshTransport.connect(self.target, self.client_key_file, host_key=self.host_key_line)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    host_key = paramiko.RSAKey.generate(2048)
    client_key = paramiko.RSAKey.generate(2048)
    key_file = tmp_path_factory.mktemp("keys") / "id_rsa"
    client_key.write_private_key_file(str(key_file))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    transports: list[paramiko.Transport] = []

    def serve(conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        transports.append(transport)
        transport.add_server_key(host_key)
        with contextlib.suppress(paramiko.SSHException, OSError, EOFError):
            transport.start_server(server=_CommandServer(client_key))

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield Server(listener.getsockname()[1], f"{host_key.get_name()} {host_key.get_base64()}", key_file)
    listener.close()
    for transport in transports:
        transport.close()


@pytest.fixture()
def node(server: Server) -> Iterator[SshTransport]:
    transport = server.connect()
    yield transport
    transport.close()


def test_argv_is_quoted_never_interpreted(node: SshTransport) -> None:
    script = 'printf "%s|" "$@"; echo oops >&2; exit 3'
    result = node.run(["sh", "-c", script, "sh", "a b", "$HOME", "'q'", "x;y", ""])
    assert result == CommandResult(("sh", "-c", script, "sh", "a b", "$HOME", "'q'", "x;y", ""), 3,
                                   b"a b|$HOME|'q'|x;y||", b"oops\n")


def test_input_bytes_round_trip_including_a_large_payload(node: SshTransport) -> None:
    payload = bytes(range(256)) * 4096
    assert node.run(["cat"], input=payload).stdout == payload


def test_layered_api(node: SshTransport) -> None:
    assert node.check_output(["echo", "hello"]) == "hello"
    assert node.run_expect([1], ["false"]).rc == 1
    with pytest.raises(CommandError, match=r"`sh -c 'echo bad >&2; exit 2'` exited 2 \(expected 0\): bad"):
        node.check_output(["sh", "-c", "echo bad >&2; exit 2"])


def test_text_helpers() -> None:
    result = CommandResult(("x",), 0, "é\n".encode(), b"w")
    assert (result.text, result.stderr_text, result.check()) == ("é\n", "w", result)


def test_a_command_past_its_deadline_raises(node: SshTransport) -> None:
    with pytest.raises(TransportError, match="did not finish"):
        node.run(["sleep", "2"], timeout=0.3)


def test_empty_argv_is_rejected(node: SshTransport) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        node.run([])


def test_put_tree_copies_files_without_pycache(node: SshTransport, tmp_path: Path) -> None:
    source = tmp_path / "pkg"
    (source / "sub").mkdir(parents=True)
    (source / "__pycache__").mkdir()
    (source / "__init__.py").write_text("x = 1\n")
    (source / "sub" / "tool.sh").write_text("#!/bin/sh\n")
    (source / "sub" / "tool.sh").chmod(0o755)
    (source / "__pycache__" / "m.pyc").write_bytes(b"\0")
    destination = tmp_path / "remote dir"
    node.put_tree(source, str(destination))
    found = sorted(str(p.relative_to(destination)) for p in destination.rglob("*"))
    assert found == ["__init__.py", "sub", "sub/tool.sh"]
    assert (destination / "sub" / "tool.sh").stat().st_mode & 0o777 == 0o755


def test_tar_tree_owner_is_root(tmp_path: Path) -> None:
    import io
    import tarfile

    (tmp_path / "f").write_text("1")
    with tarfile.open(fileobj=io.BytesIO(tar_tree(tmp_path))) as archive:
        assert [(m.name, m.uid, m.uname) for m in archive.getmembers()] == [("f", 0, "root")]


def test_unknown_host_key_is_refused(server: Server) -> None:
    with pytest.raises(HostKeyError, match="not pinned"):
        SshTransport.connect(server.target, server.client_key_file)


def test_a_different_pinned_key_is_refused(server: Server) -> None:
    other = paramiko.RSAKey.generate(1024)
    with pytest.raises(HostKeyError, match="does not match"):
        SshTransport.connect(server.target, server.client_key_file,
                             host_key=f"ssh-rsa {other.get_base64()}")


def test_unknown_host_key_accepted_only_when_asked(server: Server) -> None:
    with SshTransport.connect(server.target, server.client_key_file, accept_unknown_host=True) as transport:
        assert transport.check_output(["echo", "ok"]) == "ok"


def test_login_as_a_node_spec_says_with_a_known_hosts_file(server: Server, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{server.port} {server.host_key_line}\n")
    spec = parse_node_spec(f"ssh://root@127.0.0.1:{server.port}?key={server.client_key_file}&known_hosts={known_hosts}")
    assert spec.ssh is not None
    with SshTransport.login(spec.ssh) as transport:
        assert transport.check_output(["echo", "pinned"]) == "pinned"


def test_a_wrong_client_key_cannot_log_in(server: Server, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    paramiko.RSAKey.generate(1024).write_private_key_file(str(wrong))
    with pytest.raises(TransportError, match="cannot log in"):
        SshTransport.connect(server.target, wrong, host_key=server.host_key_line)


@pytest.mark.parametrize(
    ("spec", "target"),
    [
        ("ssh://root@node.example:2222", SshTarget("root", "node.example", 2222)),
        ("ssh://admin@10.0.0.5", SshTarget("admin", "10.0.0.5", 22)),
        ("ssh://node", SshTarget("root", "node", 22)),
    ],
)
def test_parse_spec(spec: str, target: SshTarget) -> None:
    assert SshTarget.parse(spec) == target


@pytest.mark.parametrize("spec", ["root@node", "ssh://", "ssh://root:pw@node", "ssh://node/path",
                                  "ssh://node:99999", "http://node"])
def test_parse_spec_rejects(spec: str) -> None:
    with pytest.raises(NodeSpecError, match="node spec"):
        SshTarget.parse(spec)


@pytest.mark.parametrize(("target", "name"), [(SshTarget("root", "h", 22), "h"),
                                              (SshTarget("root", "h", 2222), "[h]:2222")])
def test_known_hosts_name(target: SshTarget, name: str) -> None:
    assert target.known_hosts_name == name


@pytest.mark.parametrize("line", ["ssh-ed25519", "ssh-ed25519 !!!notbase64", "ssh-nope AAAA"])
def test_unreadable_public_keys(line: str) -> None:
    with pytest.raises(ValueError):
        parse_public_key(line)


def test_stream_speaks_line_by_line_and_keeps_stderr(node: SshTransport) -> None:
    script = 'while read -r line; do echo "got $line"; echo "log $line" >&2; done'
    stream = node.open_stream(["sh", "-c", script], timeout=10)
    try:
        for word in ("one", "two words"):
            stream.write(f"{word}\n".encode())
            assert stream.readline() == f"got {word}\n".encode()
        deadline = time.monotonic() + 5
        while stream.stderr_tail() != "log one\nlog two words\n" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stream.stderr_tail() == "log one\nlog two words\n"
    finally:
        stream.close()


def test_stream_read_past_its_timeout_raises(node: SshTransport) -> None:
    stream = node.open_stream(["sleep", "2"], timeout=0.2)
    try:
        with pytest.raises(TimeoutError):
            stream.readline()
    finally:
        stream.close()


def test_a_command_killed_by_a_signal_has_status_minus_one(node: SshTransport) -> None:
    assert node.run(["exec", "sh", "-c", "kill -9 $$"]).rc == -1


def test_a_dropped_connection_during_a_command_raises(server: Server) -> None:
    transport = server.connect()
    ssh = transport._client.get_transport()
    assert ssh is not None
    threading.Timer(0.3, ssh.close).start()
    started = time.monotonic()
    with pytest.raises(TransportError, match="lost"):
        transport.run(["sleep", "12"], timeout=10)
    assert time.monotonic() - started < 6, "a lost connection must not wait for the command's deadline (10 s)"
    transport.close()
