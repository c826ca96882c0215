"""`nodeconf node up|down|status|ssh`: the reference VM for people (the fixture does the same for tests)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from nodeconf.errors import InfrastructureError, UsageError
from nodeconf.infra.vm.cache_files import remove_vm_directory, write_atomically
from nodeconf.infra.vm.machine import DEFAULT_CPUS, DEFAULT_MEMORY_MIB, DEFAULT_SWAP_MIB
from nodeconf.infra.vm.opener import boot_vm
from nodeconf.infra.vm.progress import StepPrinter
from nodeconf.infra.vm.sizes import MIN_VM_MEMORY_MIB, size_argument
from nodeconf.infra.vm.state import VmState, list_states, terminate_pid, validate_name, vm_directory
from nodeconf.nodes.facts_probe import probe_node_facts
from nodeconf.nodes.spec import VmSize
from nodeconf.nodes.ssh_login import SshTarget
from nodeconf.nodes.transport.ssh import SshTransport

DEFAULT_NAME = "default"
MIB = 1024 * 1024


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `node` and its four actions."""
    parser = subparsers.add_parser("node", help="manage the reference VM node (up, down, status, ssh)")
    parser.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help="where the image and the VMs live (default: $XDG_CACHE_HOME/nodeconf)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = actions.add_parser("up", help="build the image if needed and boot a VM that outlives this command",
                            epilog="KVM is used only when it really works; NODECONF_ACCEL=kvm|tcg forces one.")
    _name_argument(up)
    up.add_argument("--memory", type=size_argument("--memory", MIN_VM_MEMORY_MIB), default=DEFAULT_MEMORY_MIB,
                    metavar="SIZE", help=f"guest memory, a quantity (6Gi) or MiB (default: {DEFAULT_MEMORY_MIB})")
    up.add_argument("--swap", type=size_argument("--swap", 0), default=DEFAULT_SWAP_MIB, metavar="SIZE",
                    help=f"guest swap, a quantity (2Gi) or MiB (default: {DEFAULT_SWAP_MIB})")
    up.add_argument("--cpus", type=int, default=DEFAULT_CPUS, metavar="N", help=f"guest cpus (default: {DEFAULT_CPUS})")
    down = actions.add_parser("down", help="stop a VM and remove its directory")
    _name_argument(down)
    down.add_argument("--all", action="store_true", help="stop every recorded VM")
    actions.add_parser("status", help="list recorded VMs and whether they run")
    ssh = actions.add_parser("ssh", help="log in to a VM, or run a command: nodeconf node ssh [NAME] -- CMD...",
                             usage="nodeconf node ssh [-h] [NAME] [-- COMMAND ...]")
    ssh.add_argument("words", nargs=argparse.REMAINDER, metavar="[NAME] [-- COMMAND ...]",
                     help=f"the VM (default: {DEFAULT_NAME}) and the command to run there")


def _name_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", default=DEFAULT_NAME, metavar="NAME",
                        help=f"VM name (default: {DEFAULT_NAME})")


def run(args: argparse.Namespace) -> int:
    """Run one node action; 0 on success, 1 when a VM is not running, 2 on bad input or infrastructure error."""
    actions = {"up": _up, "down": _down, "status": _status, "ssh": _ssh}
    try:
        return actions[args.action](args)
    except (UsageError, InfrastructureError) as err:
        print(f"nodeconf node {args.action}: {err}", file=sys.stderr)
        return 2


