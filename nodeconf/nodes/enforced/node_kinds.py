"""The node kinds the bundled enforcer runs on: `local` (this machine) and `ssh://` (a machine over SSH), and the
enforcer options every enforced spec takes (`vm` too, nodeconf/infra/vm/node_kind.py).

Source: issue 27 item 2 (a record per node kind); issue 10 (node options are data, not shell).
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from abc import abstractmethod
from typing import TYPE_CHECKING

from nodeconf.errors import NodeSpecError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS
from nodeconf.nodes.base import Node
from nodeconf.nodes.kinds import NodeKind
from nodeconf.nodes.spec import EnforcerOptions, NodeSpec
from nodeconf.nodes.ssh_login import SshLogin, ssh_login

if TYPE_CHECKING:  # the driver is imported when a node opens or is cleaned, not when its spec is parsed
    from nodeconf.nodes.enforced.node import AgentTransport

# Options an enforced node (vm, local, ssh) takes in the query string; only fault= may be given more than once.
ENFORCER_OPTIONS = ("fault", "backoff", "cpu-weight-formula", "root", "dir", "python")
# runtime= on a node with a runtime of its own (local, ssh://, vm?image=): cri|direct (runtime_choice.py).
RUNTIME_OPTION = "runtime"
# ssh:// (nodeconf/nodes/ssh_login.py): key=, pinned host keys, the ssh config, bastions, sudo=0|1.
SSH_OPTIONS = ("key", "known_hosts", "host_key", "config", "jump", "sudo")
CGROUP_MOUNT = "/sys/fs/cgroup"
# Paths and programs on the node: letters, digits and . _ + @ - only (no shell metacharacters, no `=` that `env`
# would take for a variable, no spaces).
NODE_PATH = re.compile(r"(/[A-Za-z0-9._+@-]+)+")
PROGRAM = re.compile(r"[A-Za-z0-9_+@-][A-Za-z0-9._+@-]*")
SECONDS = re.compile(r"\d+(\.\d+)?")


class EnforcedKind(NodeKind):
    """A node the bundled enforcer runs on: its options and the kubelet configuration it takes."""

    repeatable = frozenset({"fault"})

    def enforcer_options(self, options: tuple[tuple[str, str], ...], shown: str) -> EnforcerOptions:
        """fault= (repeatable), backoff=, cpu-weight-formula=, root=, dir=, python=, each checked."""
        from nodeconf.enforcer.lifecycle import Faults

        single = dict(options)
        faults = tuple(value for name, value in options if name == "fault")
        try:
            Faults.parse(faults)
        except ValueError as err:
            raise NodeSpecError(f"node spec {shown!r}: {err}") from None
        backoff = single.get("backoff")
        if backoff is not None and not (SECONDS.fullmatch(backoff) and math.isfinite(float(backoff))):
            raise NodeSpecError(f"node spec {shown!r}: backoff must be seconds (a finite number >= 0), "
                                f"got {backoff!r}")
        formula = single.get("cpu-weight-formula")
        if formula is not None and formula not in CPU_WEIGHT_FORMULAS:
            raise NodeSpecError(f"node spec {shown!r}: cpu-weight-formula must be one of "
                                f"{', '.join(CPU_WEIGHT_FORMULAS)}, got {formula!r}")
        return EnforcerOptions(
            faults=faults,
            backoff=float(backoff) if backoff is not None else None,
            cpu_weight_formula=formula,
            cgroup_root=_cgroup_root(single.get("root"), shown),
            remote_dir=self._work_dir(single.get("dir"), shown),
            python=self._python(single.get("python"), shown),
            runtime=self._own_runtime(single, shown),
        )

    def _own_runtime(self, single: dict[str, str], shown: str) -> str | None:
        """runtime= of a node with a runtime of its own: one of runtime_choice.CHOICES (None when absent)."""
        from nodeconf.nodes.enforced.runtime_choice import CHOICES

        value = single.get(RUNTIME_OPTION)
        if value is not None and value not in CHOICES:
            raise NodeSpecError(f"node spec {shown!r}: runtime must be one of {'|'.join(CHOICES)} (absent: the "
                                f"node's CRI runtime when it has one, else direct), got {value!r}")
        return value

    def _work_dir(self, value: str | None, shown: str) -> str | None:
        """dir= is a directory nodeconf creates itself on the node."""
        return None if value is None else _node_path("dir", value, shown)

    def _python(self, value: str | None, shown: str) -> str | None:
        """python= is a bare program name or an absolute path."""
        if value is None:
            return None
        if not value.startswith("/"):
            if not PROGRAM.fullmatch(value):
                raise NodeSpecError(f"node spec {shown!r}: python= must be an absolute path or a program name of "
                                    f"letters, digits and ._+@-, got {value!r}")
            return value
        return _node_path("python", value, shown)

    def advice(self, requested: KubeletConfig) -> str:
        return "give it with --kubelet-config: the bundled enforcer runs the kubelet configuration it is given"


class MachineKind(EnforcedKind):
    """A machine nodeconf did not create (`local`, `ssh://`): what killed runs left on it is removed by the
    enforcer's own cleanup, which touches only what it marked."""

    @abstractmethod
    def transport(self, spec: NodeSpec) -> AgentTransport:
        """A transport to the machine, for its cleanup."""

    def clean(self, spec: NodeSpec, dry_run: bool) -> list[str]:
        """The enforcer's own cleanup (nodeconf/nodes/leftovers.py), from a fresh copy pushed to the node."""
        from nodeconf.nodes.enforced.opener import enforcer_settings
        from nodeconf.nodes.leftovers import clean_enforcer

        if dry_run:
            return [f"{spec.display}: would run the enforcer's cleanup (refuses an agent a run is connected to, "
                    "stops an abandoned one, removes the cgroups it marked and its state file)"]
        settings = enforcer_settings(spec)
        transport = self.transport(spec)
        try:
            output = clean_enforcer(transport, settings).strip()
        finally:
            transport.close()
        return [f"{spec.scheme} node: enforcer cleanup done" + (f": {output}" if output else "")]


