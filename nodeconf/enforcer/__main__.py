"""`python3 -m nodeconf.enforcer serve|cleanup|runtime-probe`: run the agent, clean up after it, or say which CRI
runtime the node has (the driver reaches the agent through `python3 -m nodeconf.enforcer.bridge`, which imports
nothing of the agent)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from nodeconf.enforcer import reserved
from nodeconf.enforcer.agent import Agent
from nodeconf.enforcer.agent_claim import hold_lock, kill_agent, stop_abandoned, write_pid_file
from nodeconf.enforcer.cgroupfs import OWNED, CgroupTree, is_cgroup2
from nodeconf.enforcer.cri.probe import probe
from nodeconf.enforcer.cri.runtime import CRI, TOKEN_FILE, CriRuntime, cri_facts
from nodeconf.enforcer.daemons import CONTAINERD_SOCKET
from nodeconf.enforcer.facts import detect, node_memory_used, node_pids
from nodeconf.enforcer.lifecycle import Backoff, Faults
from nodeconf.enforcer.oci_runtime import (
    DIRECT,
    RUNTIMES,
    OciRuntime,
    RuntimeCommandError,
    become_subreaper,
    runtime_facts,
)
from nodeconf.enforcer.ownership import (
    MARKER_FILE,
    agent_owner,
    foreign_message,
    kill_recorded,
    owner_of,
)
from nodeconf.enforcer.server import AgentServer, agent_answers
from nodeconf.enforcer.state_file import LOG_FILE, PID_FILE, STATE_FILE
from nodeconf.enforcer.systemd_tree import SystemdTree, tree_for
from nodeconf.enforcer.wire import ALREADY_RUNNING, FOREIGN_TREE
from nodeconf.errors import InputError
from nodeconf.kubelet_config import runtime_request_timeout_flag
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS

STAND_IN_HELP = "the root is a plain directory standing for a cgroup tree (tests); without it the root must be cgroup2"
# Where the agent's code (and the workload programs next to it) lives: containers see it read-only.
AGENT_HOME = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m nodeconf.enforcer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the agent")
    serve.add_argument("--root", type=Path, default=Path("/sys/fs/cgroup"), help="cgroup root of the oracle paths")
    serve.add_argument("--state-dir", type=Path, required=True)
    serve.add_argument("--socket", type=Path, required=True)
    serve.add_argument("--cpu-weight-formula", choices=CPU_WEIGHT_FORMULAS, default="nonlinear",
                       help="the runtime formula this node claims (runc ≥ 1.3.2: nonlinear)")
    serve.add_argument("--runtime", choices=(DIRECT, *RUNTIMES, CRI), default=DIRECT,
                       help="who starts containers: direct (the agent itself), the runc/crun installed on the node, "
                            "or the node's containerd over CRI")
    serve.add_argument("--runtime-request-timeout", metavar="DURATION",
                       help="the kubelet flag (e.g. 10m0s): bounds each runtime command and CRI call, over the "
                            "configuration's runtimeRequestTimeout")
    serve.add_argument("--fault", action="append", default=[],
                       help="compute with a deliberate deviation: cpu-weight-formula=F, memory-throttling-factor=X")
    serve.add_argument("--backoff", type=float, default=10.0, help="initial restart back-off in seconds")
    serve.add_argument("--tick", type=float, default=0.1, help="supervision interval in seconds")
    serve.add_argument("--daemon", action="store_true", help="detach; exit once the socket accepts requests")
    serve.add_argument("--stand-in", action="store_true", help=STAND_IN_HELP)
    serve.add_argument("--token", help="the driver session's token: the state directory's mark must hold it")
    cleanup = sub.add_parser("cleanup", help="kill the agent and remove everything it started and created")
    cleanup.add_argument("--root", type=Path, default=Path("/sys/fs/cgroup"))
    cleanup.add_argument("--state-dir", type=Path, help="where the agent keeps its pid file")
    cleanup.add_argument("--socket", type=Path,
                         help="refuse when a run talks to the agent there, else ask it to stop first")
    cleanup.add_argument("--stand-in", action="store_true", help=STAND_IN_HELP)
    sub.add_parser("runtime-probe", help="print (JSON) the node's CRI runtime sockets, their Version answers and "
                   "the kubelets running")
    return parser


def _serve(args: argparse.Namespace, ready: int | None) -> int:
    args.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    logging.basicConfig(filename=args.state_dir / LOG_FILE, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger("nodeconf.enforcer")
    from nodeconf.enforcer.oracle import decide_resize, expect
    from nodeconf.semantics.oom import KUBELET_OOM_SCORE_ADJ

    with contextlib.suppress(OSError):
        Path("/proc/self/oom_score_adj").write_text(str(KUBELET_OOM_SCORE_ADJ))
    tree = tree_for(args.root, OWNED, agent_owner(args.state_dir))
    facts = detect(args.root, args.cpu_weight_formula, args.runtime)
    runtime: OciRuntime | None = None
    faults = Faults.parse(args.fault)
    flag = _request_timeout(args)
    if args.runtime == CRI:
        runtime = CriRuntime(args.state_dir, (str(AGENT_HOME),), isinstance(tree, SystemdTree))
        if flag is not None:
            runtime.take_flag(flag)
        facts = cri_facts(runtime, tree, facts)
    elif args.runtime == DIRECT:  # the agent writes the container files itself: its formula, or the fault's
        written = faults.cpu_weight_formula or args.cpu_weight_formula
        facts = dataclasses.replace(facts, runtime=DIRECT, measured_cpu_weight_formula=written)
    else:
        become_subreaper()
        runtime = OciRuntime(args.runtime, args.state_dir, (str(AGENT_HOME),), isinstance(tree, SystemdTree))
        if flag is not None:
            runtime.take_flag(flag)
        facts = runtime_facts(runtime, tree, facts)
    agent = Agent(tree, args.state_dir, facts, expect, decide_resize,
                  node_memory_used=node_memory_used, node_pids=node_pids if facts.pid_capacity is not None else None,
                  faults=faults,
                  backoff=Backoff(initial=args.backoff), log=log, runtime=runtime)
    log.info("agent %d starting: root %s (kernel cgroup2: %s, %s), faults %s, runtime %s %s (%s cpu.weight), "
             "--runtime-request-timeout %s", os.getpid(), args.root, tree.kernel, type(tree).__name__, faults,
             facts.runtime, facts.runtime_version, facts.measured_cpu_weight_formula,
             args.runtime_request_timeout or "not given (the configuration's runtimeRequestTimeout)")
    agent.recover()
    server = AgentServer(args.socket, agent)
    write_pid_file(args.state_dir)

    def supervise() -> None:
        while not server.stopping.wait(args.tick):
            try:
                agent.tick()
            except Exception:
                log.exception("supervision failed")

    def stop(signum: int, _frame: object) -> None:
        log.info("signal %d: stopping", signum)
        agent.stop()
        server.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=supervise, daemon=True).start()
    if ready is not None:
        os.write(ready, b"ready\n")
        os.close(ready)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    with contextlib.suppress(FileNotFoundError):
        args.socket.unlink()
    log.info("agent stopped")
    return 0


def _request_timeout(args: argparse.Namespace) -> float | None:
    """`--runtime-request-timeout` in seconds, None when not given; InputError for a bad one."""
    text = args.runtime_request_timeout
    return None if text is None else runtime_request_timeout_flag(text) / 10**9


def _cleanup(args: argparse.Namespace) -> int:
    """Kill the agent and the processes its state file records, remove its marked cgroups, the state file (no later
    agent restarts these pods) and the CRI token once the runtime holds nothing labelled with it; a cgroup nodeconf
    did not create is left alone and named on stderr.
    With --socket an agent a run still talks to is refused (exit ALREADY_RUNNING), one nobody talks to is asked to
    stop first (it kills its pods itself)."""
    if args.socket is not None:
        refusal = stop_abandoned(args.socket)
        if refusal:
            print(refusal, file=sys.stderr)
            return ALREADY_RUNNING
    state = None
    owner = "nodeconf"
    cri_cleared = True
    if args.state_dir is not None:
        owner = agent_owner(args.state_dir)
        kill_agent(args.state_dir / PID_FILE)
        with contextlib.suppress(OSError, ValueError):
            state = json.loads((args.state_dir / STATE_FILE).read_text())
            kill_recorded(state)
        cri_cleared = _cleanup_cri(args.state_dir)
    tree = tree_for(args.root, OWNED, owner)
    left = [*tree.foreign_roots(), *tree.clear()]
    for top in sorted({reserved.top(p) for p in reserved.in_state(tree, state)}):
        left += reserved.remove(tree, top)
    for directory in left:
        other = owner_of(directory, tree.kernel)
        whose = f"created by another nodeconf run ({other})" if other else "not created by nodeconf"
        print(f"nodeconf agent: left {directory} in place: {whose}", file=sys.stderr)
    if args.state_dir is not None and (args.state_dir / MARKER_FILE).is_file():
        for name in (STATE_FILE, PID_FILE, *([TOKEN_FILE] if cri_cleared else [])):
            with contextlib.suppress(FileNotFoundError):
                (args.state_dir / name).unlink()
    return 0


def _cleanup_cri(state_dir: Path) -> bool:
    """Remove the sandboxes and images an agent of this state directory left in the node's CRI runtime: only those
    labelled with its token (cri.runtime TOKEN_FILE), when it had one. False when the runtime could not be asked:
    the token stays, the only proof of what is this agent's for a later cleanup."""
    token = state_dir / TOKEN_FILE
    if not token.is_file():
        return True
    try:
        if not Path(CONTAINERD_SOCKET).exists():
            raise RuntimeCommandError(f"no CRI runtime answers at {CONTAINERD_SOCKET}")
        runtime = CriRuntime(state_dir, (), False, socket_path=CONTAINERD_SOCKET)
        runtime.clear()
        runtime.remove_images()
    except RuntimeCommandError as err:
        print(f"nodeconf agent: {err}; kept {token} for a later cleanup", file=sys.stderr)
        return False
    return True