def _vm_name(name: str) -> str:
    """A VM name safe as a directory name; UsageError otherwise."""
    try:
        return validate_name(name)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _up(args: argparse.Namespace) -> int:
    name = _vm_name(args.name)
    if args.cpus < 1:
        raise UsageError("the VM needs --cpus >= 1")
    machine = boot_vm(VmSize(args.memory, args.swap, args.cpus), name=name, cache_dir=args.cache_dir,
                      persistent=True, progress=StepPrinter("node"))
    try:
        with machine.ssh() as transport:
            facts = probe_node_facts(transport)
        state = machine.detach()
    finally:
        machine.stop()
    _write_known_hosts(state)
    print(f"{name}: up ({state.accel}, pid {state.pid}); kernel {facts.kernel_version}, "
          f"memory {facts.memory_capacity // MIB} MiB, swap {facts.swap_capacity // MIB} MiB, "
          f"cpus {facts.cpu_capacity_milli // 1000}, cgroup controllers: {' '.join(facts.cgroup_controllers)}")
    print(f"{name}: ssh -i {state.client_key} -p {state.ssh_port} root@127.0.0.1   (or: nodeconf node ssh {name})")
    return 0


def _down(args: argparse.Namespace) -> int:
    names = [state.name for state in list_states(args.cache_dir)] if args.all else [_vm_name(args.name)]
    for name in names:
        directory = vm_directory(name, args.cache_dir)
        try:
            state = VmState.read(directory)
        except ValueError:
            if not args.all:
                print(f"nodeconf node down: no VM called {name}", file=sys.stderr)
                return 1
            continue
        terminate_pid(state.pid, directory)
        problem = remove_vm_directory(directory, args.cache_dir)
        if problem:
            print(f"nodeconf node down: {name}: stopped, directory not removed: {problem}", file=sys.stderr)
            return 2
        print(f"{name}: down")
    return 0


def _status(args: argparse.Namespace) -> int:
    states = list_states(args.cache_dir)
    if not states:
        print("no VMs")
        return 0
    print(f"{'NAME':<16} {'STATE':<8} {'PID':>7} {'SSH':>6} {'ACCEL':<5} {'MEMORY':>8} {'SWAP':>8} CPUS")
    for state in states:
        running = "running" if state.is_running() else "stale"
        print(f"{state.name:<16} {running:<8} {state.pid:>7} {state.ssh_port:>6} {state.accel:<5} "
              f"{state.memory_mib:>5}MiB {state.swap_mib:>5}MiB {state.cpus}")
    return 0


def _ssh(args: argparse.Namespace) -> int:
    name, command = ssh_words(args.words)
    directory = vm_directory(_vm_name(name), args.cache_dir)
    try:
        state = VmState.read(directory)
    except ValueError:
        print(f"nodeconf node ssh: no VM called {name}; start one with: nodeconf node up {name}", file=sys.stderr)
        return 1
    if not state.is_running():
        print(f"nodeconf node ssh: VM {name} is not running (stale record)", file=sys.stderr)
        return 1
    if not command:
        known_hosts = _write_known_hosts(state)
        ssh = ["ssh", "-i", state.client_key, "-p", str(state.ssh_port), "-o", "IdentitiesOnly=yes",
               "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
               "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR", "root@127.0.0.1"]
        if shutil.which("ssh") is None:
            raise UsageError("no ssh client on this host; install openssh-client")
        os.execvp("ssh", ssh)
    target = SshTarget("root", "127.0.0.1", state.ssh_port)
    with SshTransport.connect(target, Path(state.client_key), host_key=state.host_public_key) as transport:
        result = transport.run(command, timeout=3600)
    sys.stdout.buffer.write(result.stdout)
    sys.stderr.buffer.write(result.stderr)
    return result.rc


def ssh_words(words: list[str]) -> tuple[str, list[str]]:
    """`[NAME] [-- COMMAND...]` as (name, command): a leading `--` means the default VM, not a VM called CMD."""
    if words[:1] == ["--"]:
        return DEFAULT_NAME, words[1:]
    if not words:
        return DEFAULT_NAME, []
    rest = words[1:]
    return words[0], rest[1:] if rest[:1] == ["--"] else rest


def _write_known_hosts(state: VmState) -> Path:
    """A known_hosts file in the VM directory pinning the guest's host key for the OpenSSH client (a new file renamed
    into place: a link planted there is replaced, never written through)."""
    path = Path(state.directory) / "known_hosts"
    write_atomically(path, f"[127.0.0.1]:{state.ssh_port} {state.host_public_key}\n".encode(), 0o644)
    return path
