"""`nodeconf clean`: remove what earlier, killed runs left: VMs, image-build scratch directories, orphaned qemu
processes, and with --node the enforcer's processes and cgroups on a node or nodeconf's objects on a cluster.

Source: issue 10 item 4; nodeconf/infra/vm/state.py (VM records), the enforcer's own `cleanup` command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nodeconf.errors import InputError, NodeSpecError
from nodeconf.infra.vm import paths
from nodeconf.infra.vm.cache_files import remove_vm_directory
from nodeconf.infra.vm.image import remove_leftover_builds
from nodeconf.infra.vm.state import list_states, terminate_pid, terminate_qemu, untracked_qemus
from nodeconf.nodes.base import NodeError
from nodeconf.nodes.kinds import node_kind
from nodeconf.nodes.spec import parse_node_spec


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `nodeconf clean`."""
    parser = subparsers.add_parser(
        "clean", help="remove what killed runs left (VMs, build scratch, enforcer, kube objects)",
        description="Remove what earlier, killed runs left behind: VMs whose run is gone (a VM from "
        "`nodeconf node up` is kept), orphaned qemu processes of the cache, scratch directories of killed image "
        "builds; with --node ssh://... or local also the enforcer's processes and cgroups on that node, with "
        "--node kube[:CONTEXT] the namespaces of nodeconf runs that are over (their lease lapsed; live runs, other "
        "namespaces and pods are never touched). Exit 0 when clean, 2 when something could not be removed.")
    parser.add_argument("--node", metavar="SPEC",
                        help="also clean this node: ssh://user@host?key=..., local, kube[:CONTEXT] or kind (the "
                             "clusters killed runs of this host created)")
    parser.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help="where the image and the VMs live (default: $XDG_CACHE_HOME/nodeconf)")
    parser.add_argument("-n", "--dry-run", action="store_true", help="only list what would be removed")


def _say(message: str) -> None:
    print(f"nodeconf clean: {message}")


def clean_vms(cache_dir: Path | None, dry_run: bool) -> int:
    """Stop and remove leftover VMs and orphaned qemu processes; return how many were found."""
    found = 0
    for state in list_states(cache_dir):
        reason = state.leftover_reason()
        if not reason:
            if state.persistent:
                _say(f"kept VM {state.name} (from nodeconf node up; stop it with: nodeconf node down {state.name})")
            continue
        found += 1
        if dry_run:
            _say(f"VM {state.name} (pid {state.pid}): {reason}")
            continue
        terminate_pid(state.pid, Path(state.directory))
        problem = remove_vm_directory(Path(state.directory), cache_dir)
        _say(f"VM {state.name} (pid {state.pid}): {reason}; " + (f"not removed: {problem}" if problem else "removed"))
    for pid in untracked_qemus(cache_dir):
        found += 1
        _say(f"orphaned qemu pid {pid} of {paths.vms_dir(cache_dir)}" + ("" if dry_run else "; killed"))
        if not dry_run:
            terminate_qemu(pid, cache_dir)
    for name in remove_leftover_builds(cache_dir, dry_run):
        found += 1
        _say(f"image-build scratch {name}: its build is gone" + ("" if dry_run else "; removed"))
    return found


def report_kind_clusters() -> int:
    """Name the kind clusters `nodeconf-*` and how to delete them; never deletes one here (a name proves no
    ownership: keep=1 kept it, another run may use it, or someone chose the name; `--node kind` deletes those this
    host's runs recorded and left). Return how many."""
    from nodeconf.infra.kind.provision import nodeconf_clusters
    from nodeconf.infra.kind.records import read_records

    try:
        names = nodeconf_clusters()
    except NodeError as err:
        print(f"nodeconf clean: kind clusters not listed: {err}", file=sys.stderr)
        return 0
    recorded = {record.name for record in read_records()}
    for name in names:
        if name in recorded:
            _say(f"kind cluster {name} (a nodeconf run of this host created it): `nodeconf clean --node kind` "
                 "deletes it once that run is gone")
        else:
            _say(f"kind cluster {name} (a --node kind run kept it, or another's): not deleted; delete it with "
                 f"`kind delete cluster --name {name}`")
    return len(names)


def clean_node(text: str, dry_run: bool) -> None:
    """Clean one node as its kind's record says (nodeconf/nodes/kinds.py NodeKind.clean): the enforcer's leftovers
    (ssh, local), finished runs' namespaces (kube), killed runs' clusters (kind); a VM's are the cache's."""
    try:
        spec = parse_node_spec(text)
    except NodeSpecError as err:
        raise InputError(str(err), field="--node") from None
    for line in node_kind(spec.scheme).clean(spec, dry_run):
        _say(line)


def run(args: argparse.Namespace) -> int:
    """Clean the VM cache, then the node if one is given; 0 when done, 2 on an error."""
    found = clean_vms(args.cache_dir, args.dry_run) + report_kind_clusters()
    if args.node:
        try:
            clean_node(args.node, args.dry_run)
        except InputError:
            raise
        except (NodeError, OSError) as err:
            print(f"nodeconf clean: {args.node}: {err}", file=sys.stderr)
            return 2
        except Exception as err:  # the kube client's and paramiko's own errors: one line, exit 2
            print(f"nodeconf clean: {args.node}: {type(err).__name__}: {err}", file=sys.stderr)
            return 2
    elif not found:
        _say("nothing to clean")
    return 0