def _daemonize(args: argparse.Namespace) -> int:
    """Double-fork; the first parent waits for the daemon's `ready` (or its failure) and reports it."""
    read_end, write_end = os.pipe()
    if os.fork():
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            status = pipe.read().decode()
        if status.startswith("ready"):
            return 0
        print(f"nodeconf agent failed to start: {status.strip() or 'see ' + str(args.state_dir / LOG_FILE)}",
              file=sys.stderr)
        return 1
    os.close(read_end)
    os.setsid()
    if os.fork():
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    args.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    out = os.open(args.state_dir / "agent.out", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    try:
        code = _serve(args, write_end)
    except Exception as err:
        with contextlib.suppress(OSError):
            os.write(write_end, f"{type(err).__name__}: {err}\n".encode())
        raise
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "runtime-probe":
        print(json.dumps(probe()))
        return 0
    if not args.stand_in and not is_cgroup2(args.root):
        print(f"nodeconf agent: {args.root} is not a cgroup v2 file system; the enforcer needs cgroup v2 (a unified "
              "hierarchy)", file=sys.stderr)
        return 2
    if args.command == "cleanup":
        return _cleanup(args)
    try:
        Faults.parse(args.fault)
        _request_timeout(args)
    except (ValueError, InputError) as err:
        print(f"nodeconf agent: {err}", file=sys.stderr)
        return 2
    foreign = CgroupTree(args.root, OWNED, agent_owner(args.state_dir)).foreign_roots()
    if foreign:
        print(foreign_message(foreign[0], is_cgroup2(args.root)), file=sys.stderr)
        return FOREIGN_TREE
    held = hold_lock(args.state_dir, args.token)
    if held:
        print(held, file=sys.stderr)
        return ALREADY_RUNNING
    if agent_answers(args.socket):
        print(f"nodeconf agent: another agent is running at {args.socket}; stop it first", file=sys.stderr)
        return ALREADY_RUNNING
    return _daemonize(args) if args.daemon else _serve(args, None)


if __name__ == "__main__":
    sys.exit(main())
