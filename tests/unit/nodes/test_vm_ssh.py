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
from typing import IO, Any

import paramiko
import pytest
from paramiko import common

from nodeconf.errors import NodeSpecError
from nodeconf.nodes.enforced.node import EnforcedNode
from nodeconf.nodes.spec import parse_node_spec
from nodeconf.nodes.ssh_login import SshAuth, SshLogin, SshTarget
from nodeconf.nodes.transport.base import CommandError, CommandResult, TransportError
from nodeconf.nodes.transport.ssh import HostKeyError, SshTransport, parse_public_key, tar_tree
from tests.unit.nodes.enforced.local import local_settings


class _CommandServer(paramiko.ServerInterface):
    """Accepts one public key for its users and runs exec requests with sh -c (as uid 65534 for `nobody`, with
    `path` first on PATH); forwards direct-tcpip channels when it is a bastion, recording where to."""

    def __init__(self, client_key: paramiko.PKey, users: frozenset[str] = frozenset({"root"}), path: str = "",
                 forwards: list[tuple[str, int]] | None = None) -> None:
        self.client_key = client_key
        self.users = users
        self.path = path
        self.forwards = forwards
        self.destinations: dict[int, tuple[str, int]] = {}

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return common.OPEN_SUCCEEDED if kind == "session" else common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_direct_tcpip_request(self, chanid: int, origin: tuple[str, int],
                                           destination: tuple[str, int]) -> int:
        if self.forwards is None:
            return common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        self.forwards.append(destination)
        self.destinations[chanid] = destination
        return common.OPEN_SUCCEEDED

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = username in self.users and key == self.client_key
        if ok:
            self.user = username
        return common.AUTH_SUCCESSFUL if ok else common.AUTH_FAILED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        argv = ["sh", "-c", command.decode()]
        if self.user == "nobody":
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        env = {**os.environ, "PATH": f"{self.path}:{os.environ['PATH']}" if self.path else os.environ["PATH"]}
        threading.Thread(target=_execute, args=(channel, argv, env), daemon=True).start()
        return True


def _execute(channel: paramiko.Channel, argv: list[str], env: dict[str, str]) -> None:
    """Run argv with its stdin, stdout and stderr wired to the channel, then send its exit status."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
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


@contextlib.contextmanager
def serving(client_key: paramiko.PKey, key_file: Path, **behaviour: Any) -> Iterator[Server]:
    """An SSH server on a free local port with a fresh host key (behaviour: _CommandServer's options)."""
    host_key = paramiko.ECDSAKey.generate()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    transports: list[paramiko.Transport] = []

    def serve(conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        transports.append(transport)
        transport.add_server_key(host_key)
        interface = _CommandServer(client_key, **behaviour)
        sessions = []  # accepted channels are held: paramiko closes a channel nothing refers to
        with contextlib.suppress(paramiko.SSHException, OSError, EOFError):
            transport.start_server(server=interface)
            while (channel := transport.accept(timeout=None)) is not None:
                destination = interface.destinations.get(channel.get_id())
                if destination is None:
                    sessions.append(channel)
                else:
                    threading.Thread(target=_forward, args=(channel, destination), daemon=True).start()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield Server(listener.getsockname()[1], f"{host_key.get_name()} {host_key.get_base64()}", key_file)
    finally:
        listener.close()
        for transport in transports:
            transport.close()


def _forward(channel: paramiko.Channel, destination: tuple[str, int]) -> None:
    """Pump bytes between a direct-tcpip channel and a TCP connection to its destination."""
    with socket.create_connection(destination) as upstream:
        def down() -> None:
            with contextlib.suppress(OSError, EOFError):
                while data := upstream.recv(65536):
                    channel.sendall(data)
            channel.close()

        threading.Thread(target=down, daemon=True).start()
        with contextlib.suppress(OSError, EOFError):
            while data := channel.recv(65536):
                upstream.sendall(data)
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)


@pytest.fixture(scope="module")
def client_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[paramiko.PKey, Path]:
    key = paramiko.RSAKey.generate(2048)
    key_file = tmp_path_factory.mktemp("keys") / "id_rsa"
    key.write_private_key_file(str(key_file))
    return key, key_file


@pytest.fixture(scope="module")
def server(client_key: tuple[paramiko.PKey, Path]) -> Iterator[Server]:
    with serving(*client_key) as running:
        yield running


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


# issue 32 item 6: the ssh-agent, the ssh config, ProxyJump and a user with sudo, against the in-process servers.

@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home (no ~/.ssh/config, no known_hosts) and no ssh-agent."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return tmp_path / "home"


@contextlib.contextmanager
def ssh_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *keys: Path) -> Iterator[None]:
    """OpenSSH's ssh-agent in the foreground on a socket of tmp_path, holding keys, as SSH_AUTH_SOCK."""
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        for key in keys:
            subprocess.run(["ssh-add", str(key)], check=True, capture_output=True)
        yield
    finally:
        agent.terminate()
        agent.wait(10)


