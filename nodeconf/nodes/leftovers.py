"""Remove what an earlier, killed run left on a node: the enforcer's processes and cgroups (a cluster's finished
runs: nodeconf/nodes/kube/stale.py).

Source: issue 10 item 4; the enforcer's own `cleanup` command (it only touches what it marked).
"""

from __future__ import annotations

import shlex

from nodeconf.enforcer.wire import ALREADY_RUNNING
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.enforced.bundle import TREE_CHANGED, agent_bundle, agent_socket, launch_argv, tree_digest
from nodeconf.nodes.enforced.node import AgentTransport, EnforcerSettings
from nodeconf.nodes.shield import signals_deferred
from nodeconf.nodes.ssh_login import SshLogin

SCRATCH_PREFIX = "/tmp/nodeconf-clean."
PUSH = f'cd / && d=$(mktemp -d {SCRATCH_PREFIX}XXXXXXXX) && tar -x -z -f - -C "$d" --no-same-owner && echo "$d"'
TIMEOUT_S = 120.0


def _checked(transport: AgentTransport, argv: list[str], *, input: bytes | None = None) -> str:
    result = transport.run(argv, input=input, timeout=TIMEOUT_S)
    if result.rc in (ALREADY_RUNNING, TREE_CHANGED) and result.stderr:
        raise NodeError(result.stderr.decode(errors="replace").strip())
    if result.rc != 0:
        detail = (result.stderr or result.stdout).decode(errors="replace").strip().splitlines()
        raise NodeError(f"`{shlex.join(argv)}` failed on the node (exit {result.rc}): {detail[-1] if detail else ''}")
    return str(result.stdout.decode(errors="replace"))


def clean_enforcer(transport: AgentTransport, settings: EnforcerSettings) -> str:
    """Run the enforcer's `cleanup` from a fresh scratch copy (the run's own copy may be gone), then remove the
    scratch copy; return what the cleanup printed. An agent a run still talks to is refused (NodeError, its one
    line); one nobody talks to is asked to stop first; the state it kept is removed."""
    bundle = agent_bundle()
    scratch = _checked(transport, ["sh", "-c", PUSH], input=bundle).strip()
    if not scratch.startswith(SCRATCH_PREFIX) or "/" in scratch[len(SCRATCH_PREFIX):]:
        raise NodeError(f"unexpected scratch directory {scratch!r} on the node")
    try:
        with signals_deferred("the enforcer's cleanup on the node is done"):
            return _checked(transport, launch_argv(
                settings.python, scratch, tree_digest(bundle), "cleanup", "--root", settings.cgroup_root,
                "--state-dir", settings.state_dir, "--socket", agent_socket(settings.state_dir),
                *(["--stand-in"] if settings.stand_in else [])))
    finally:
        _checked(transport, ["rm", "-rf", "--", scratch])


def ssh_transport(login: SshLogin) -> AgentTransport:
    """A logged-in SSH transport as the ssh driver opens it."""
    from nodeconf.nodes.transport.ssh import SshTransport

    return SshTransport.login(login)
