"""Openers of the nodes the bundled enforcer runs on this machine (`local`) or over SSH; the VM's opener lives
beside the VM in nodeconf/infra/vm/opener.py.

Source: issue 12 (each scheme's opener beside its driver, all taking the parsed NodeSpec).
"""

from __future__ import annotations

from nodeconf.nodes.base import Node
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.enforced.runtime_choice import AUTO
from nodeconf.nodes.spec import NodeSpec


def enforcer_settings(spec: NodeSpec) -> EnforcerSettings:
    """The enforcer settings a spec's options give (the rest default); on local, ssh:// and vm?image= the node's own
    runtime is chosen at start (runtime= cri|direct, else auto)."""
    options = spec.enforcer
    defaults = EnforcerSettings()
    return EnforcerSettings(
        cgroup_root=options.cgroup_root or defaults.cgroup_root,
        remote_dir=options.remote_dir or defaults.remote_dir,
        python=options.python or defaults.python,
        cpu_weight_formula=options.cpu_weight_formula or defaults.cpu_weight_formula,
        faults=options.faults,
        backoff=defaults.backoff if options.backoff is None else options.backoff,
        runtime=spec.vm.variant.runtime,  # vm?runtime=runc|crun: the image has it, the agent launches through it
        node_runtime=None if spec.scheme == "vm" and spec.vm.image is None else options.runtime or AUTO,
    )


def open_local_node(spec: NodeSpec) -> Node:
    """This machine, run by the enforcer (`local`)."""
    from nodeconf.nodes.transport.local import LocalTransport

    return EnforcedNode(LocalTransport(), enforcer_settings(spec), spec=spec.display).start()


def open_ssh_node(spec: NodeSpec) -> Node:
    """A machine reached over SSH with a key and a pinned host key, run by the enforcer (`ssh://`)."""
    from nodeconf.nodes.transport.ssh import SshTransport

    login = spec.ssh
    if login is None:
        raise ValueError(f"open_ssh_node needs an ssh:// spec, got {spec.display!r}")
    return EnforcedNode(SshTransport.login(login), enforcer_settings(spec), spec=spec.display).start()