class LocalKind(MachineKind):
    """`local`: this machine, run by the enforcer."""

    scheme, usage = "local", "local"
    options = (*ENFORCER_OPTIONS, RUNTIME_OPTION)

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        return NodeSpec(self.scheme, options, enforcer=self.enforcer_options(options, shown))

    def _work_dir(self, value: str | None, shown: str) -> str | None:
        """... and must not exist yet on this machine (it is removed at the end)."""
        if value is not None and os.path.lexists(_node_path("dir", value, shown)):
            raise NodeSpecError(f"node spec {shown!r}: dir={value} already exists; nodeconf only uses a work "
                                "directory it creates itself (name one that does not exist)")
        return value

    def _python(self, value: str | None, shown: str) -> str | None:
        """... and an absolute path is an executable file here."""
        found = super()._python(value, shown)
        if found is not None and found.startswith("/") and not (os.path.isfile(found) and os.access(found, os.X_OK)):
            raise NodeSpecError(f"node spec {shown!r}: python={found} is not an executable file")
        return found

    def machine(self, spec: NodeSpec) -> str | None:
        return "local"

    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        from nodeconf.nodes.enforced.opener import open_local_node

        return open_local_node(spec)

    def transport(self, spec: NodeSpec) -> AgentTransport:
        from nodeconf.nodes.transport.local import LocalTransport

        return LocalTransport()


class SshKind(MachineKind):
    """`ssh://user@host[:port]?key=...`: a machine reached with a key and a pinned host key, run by the enforcer."""

    scheme, usage, target = "ssh", "ssh://user@host[:port]?key=FILE&known_hosts=FILE", "://"
    options = (*SSH_OPTIONS, *ENFORCER_OPTIONS, RUNTIME_OPTION)

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec:
        login = ssh_login(target or "", dict(options), shown)
        return NodeSpec(self.scheme, options, ssh=login, enforcer=self.enforcer_options(options, shown))

    def written(self, spec: NodeSpec) -> str:
        return f"ssh://{_login(spec).display}"

    def short_name(self, spec: NodeSpec) -> str:
        login = _login(spec)
        return f"ssh-{login.alias or login.target.host}-{login.target.port}"

    def machine(self, spec: NodeSpec) -> str | None:
        login = _login(spec)
        return f"ssh {login.target.host.lower()}:{login.target.port}"

    def open(self, spec: NodeSpec, *, kubelet_config: KubeletConfig | None, profile: str | None) -> Node:
        from nodeconf.nodes.enforced.opener import open_ssh_node

        return open_ssh_node(spec)

    def transport(self, spec: NodeSpec) -> AgentTransport:
        from nodeconf.nodes.leftovers import ssh_transport

        return ssh_transport(_login(spec))


LOCAL, SSH = LocalKind(), SshKind()


def _login(spec: NodeSpec) -> SshLogin:
    """An ssh:// spec's login, which parse_node_spec always sets."""
    if spec.ssh is None:
        raise ValueError(f"an ssh spec without its login: {spec.scheme} {spec.options}")
    return spec.ssh


def _node_path(name: str, value: str, shown: str) -> str:
    """An absolute, normalized path of plain characters (it is data on the node, never shell)."""
    if not NODE_PATH.fullmatch(value) or posixpath.normpath(value) != value or ".." in value.split("/"):
        raise NodeSpecError(f"node spec {shown!r}: {name}= must be an absolute, normalized path of letters, "
                            f"digits and ._+@- without .., got {value!r}")
    return value


def _cgroup_root(value: str | None, shown: str) -> str | None:
    """root= lies under the cgroup v2 mount, so the enforcer never writes elsewhere."""
    if value is None:
        return None
    _node_path("root", value, shown)
    if value != CGROUP_MOUNT and not value.startswith(CGROUP_MOUNT + "/"):
        raise NodeSpecError(f"node spec {shown!r}: root= must be {CGROUP_MOUNT} or a cgroup under it, got {value!r}")
    return value
