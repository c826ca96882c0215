"""The nodes of one run: `--node` given once or more, or a `--matrix` file (a YAML list of nodes), each with a name
unique in the run, and optionally its own kubelet configuration and profile.

Source: issue 14 items 1 and 5 (a matrix of nodes; an unknown key or a duplicate name is one line and exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from nodeconf.errors import InputError, NodeSpecError
from nodeconf.nodes.spec import (
    NAME_OPTION,
    NODE_OPTION,
    NODES_OPTION,
    NodeSpec,
    check_node_name,
    chosen_specs,
    parse_node_spec,
    refuse_shared_machines,
)
from nodeconf.run.options import profile_problem

MATRIX_KEYS = ("node", "kubeletConfig", "profile", "name")
MAX_MATRIX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class RunNode:
    """One node of a run as given: its spec (whose `name` is unique in the run), and its own kubelet config and
    profile (None: the run's --kubelet-config / --profile); run/settings.py resolves them."""

    spec: NodeSpec
    kubelet_config: Path | None = None
    profile: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def __str__(self) -> str:
        return self.spec.display

    def __repr__(self) -> str:  # Allure shows fixture parameters by repr
        return self.spec.display


def named(spec: NodeSpec, name: str) -> NodeSpec:
    """The spec with name= set (replacing any given in the spec text)."""
    options = tuple((key, value) for key, value in spec.options if key != NAME_OPTION)
    return replace(spec, options=(*options, (NAME_OPTION, name)))


def _entry(raw: object, index: int, source: str, base: Path) -> RunNode:
    where = f"{source}: node {index + 1}"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: must be a mapping with node: SPEC (and kubeletConfig, profile, name)")
    unknown = [str(key) for key in raw if key not in MATRIX_KEYS]
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(MATRIX_KEYS)})")
    text = raw.get("node")
    if not isinstance(text, str) or not text:
        raise InputError(f"{where}: needs node: SPEC (a string such as vm or ssh://root@host?key=FILE)")
    try:
        spec = parse_node_spec(text)
        name = raw.get("name")
        if name is not None:
            spec = named(spec, check_node_name(str(name), f"{where}: name"))
    except NodeSpecError as err:
        raise InputError(f"{where}: {err}") from None
    if spec.option(NODES_OPTION) is not None:
        raise InputError(f"{where}: {NODES_OPTION}= (a whole-cluster run) goes with --node, not in a matrix file; "
                         f"list the cluster's nodes as kube:CONTEXT?{NODE_OPTION}=NAME")
    profile = raw.get("profile")
    problem = None if profile is None else profile_problem(str(profile))
    if problem:
        raise InputError(f"{where}: profile {problem}")
    config = raw.get("kubeletConfig")
    config_path = None
    if config is not None:
        config_path = base / str(config)
        if not config_path.is_file():
            raise InputError(f"{where}: kubeletConfig {config} is not a file")
    return RunNode(spec, config_path, None if profile is None else str(profile))


def parse_matrix(path: Path) -> list[RunNode]:
    """The nodes a matrix file lists (kubeletConfig paths relative to the file); InputError naming the problem."""
    try:
        data = path.read_bytes()[: MAX_MATRIX_BYTES + 1]
    except OSError as err:
        raise InputError(f"cannot read the matrix file ({err.strerror})", source=str(path)) from None
    if len(data) > MAX_MATRIX_BYTES:
        raise InputError(f"a matrix file is at most {MAX_MATRIX_BYTES} bytes", source=str(path))
    try:
        raw = yaml.safe_load(data)
    except yaml.YAMLError as err:
        raise InputError(f"not YAML ({str(err).splitlines()[0]})", source=str(path)) from None
    if not isinstance(raw, list) or not raw:
        raise InputError("a matrix file is a non-empty YAML list of nodes ({node: SPEC, ...})", source=str(path))
    return unique([_entry(item, index, str(path), path.parent) for index, item in enumerate(raw)])


def unique(nodes: Sequence[RunNode]) -> list[RunNode]:
    """The nodes when their names can tell their checks apart; InputError for a duplicate name or for a name that
    is another's prefix before `-` (`vm` and `vm-b`: check ids `test_x[vm-b-…]` would be ambiguous)."""
    names = [node.name for node in nodes]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise InputError(f"two nodes are named {name!r}: give each its own name (vm?name=b, or name: in a "
                             "matrix file)", field="--node")
    for name in names:
        for other in names:
            if other.startswith(name + "-"):
                raise InputError(f"node names {name!r} and {other!r}: one is the other's prefix before '-', which "
                                 "check ids cannot tell apart; rename one", field="--node")
    return list(nodes)


def share_host_cpus(nodes: Sequence[RunNode], host_cpus: int) -> list[RunNode]:
    """The nodes with each local VM that has no cpus= given sized to its share of this host's cores (at least 1)
    when several local VMs run at once: one xdist worker per node boots them together, and emulated vCPUs beyond
    the host's cores only queue for them (benchmarks/matrix_bench.py: 2 VMs of 2 vCPUs on 2 cores gave a parallel
    to serial ratio of 0.87, of 1 vCPU 0.57). The cpus= added shows in the node's spec and facts."""
    local = [node for node in nodes if node.spec.scheme == "vm"]
    if len(local) < 2:
        return list(nodes)
    cpus = max(1, host_cpus // len(local))
    return [replace(node, spec=_with_cpus(node.spec, cpus))
            if node.spec.scheme == "vm" and node.spec.vm.cpus is None else node for node in nodes]


def _with_cpus(spec: NodeSpec, cpus: int) -> NodeSpec:
    return replace(spec, options=(*spec.options, ("cpus", str(cpus))), vm=replace(spec.vm, cpus=cpus))


def run_nodes(specs: Sequence[NodeSpec] | None, matrix: Path | None) -> list[RunNode]:
    """The run's nodes: from the matrix file, else the --node specs (default vm), local VMs sharing the host's cores;
    InputError when both are given or the names clash."""
    if matrix is not None:
        if specs:
            raise InputError("give the nodes with --node or with --matrix, not both", field="--matrix")
        nodes = parse_matrix(matrix)
    else:
        nodes = unique([RunNode(spec) for spec in chosen_specs(specs)])
    try:
        refuse_shared_machines([node.spec for node in nodes])
    except NodeSpecError as err:
        raise InputError(str(err), field="--node") from None
    return share_host_cpus(nodes, os.cpu_count() or 1)

