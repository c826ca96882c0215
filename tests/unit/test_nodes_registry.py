"""One node spec parser: vm, local, ssh://user@host[:port]?key=..., kube[:context]; clear errors otherwise."""

from __future__ import annotations

import re

import pytest

from nodeconf.nodes.registry import NodeSpecError, enforcer_settings, open_node, parse_spec


@pytest.mark.parametrize("text, scheme, target, options", [
    ("vm", "vm", "", {}),
    ("vm?memory=6144&fault=cpu-weight-formula=linear", "vm", "",
     {"memory": ("6144",), "fault": ("cpu-weight-formula=linear",)}),
    ("local", "local", "", {}),
    ("local?root=/sys/fs/cgroup/test.slice", "local", "", {"root": ("/sys/fs/cgroup/test.slice",)}),
    ("ssh://root@10.0.0.5:2222?key=/k/id_ed25519", "ssh", "root@10.0.0.5:2222", {"key": ("/k/id_ed25519",)}),
    ("kube", "kube", "", {}),
    ("kube:kind-nodeconf", "kube", "kind-nodeconf", {}),
], ids=["vm", "vm-options", "local", "local-root", "ssh", "kube", "kube-context"])
def test_specs(text: str, scheme: str, target: str, options: dict[str, tuple[str, ...]]) -> None:
    spec = parse_spec(text)
    assert (spec.scheme, spec.target, dict(spec.options)) == (scheme, target, options)


@pytest.mark.parametrize("text, message", [
    ("docker", "unknown node spec 'docker'"),
    ("vmx", "unknown node spec 'vmx'"),
    ("ssh://", "is not ssh://user@host[:port]"),
    ("ssh://root@host/path", "is not ssh://user@host[:port]"),
    ("vm?colour=red", "unknown option 'colour'"),
    ("local?memory=4096", "unknown option 'memory'"),
    ("kube:ctx?key=x", "unknown option 'key' (allowed: none)"),
    ("vm?memory", "unreadable options"),
    ("vm?memory=abc", "memory must be a whole number, got 'abc'"),
    ("vm?fault=cpu-weight-formula=cubic", "bad fault 'cpu-weight-formula=cubic'"),
], ids=["unknown-scheme", "prefix-only", "ssh-empty", "ssh-path", "vm-unknown-option", "local-vm-option",
        "kube-options", "option-without-value", "vm-size-not-a-number", "unknown-fault"])
def test_bad_specs_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(NodeSpecError, match=re.escape(message)) as info:
        parse_spec(text)
    assert "\n" not in str(info.value)


def test_enforcer_settings_from_options() -> None:
    settings = enforcer_settings(parse_spec("local?fault=cpu-weight-formula=linear&fault=memory-throttling-factor=0.5"
                                            "&backoff=1.5&root=/tmp/cg"))
    assert settings.faults == ("cpu-weight-formula=linear", "memory-throttling-factor=0.5")
    assert (settings.backoff, settings.cgroup_root) == (1.5, "/tmp/cg")
    with pytest.raises(NodeSpecError, match="backoff must be seconds"):
        enforcer_settings(parse_spec("local?backoff=soon"))


def test_ssh_needs_a_key() -> None:
    with pytest.raises(NodeSpecError, match=r"needs \?key=PATH"):
        open_node("ssh://root@127.0.0.1:1")
