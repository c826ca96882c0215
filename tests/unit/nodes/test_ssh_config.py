"""`ssh://` as users have it (issue 32 item 6): the user's ssh config resolves an alias (ssh_config(5): HostName,
User, Port, IdentityFile, UserKnownHostsFile, ProxyJump; the spec's own user and port win), keys come from key=,
the config or the ssh-agent (never a password), host keys stay pinned, and sudo= is 0 or 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.errors import NodeSpecError
from nodeconf.nodes.spec import machine, parse_node_spec, refuse_shared_machines
from nodeconf.nodes.ssh_login import SshAuth, SshHop, SshLogin, SshTarget, redact

CONFIG = """\
Host node1
  HostName 10.0.0.5
  User admin
  Port 2222
  IdentityFile {home}/.ssh/node_key
  UserKnownHostsFile {home}/lab_known_hosts
  ProxyJump jumper@bastion:2200

Host bastion
  HostName 192.0.2.7
  IdentityFile {home}/.ssh/bastion_key

Host plain
  IdentitiesOnly yes
  IdentityFile {home}/.ssh/node_key
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with ~/.ssh/config, two keys, a known_hosts file named by the config, and no ssh-agent."""
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    for name in ("node_key", "bastion_key"):
        (ssh / name).write_text("a readable file is all the spec checks\n")
    (tmp_path / "lab_known_hosts").write_text("[10.0.0.5]:2222 ssh-ed25519 AAAA\n")
    (ssh / "config").write_text(CONFIG.format(home=tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return tmp_path


def login(text: str) -> SshLogin:
    spec = parse_node_spec(text)
    assert spec.ssh is not None
    assert parse_node_spec(spec.display) == spec, "the canonical text resolves to the same login"
    return spec.ssh


def test_an_alias_resolves_through_the_users_ssh_config(home: Path) -> None:
    assert login("ssh://node1") == SshLogin(
        target=SshTarget("admin", "10.0.0.5", 2222), auth=SshAuth((home / ".ssh" / "node_key",)),
        known_hosts=(home / "lab_known_hosts",),
        jumps=(SshHop(SshTarget("jumper", "192.0.2.7", 2200), SshAuth((home / ".ssh" / "bastion_key",))),),
        alias="node1")


def test_the_specs_user_port_key_and_jump_beat_the_configs(home: Path, tmp_path: Path) -> None:
    key = tmp_path / "given_key"
    key.write_text("key\n")
    got = login(f"ssh://root@node1:22?key={key}&jump=bastion")
    assert (got.target, got.auth) == (SshTarget("root", "10.0.0.5", 22), SshAuth((key,)))
    # key= is offered to the bastion first, then the bastion's own IdentityFile (ssh -i with -J offers both)
    assert got.jumps == (SshHop(SshTarget("root", "192.0.2.7", 22), SshAuth((key, home / ".ssh" / "bastion_key"))),)


def test_config_names_another_file_and_the_home_config_is_then_not_read(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_config"
    other.write_text(f"Host node1\n  HostName 198.51.100.1\n  IdentityFile {home}/.ssh/node_key\n")
    got = login(f"ssh://node1?config={other}&known_hosts={home}/lab_known_hosts")
    assert (got.target, got.jumps) == (SshTarget("root", "198.51.100.1", 22), ())


def test_the_agent_is_used_without_a_key_and_identities_only_keeps_to_the_file(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / ".ssh" / "known_hosts").write_text("plain ssh-ed25519 AAAA\n")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(home / "agent.sock"))
    assert login("ssh://elsewhere").auth == SshAuth((), agent=True)
    assert login("ssh://plain").auth == SshAuth((home / ".ssh" / "node_key",), agent=False)
    assert login("ssh://elsewhere").known_hosts == (home / ".ssh" / "known_hosts",), "the default known_hosts"


def test_an_alias_and_its_host_name_are_one_machine(home: Path) -> None:
    specs = [parse_node_spec("ssh://node1"), parse_node_spec("ssh://admin@10.0.0.5:2222?"
                                                                   f"key={home}/.ssh/node_key&jump=none"
                                                                   f"&known_hosts={home}/lab_known_hosts")]
    assert machine(specs[0]) == machine(specs[1]) == "ssh 10.0.0.5:2222"
    assert specs[0].name == "ssh-node1-2222"
    with pytest.raises(NodeSpecError, match="are the same machine"):
        refuse_shared_machines(specs)


@pytest.mark.parametrize(("text", "message"), [
    ("ssh://elsewhere?known_hosts={home}/lab_known_hosts",
     "has no key: give ?key=FILE (a private key file), an IdentityFile in the ssh config, or run ssh-agent "
     "(SSH_AUTH_SOCK is not set)"),
    ("ssh://plain", "needs the node's host key: ?known_hosts=FILE"),
    ("ssh://node1?host_key=ssh-ed25519%20AAAA&known_hosts={home}/missing", "known_hosts="),
    ("ssh://plain?host_key=ssh-ed25519%20AAAA&jump=bastion", "needs the jump host's host key"),
    ("ssh://node1?sudo=yes", "sudo must be 0 or 1, got 'yes'"),
    ("ssh://node1?jump=root:pw@bastion", "passwords are not accepted"),
    ("ssh://node1?jump=bastion:0", "the port must be 1-65535"),
    ("ssh://node1?config={home}/missing", "config={home}/missing is not a readable file"),
])
def test_bad_ssh_specs_are_one_line(home: Path, text: str, message: str) -> None:
    with pytest.raises(NodeSpecError, match="node spec") as caught:
        parse_node_spec(text.format(home=home))
    assert message.format(home=home) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_bad_port_in_the_config_is_named(home: Path) -> None:
    (home / ".ssh" / "config").write_text("Host odd\n  Port ssh\n")
    with pytest.raises(NodeSpecError, match=r"gives odd Port 'ssh', not 1-65535"):
        parse_node_spec("ssh://odd?key=/dev/null&host_key=ssh-ed25519%20AAAA")


@pytest.mark.parametrize(("text", "shown"), [
    ("ssh://h:22?jump=j@b", "ssh://h:22?jump=j@b"),
    ("ssh://root:1234?x@h", "ssh://root:***@h"),
    ("ssh://root:pw?jump=x@h", "ssh://root:***@h"),
])
def test_an_at_in_jump_is_no_password_but_any_other_is(text: str, shown: str) -> None:
    assert redact(text) == shown
