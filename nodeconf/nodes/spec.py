"""The node spec: one string (`vm`, `local`, `ssh://user@host[:port]?key=…`, `kube[:context]`, `kind[:config]`),
parsed once, fully: the scheme, name= and the options' syntax here, each kind's target and options by its record
(nodeconf/nodes/kinds.py).

Source: issue 12 (one spec, parsed once, a bad one is one line and exit 2); issue 10 (node options are data, not
shell; keys only, nothing secret echoed); testinfra `parse_hostspec` (STYLE.md "For the node side").
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Self
from urllib.parse import quote, unquote

from nodeconf.errors import NodeSpecError
from nodeconf.node_variant import Variant
from nodeconf.nodes.ssh_login import SshLogin, redact

DEFAULT_SPEC = "vm"
# scheme -> the `module:RECORD` of its node kind (nodeconf/nodes/kinds.py NodeKind), in the order usage lists them;
# imported only when its scheme is used.
KINDS: Mapping[str, str] = {
    "vm": "nodeconf.infra.vm.node_kind:VM",
    "local": "nodeconf.nodes.enforced.node_kinds:LOCAL",
    "ssh": "nodeconf.nodes.enforced.node_kinds:SSH",
    "kube": "nodeconf.nodes.kube.node_kind:KUBE",
    "kind": "nodeconf.infra.kind.node_kind:KIND",
}
# kube: node= pins one node; nodes=all|SELECTOR runs on every Ready Linux node a label selector matches (at most
# max=, default MAX_FANOUT), expanded by `nodeconf run` (nodeconf/nodes/kube/fanout.py).
NODE_OPTION, NODES_OPTION, MAX_OPTION = "node", "nodes", "max"
MAX_FANOUT = 20
# name= gives the node its name in check ids and reports (two nodes of one run need distinct names).
NAME_OPTION = "name"
ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


@dataclass(frozen=True)
class VmSize:
    """The reference VM from `vm?memory=SIZE&swap=SIZE&cpus=N&debian=&init=&runtime=` (None: the VM's default)."""

    memory_mib: int | None = None
    swap_mib: int | None = None
    cpus: int | None = None
    variant: Variant = field(default_factory=Variant)
    # A vendor disk image on this machine, booted as it ships (issue 14); uefi None: detected from the image.
    image: Path | None = None
    uefi: bool | None = None


@dataclass(frozen=True)
class EnforcerOptions:
    """How the bundled enforcer runs on vm, local and ssh nodes (None: the driver's default)."""

    faults: tuple[str, ...] = ()
    backoff: float | None = None
    cpu_weight_formula: str | None = None
    cgroup_root: str | None = None
    remote_dir: str | None = None
    python: str | None = None
    # runtime= on local, ssh:// and vm?image=: cri or direct (runtime_choice.py); a reference VM's is its variant's.
    runtime: str | None = None


@dataclass(frozen=True)
class SpecOptions:
    """What a node kind's record parsed from a spec (its target and options, beyond name=): a frozen dataclass of the
    record's own that subclasses this, carried in `NodeSpec.own` and read back typed with `TheirClass.of(spec)`, so
    a new kind adds no field to NodeSpec."""

    @classmethod
    def of(cls, spec: NodeSpec) -> Self:
        """The spec's own parsed options, of this class; TypeError for a spec of a kind that parses other ones."""
        if not isinstance(spec.own, cls):
            raise TypeError(f"{spec.scheme} spec {spec.display!r} carries no {cls.__name__}")
        return spec.own


@dataclass(frozen=True)
class NodeSpec:
    """A parsed node spec; `display` (also `str()`) is its canonical text, which holds no secret. `own` holds what
    its kind's record parsed (a SpecOptions of the record's); ssh, vm and enforcer are the fields of the kinds that
    came before it."""

    scheme: str
    options: tuple[tuple[str, str], ...] = ()
    ssh: SshLogin | None = None
    vm: VmSize = field(default_factory=VmSize)
    enforcer: EnforcerOptions = field(default_factory=EnforcerOptions)
    own: SpecOptions | None = None

    @property
    def written(self) -> str:
        """Its canonical text before its options (`kube:CONTEXT`), as its kind's record writes it."""
        return spec_reader(self.scheme).written(self)

    @property
    def display(self) -> str:
        query = "&".join(f"{name}={quote(value, safe='/:=,@+.-_')}" for name, value in self.options)
        return f"{self.written}?{query}" if query else self.written

    @property
    def name(self) -> str:
        """A short id for test ids and file names: the name= option, else its kind's (`vm`, `local`,
        `ssh-HOST-PORT`, `kube`, `kube-CONTEXT`, `kind-CONFIG`)."""
        given = self.option(NAME_OPTION)
        if given is not None:
            return given
        return ID_UNSAFE.sub("-", spec_reader(self.scheme).short_name(self)).strip("-") or self.scheme

    def option(self, name: str) -> str | None:
        """The text of a single-valued option, None when absent."""
        return next((value for key, value in self.options if key == name), None)

    def __str__(self) -> str:
        return self.display

    def __repr__(self) -> str:
        return f"NodeSpec({self.display!r})"


class SpecReader(Protocol):
    """What a spec asks its node kind's record (nodeconf/nodes/kinds.py NodeKind): how it is written, which
    options it takes, its spec from them, its short name and the machine it runs on."""

    usage: str
    target: str  # what follows the scheme: "" nothing, ":" an optional target, "://" a required one
    options: tuple[str, ...]
    repeatable: frozenset[str]

    def parse(self, target: str | None, options: tuple[tuple[str, str], ...], shown: str) -> NodeSpec: ...

    def written(self, spec: NodeSpec) -> str: ...

    def short_name(self, spec: NodeSpec) -> str: ...

    def machine(self, spec: NodeSpec) -> str | None: ...


def spec_reader(scheme: str) -> SpecReader:
    """The record of a scheme of KINDS, imported now."""
    module, _, name = KINDS[scheme].partition(":")
    found: SpecReader = getattr(importlib.import_module(module), name)
    return found


def expected() -> str:
    """How each kind's spec is written, for messages."""
    usages = [spec_reader(scheme).usage for scheme in KINDS]
    return f"{', '.join(usages[:-1])} or {usages[-1]}"


def parse_node_spec(text: str) -> NodeSpec:
    """Parse and validate a node spec: scheme, target and every option with its range; NodeSpecError otherwise."""
    shown = redact(text)
    base, _, query = text.partition("?")
    scheme = base.partition(":")[0]
    rest = base[len(scheme):]
    reader = spec_reader(scheme) if scheme in KINDS else None
    if reader is None or not _fits(rest, reader.target):
        raise NodeSpecError(f"unknown node spec {shown!r} (expected {expected()})")
    if shown != text:
        raise NodeSpecError(f"node spec {shown!r}: passwords are not accepted (keys only): "
                            "give ssh://user@host[:port]?key=FILE")
    options = _options(query, scheme, reader, shown)
    single = dict(options)
    if NAME_OPTION in single:
        check_node_name(single[NAME_OPTION], f"node spec {shown!r}: name=")
    return reader.parse(rest[len(reader.target):] if rest else None, options, shown)


def _fits(rest: str, syntax: str) -> bool:
    """The text after the scheme fits its kind's target: none, an optional `:TARGET` or a required `://TARGET`."""
    if not rest:
        return syntax != "://"
    return bool(syntax) and rest.startswith(syntax)


def check_node_name(name: str, where: str) -> str:
    """A node name fit for check ids and file names (letters, digits, `._-`, at most 63); NodeSpecError otherwise."""
    if not NODE_NAME.fullmatch(name):
        raise NodeSpecError(f"{where} must be 1-63 letters, digits and ._- starting with a letter or digit, "
                            f"got {name!r}")
    return name


def chosen_specs(given: Sequence[NodeSpec] | None) -> list[NodeSpec]:
    """The specs of a run's `--node` options (given once or more), or the default `vm`."""
    return list(given) if given else [parse_node_spec(DEFAULT_SPEC)]


def machine(spec: NodeSpec) -> str | None:
    """The machine a spec runs on, as far as the spec tells (`local`, `ssh HOST:PORT`); None for a VM of its own
    and for clusters."""
    return spec_reader(spec.scheme).machine(spec)


def refuse_shared_machines(specs: Sequence[NodeSpec]) -> None:
    """NodeSpecError when two specs name one machine: its enforcer, state directory and cgroups are one per
    machine, whatever dir= says (two `local`, or ssh to one host and port)."""
    seen: dict[str, NodeSpec] = {}
    for spec in specs:
        where = machine(spec)
        if where is None:
            continue
        if where in seen:
            raise NodeSpecError(f"nodes {seen[where].name} and {spec.name} are the same machine ({where}): one "
                                "nodeconf run per node (its enforcer, state and cgroups are one per machine)")
        seen[where] = spec


def declare_node_option(add_option: Callable[..., object]) -> None:
    """Declare `--node` (repeatable, parsed by parse_node_spec) with `nodeconf run`'s add_argument or pytest's
    addoption: one declaration for both."""
    add_option("--node", action="append", type=node_spec_argument, metavar="SPEC",
               help=f"node under test, repeatable: {expected()} (default: {DEFAULT_SPEC}, the reference VM); options "
               "after ?, e.g. vm?memory=6Gi&swap=2Gi (a bare number is MiB), vm?fault=cpu-weight-formula=linear, or "
               "kube:CONTEXT?nodes=all|SELECTOR for every Ready Linux node a label selector matches")


def node_spec_argument(text: str) -> NodeSpec:
    """parse_node_spec as an argparse `type=`: a bad spec becomes argparse's one-line usage error (exit 2)."""
    try:
        return parse_node_spec(text)
    except NodeSpecError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _options(query: str, scheme: str, reader: SpecReader, shown: str) -> tuple[tuple[str, str], ...]:
    """The query's (name, value) pairs in order; unknown, valueless and repeated options are refused."""
    allowed = (*reader.options, NAME_OPTION)
    pairs: list[tuple[str, str]] = []
    for item in query.split("&") if query else ():
        name, equals, value = item.partition("=")
        if name not in allowed:
            raise NodeSpecError(f"node spec {shown!r}: unknown option {name!r} "
                                f"(allowed for {scheme}: {', '.join(allowed) or 'none'})")
        if not equals or not value:
            raise NodeSpecError(f"node spec {shown!r}: option {name!r} needs a value ({name}=...)")
        if name not in reader.repeatable and any(name == seen for seen, _ in pairs):
            raise NodeSpecError(f"node spec {shown!r}: option {name!r} is given more than once")
        pairs.append((name, unquote(value)))
    return tuple(pairs)


def unexpanded(spec: NodeSpec) -> str | None:
    """Why the spec cannot be opened as one node (a whole-cluster spec `nodeconf run` did not expand), else None."""
    if spec.option(NODES_OPTION) is None:
        return None
    return (f"{spec}: {NODES_OPTION}= is expanded by `nodeconf run` into one --node per cluster node; with pytest "
            f"give --node 'kube:CONTEXT?{NODE_OPTION}=NAME' for each node (and -n N)")


def whole_number(options: Mapping[str, str], name: str, low: int, high: int | None, why: str,
                 shown: str) -> int | None:
    """The option as a whole number in low..high (no bound when high is None), None when absent; NodeSpecError
    naming the bound and `why` otherwise."""
    value = options.get(name)
    if value is None:
        return None
    if not value.isdigit() or int(value) < low or (high is not None and int(value) > high):
        bound = f"{low}-{high}" if high is not None else f">= {low}"
        raise NodeSpecError(f"node spec {shown!r}: {name} must be a whole number {bound}{why}, got {value!r}")
    return int(value)


def zero_or_one(options: Mapping[str, str], name: str, shown: str) -> bool:
    """A 0|1 option (present) as a bool; NodeSpecError otherwise."""
    if options[name] not in ("0", "1"):
        raise NodeSpecError(f"node spec {shown!r}: {name} must be 0 or 1, got {options[name]!r}")
    return options[name] == "1"