def known_hosts_file(path: Path, *servers: Server) -> Path:
    path.write_text("".join(f"[127.0.0.1]:{s.port} {s.host_key_line}\n" for s in servers))
    return path


def test_with_no_key_the_agents_keys_log_in(server: Server, home: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kh = known_hosts_file(tmp_path / "kh", server)
    with ssh_agent(tmp_path, monkeypatch, server.client_key_file):
        spec = parse_node_spec(f"ssh://127.0.0.1:{server.port}?known_hosts={kh}")
        assert spec.ssh is not None and spec.ssh.auth == SshAuth((), agent=True)
        with SshTransport.login(spec.ssh) as transport:
            assert transport.check_output(["echo", "by the agent"]) == "by the agent"


def test_an_agent_without_keys_is_one_line(server: Server, home: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    kh = known_hosts_file(tmp_path / "kh", server)
    with ssh_agent(tmp_path, monkeypatch):
        spec = parse_node_spec(f"ssh://127.0.0.1:{server.port}?known_hosts={kh}")
        assert spec.ssh is not None
        with pytest.raises(TransportError, match=r"the ssh-agent \(SSH_AUTH_SOCK=.*\) holds no keys or cannot be "
                                                 r"reached; ssh-add a key or give \?key=FILE"):
            SshTransport.login(spec.ssh)


def test_an_alias_of_the_ssh_config_logs_in_with_its_key_and_known_hosts(server: Server, home: Path) -> None:
    (home / ".ssh").mkdir(parents=True)
    kh = known_hosts_file(home / "lab_known_hosts", server)
    (home / ".ssh" / "config").write_text(f"Host lab-node\n  HostName 127.0.0.1\n  Port {server.port}\n"
                                          f"  IdentityFile {server.client_key_file}\n  UserKnownHostsFile {kh}\n")
    spec = parse_node_spec("ssh://lab-node")
    assert spec.ssh is not None
    with SshTransport.login(spec.ssh) as transport:
        assert transport.check_output(["echo", "aliased"]) == "aliased"


def test_a_known_hosts_without_the_node_is_refused_never_accepted(server: Server, home: Path) -> None:
    (home / ".ssh").mkdir(parents=True)
    known_hosts_file(home / ".ssh" / "known_hosts")
    spec = parse_node_spec(f"ssh://127.0.0.1:{server.port}?key={server.client_key_file}")
    assert spec.ssh is not None
    with pytest.raises(HostKeyError, match="not pinned; refusing to connect"):
        SshTransport.login(spec.ssh)


@pytest.fixture(scope="module")
def bastion(client_key: tuple[paramiko.PKey, Path]) -> Iterator[tuple[Server, list[tuple[str, int]]]]:
    """A second server that only lets `jumper` in and forwards direct-tcpip channels (ProxyJump)."""
    forwards: list[tuple[str, int]] = []
    with serving(*client_key, users=frozenset({"jumper"}), forwards=forwards) as running:
        yield running, forwards


def test_jump_goes_through_the_bastion_with_both_host_keys_pinned(
        server: Server, bastion: tuple[Server, list[tuple[str, int]]], home: Path, tmp_path: Path) -> None:
    hop, forwards = bastion
    kh = known_hosts_file(tmp_path / "kh", server, hop)
    spec = parse_node_spec(f"ssh://127.0.0.1:{server.port}?key={server.client_key_file}&known_hosts={kh}"
                           f"&jump=jumper@127.0.0.1:{hop.port}")
    assert spec.ssh is not None
    forwards.clear()
    with SshTransport.login(spec.ssh) as transport:
        assert transport.check_output(["echo", "jumped"]) == "jumped"
    assert forwards == [("127.0.0.1", server.port)]


def test_an_unpinned_bastion_is_refused_before_any_forward(
        server: Server, bastion: tuple[Server, list[tuple[str, int]]], home: Path, tmp_path: Path) -> None:
    hop, forwards = bastion
    kh = known_hosts_file(tmp_path / "kh", server)
    spec = parse_node_spec(f"ssh://127.0.0.1:{server.port}?key={server.client_key_file}&known_hosts={kh}"
                           f"&jump=jumper@127.0.0.1:{hop.port}")
    assert spec.ssh is not None
    forwards.clear()
    with pytest.raises(HostKeyError, match=rf"host key of \[127.0.0.1\]:{hop.port} .* is not pinned"):
        SshTransport.login(spec.ssh)
    assert forwards == []


def test_the_configs_proxyjump_is_followed(server: Server, bastion: tuple[Server, list[tuple[str, int]]],
                                           home: Path, tmp_path: Path) -> None:
    hop, forwards = bastion
    kh = known_hosts_file(tmp_path / "kh", server, hop)
    config = tmp_path / "config"
    config.write_text(f"Host node\n  HostName 127.0.0.1\n  Port {server.port}\n  ProxyJump gate\n"
                      f"Host gate\n  HostName 127.0.0.1\n  Port {hop.port}\n  User jumper\n"
                      f"Host *\n  IdentityFile {server.client_key_file}\n")
    spec = parse_node_spec(f"ssh://node?config={config}&known_hosts={kh}")
    assert spec.ssh is not None
    forwards.clear()
    with SshTransport.login(spec.ssh) as transport:
        assert transport.check_output(["echo", "via gate"]) == "via gate"
    assert forwards == [("127.0.0.1", server.port)]


# sudo(8) is not installed on this host: a stand-in on the node's PATH takes its place. It checks that nodeconf
# calls it as `sudo -n -- ARGV`, logs the argv and runs it (the reference VM's e2e test runs the real one).
STAND_IN_SUDO = """#!/bin/sh
[ "$1" = -n ] && [ "$2" = -- ] || { echo "sudo: not called as sudo -n --" >&2; exit 1; }
shift 2
echo "$*" | tr '\\n' ' ' >> "$(dirname "$0")/log" && echo >> "$(dirname "$0")/log"
exec "$@"
"""
# What sudo 1.9 says with -n when the sudoers rule wants a password (plugins/sudoers/auth/sudo_auth.c).
ASKING_SUDO = "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n"


@contextlib.contextmanager
def sudo_node(client_key: tuple[paramiko.PKey, Path], tmp_path: Path, sudo: str) -> Iterator[tuple[Server, Path]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text(sudo)
    (bin_dir / "sudo").chmod(0o755)
    with serving(*client_key, users=frozenset({"admin"}), path=str(bin_dir)) as running:
        yield running, bin_dir / "log"


def admin_spec(node: Server, tmp_path: Path, query: str = "&sudo=1") -> SshLogin:
    kh = known_hosts_file(tmp_path / "kh", node)
    spec = parse_node_spec(f"ssh://admin@127.0.0.1:{node.port}?key={node.client_key_file}&known_hosts={kh}{query}")
    assert spec.ssh is not None
    return spec.ssh


def test_with_sudo_every_command_stream_and_file_goes_through_sudo_n(
        client_key: tuple[paramiko.PKey, Path], home: Path, tmp_path: Path) -> None:
    with sudo_node(client_key, tmp_path, STAND_IN_SUDO) as (node, log), \
            SshTransport.login(admin_spec(node, tmp_path)) as transport:
        assert transport.run(["sh", "-c", "cat; exit 7"], input=b"through sudo").stdout == b"through sudo"
        transport.put(str(tmp_path / "put"), b"file", mode=0o640)
        source = tmp_path / "tree"
        source.mkdir()
        (source / "f").write_text("tree\n")
        transport.put_tree(source, str(tmp_path / "pushed"))
        stream = transport.open_stream(["sh", "-c", "read -r line; echo \"got $line\""], timeout=10)
        stream.write(b"x\n")
        assert stream.readline() == b"got x\n"
        stream.close()
    assert (tmp_path / "put").read_bytes() == b"file" and (tmp_path / "put").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "pushed" / "f").read_text() == "tree\n"
    logged = log.read_text().splitlines()
    assert [line.split()[0] for line in logged] == ["true", "sh", "sh", "sh", "sh"], logged


def test_a_sudo_that_asks_for_a_password_is_one_line_naming_it(
        client_key: tuple[paramiko.PKey, Path], home: Path, tmp_path: Path) -> None:
    with sudo_node(client_key, tmp_path, ASKING_SUDO) as (node, _), \
            pytest.raises(TransportError) as caught:
        SshTransport.login(admin_spec(node, tmp_path))
    assert str(caught.value) == (f"`sudo -n true` as admin@127.0.0.1:{node.port} failed: sudo: a password is "
                                 "required; sudo=1 needs sudo without a password (NOPASSWD in sudoers) and without "
                                 "a tty")


def test_a_user_who_is_not_root_without_sudo_is_refused(
        client_key: tuple[paramiko.PKey, Path], home: Path, tmp_path: Path) -> None:
    with serving(*client_key, users=frozenset({"nobody"})) as node:
        kh = known_hosts_file(tmp_path / "kh", node)
        spec = parse_node_spec(f"ssh://nobody@127.0.0.1:{node.port}?key={node.client_key_file}&known_hosts={kh}")
        assert spec.ssh is not None
        with pytest.raises(TransportError, match=r"nobody@127.0.0.1:\d+ is not root \(uid 65534\): nodeconf runs "
                                                 r"its commands as root; add sudo=1"):
            SshTransport.login(spec.ssh)


def test_the_enforcer_is_pushed_launched_and_removed_through_sudo(
        client_key: tuple[paramiko.PKey, Path], home: Path, tmp_path: Path) -> None:
    """The bundle reaches the root `sh` of the push on sudo's stdin (no file the login user could swap on the way),
    the launch checks the tree's digest as root, and the bridge stream and the removal run through sudo too."""
    settings = local_settings(tmp_path)
    with sudo_node(client_key, tmp_path, STAND_IN_SUDO) as (node, log):
        enforced = EnforcedNode(SshTransport.login(admin_spec(node, tmp_path)), settings, spec="ssh").start()
        try:
            assert enforced.facts().memory_capacity > 0
        finally:
            enforced.close()
    assert not Path(settings.remote_dir).exists() and not Path(settings.state_dir).exists()
    calls = log.read_text().splitlines()
    assert calls[0].strip() == "true", calls
    steps = [("dir=$1 state=$2 token=$3",), ("nodeconf-agent", " serve "),
             ("nodeconf-agent", " nodeconf.enforcer.bridge "), ("token=$1 mark=$2",)]
    # the push, the daemon, its stream, the removal of the marked directories
    for step in steps:
        assert any(all(part in call for part in step) for call in calls), step


def test_a_hashed_known_hosts_entry_pins_the_node(server: Server, home: Path, tmp_path: Path) -> None:
    """HashKnownHosts (Debian's ssh_config default) writes `|1|SALT|HASH` names; they pin as plain ones do."""
    kh = tmp_path / "kh"
    line = f"{paramiko.HostKeys.hash_host(f'[127.0.0.1]:{server.port}')} {server.host_key_line}\n"
    kh.write_text(line)
    spec = parse_node_spec(f"ssh://127.0.0.1:{server.port}?key={server.client_key_file}&known_hosts={kh}")
    assert spec.ssh is not None
    with SshTransport.login(spec.ssh) as transport:
        assert transport.check_output(["echo", "hashed"]) == "hashed"
    assert kh.read_text() == line, "the user's known_hosts is read, never written"
