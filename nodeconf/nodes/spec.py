"""The node spec: one string (`vm`, `local`, `ssh://user@host[:port]?key=…`, `kube[:context]`, `kind[:config]`),
parsed once, fully.

Source: issue 12 (one spec, parsed once, a bad one is one line and exit 2); issue 10 (node options are data, not
shell; keys only, nothing secret echoed); testinfra `parse_hostspec` (STYLE.md "For the node side").
"""

from __future__ import annotations

import argparse
import math
import os
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from nodeconf.errors import NodeSpecError
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS
from nodeconf.node_variant import VARIANT_OPTIONS, Variant, parse_variant
from nodeconf.nodes.ssh_login import SshLogin, readable_file, redact, ssh_login
from nodeconf.quantity import INT64_MAX, Quantity, QuantityError, beyond_int64

SCHEMES = ("vm", "local", "ssh", "kube", "kind")
DEFAULT_SPEC = "vm"
EXPECTED = "vm, local, ssh://user@host[:port]?key=FILE&known_hosts=FILE, kube[:CONTEXT] or kind[:CONFIG]"
# Options an enforced node (vm, local, ssh) takes in the query string; only fault= may be given more than once.
ENFORCER_OPTIONS = ("fault", "backoff", "cpu-weight-formula", "root", "dir", "python")
# runtime= on a node with a runtime of its own (local, ssh://, vm?image=): cri|direct (runtime_choice.py).
RUNTIME_OPTION = "runtime"
# ssh:// (nodeconf/nodes/ssh_login.py): key=, pinned host keys, the ssh config, bastions, sudo=0|1.
SSH_OPTIONS = ("key", "known_hosts", "host_key", "config", "jump", "sudo")
VM_OPTIONS = ("memory", "swap", "cpus", *VARIANT_OPTIONS, "image", "uefi")
KIND_OPTIONS = ("keep",)
# kube: node= pins one node; nodes=all|SELECTOR runs on every Ready Linux node a label selector matches (at most
# max=, default MAX_FANOUT), expanded by `nodeconf run` (nodeconf/nodes/kube/fanout.py).
NODE_OPTION, NODES_OPTION, MAX_OPTION = "node", "nodes", "max"
KUBE_OPTIONS = (NODE_OPTION, NODES_OPTION, MAX_OPTION)
MAX_FANOUT, MAX_FANOUT_CEILING = 20, 200
# name= gives the node its name in check ids and reports (two nodes of one run need distinct names).
NAME_OPTION = "name"
ALLOWED_OPTIONS = {
    "vm": (*VM_OPTIONS, *ENFORCER_OPTIONS, NAME_OPTION), "local": (*ENFORCER_OPTIONS, RUNTIME_OPTION, NAME_OPTION),
    "ssh": (*SSH_OPTIONS, *ENFORCER_OPTIONS, RUNTIME_OPTION, NAME_OPTION), "kube": (*KUBE_OPTIONS, NAME_OPTION),
    "kind": (*KIND_OPTIONS, NAME_OPTION),
}
REPEATABLE = frozenset({"fault"})
ENFORCED = frozenset({"vm", "local", "ssh"})  # the schemes run by the bundled enforcer
MIN_VM_MEMORY_MIB = 256
MIB = 2**20
MAX_MIB_DIGITS = 13  # 2^63 bytes are 8,796,093,022,208 MiB
CGROUP_MOUNT = "/sys/fs/cgroup"
# Paths and programs on the node: letters, digits and . _ + @ - only (no shell metacharacters, no `=` that `env`
# would take for a variable, no spaces).
NODE_PATH = re.compile(r"(/[A-Za-z0-9._+@-]+)+")
PROGRAM = re.compile(r"[A-Za-z0-9_+@-][A-Za-z0-9._+@-]*")
SECONDS = re.compile(r"\d+(\.\d+)?")
KIND_CONFIG = re.compile(r"[a-z0-9][a-z0-9.-]*")  # a file name of nodeconf/infra/kind/ without .yaml
ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
# A Kubernetes Node's name: a DNS-1123 subdomain (apimachinery validation.IsDNS1123Subdomain), at most 253.
KUBE_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
MAX_SELECTOR = 1024


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
class NodeSpec:
    """A parsed node spec; `display` (also `str()`) is its canonical text, which holds no secret."""

    scheme: str
    options: tuple[tuple[str, str], ...] = ()
    ssh: SshLogin | None = None
    context: str | None = None
    kind_config: str | None = None
    vm: VmSize = field(default_factory=VmSize)
    enforcer: EnforcerOptions = field(default_factory=EnforcerOptions)

    @property
    def display(self) -> str:
        if self.ssh is not None:
            base = f"ssh://{self.ssh.display}"
        elif self.scheme == "kube" and self.context is not None:
            base = f"kube:{self.context}"
        elif self.scheme == "kind" and self.kind_config is not None:
            base = f"kind:{self.kind_config}"
        else:
            base = self.scheme
        query = "&".join(f"{name}={quote(value, safe='/:=,@+.-_')}" for name, value in self.options)
        return f"{base}?{query}" if query else base

    @property
    def name(self) -> str:
        """A short id for test ids and file names: the name= option, else `vm`, `local`, `ssh-HOST-PORT`, `kube`,
        `kube-CONTEXT`."""
        given = self.option(NAME_OPTION)
        if given is not None:
            return given
        if self.ssh is not None:
            raw = f"ssh-{self.ssh.alias or self.ssh.target.host}-{self.ssh.target.port}"
        elif self.context is not None:
            raw = f"kube-{self.context}"
        elif self.kind_config is not None:
            raw = f"kind-{self.kind_config}"
        else:
            raw = self.scheme
        return ID_UNSAFE.sub("-", raw).strip("-") or self.scheme

    def option(self, name: str) -> str | None:
        """The text of a single-valued option, None when absent."""
        return next((value for key, value in self.options if key == name), None)

    def __str__(self) -> str:
        return self.display

    def __repr__(self) -> str:
        return f"NodeSpec({self.display!r})"


def parse_node_spec(text: str) -> NodeSpec:
    """Parse and validate a node spec: scheme, target and every option with its range; NodeSpecError otherwise."""
    shown = redact(text)
    base, _, query = text.partition("?")
    if base.startswith("ssh://"):
        scheme = "ssh"
    elif base == "kube" or base.startswith("kube:"):
        scheme = "kube"
    elif base == "kind" or base.startswith("kind:"):
        scheme = "kind"
    elif base in ("vm", "local"):
        scheme = base
    else:
        raise NodeSpecError(f"unknown node spec {shown!r} (expected {EXPECTED})")
    if shown != text:
        raise NodeSpecError(f"node spec {shown!r}: passwords are not accepted (keys only): "
                            "give ssh://user@host[:port]?key=FILE")
    options = _options(query, scheme, shown)
    single = dict(options)
    if NAME_OPTION in single:
        check_node_name(single[NAME_OPTION], f"node spec {shown!r}: name=")
    if scheme == "kube":
        _kube_selection(single, shown)
    return NodeSpec(
        scheme, options,
        ssh=ssh_login(base[len("ssh://"):], single, shown) if scheme == "ssh" else None,
        context=_kube_context(base, shown) if scheme == "kube" else None,
        kind_config=_kind_config(base, single, shown) if scheme == "kind" else None,
        vm=_vm_size(single, shown) if scheme == "vm" else VmSize(),
        enforcer=_enforcer_options(options, scheme, shown) if scheme in ENFORCED else EnforcerOptions(),
    )


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
    """The machine an enforced spec runs on, as far as the spec tells (`local`, `ssh HOST:PORT`); None for a VM of
    its own and for clusters."""
    if spec.scheme == "local":
        return "local"
    if spec.ssh is not None:
        return f"ssh {spec.ssh.target.host.lower()}:{spec.ssh.target.port}"
    return None


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
               help=f"node under test, repeatable: {EXPECTED} (default: {DEFAULT_SPEC}, the reference VM); options "
               "after ?, e.g. vm?memory=6Gi&swap=2Gi (a bare number is MiB), vm?fault=cpu-weight-formula=linear, or "
               "kube:CONTEXT?nodes=all|SELECTOR for every Ready Linux node a label selector matches")


def node_spec_argument(text: str) -> NodeSpec:
    """parse_node_spec as an argparse `type=`: a bad spec becomes argparse's one-line usage error (exit 2)."""
    try:
        return parse_node_spec(text)
    except NodeSpecError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _options(query: str, scheme: str, shown: str) -> tuple[tuple[str, str], ...]:
    """The query's (name, value) pairs in order; unknown, valueless and repeated options are refused."""
    allowed = ALLOWED_OPTIONS[scheme]
    pairs: list[tuple[str, str]] = []
    for item in query.split("&") if query else ():
        name, equals, value = item.partition("=")
        if name not in allowed:
            raise NodeSpecError(f"node spec {shown!r}: unknown option {name!r} "
                                f"(allowed for {scheme}: {', '.join(allowed) or 'none'})")
        if not equals or not value:
            raise NodeSpecError(f"node spec {shown!r}: option {name!r} needs a value ({name}=...)")
        if name not in REPEATABLE and any(name == seen for seen, _ in pairs):
            raise NodeSpecError(f"node spec {shown!r}: option {name!r} is given more than once")
        pairs.append((name, unquote(value)))
    return tuple(pairs)


def unexpanded(spec: NodeSpec) -> str | None:
    """Why the spec cannot be opened as one node (a whole-cluster spec `nodeconf run` did not expand), else None."""
    if spec.option(NODES_OPTION) is None:
        return None
    return (f"{spec}: {NODES_OPTION}= is expanded by `nodeconf run` into one --node per cluster node; with pytest "
            f"give --node 'kube:CONTEXT?{NODE_OPTION}=NAME' for each node (and -n N)")


def _kube_selection(options: dict[str, str], shown: str) -> None:
    """node= a Node name, or nodes= a label selector (or `all`) with max= 1..MAX_FANOUT_CEILING, not both."""
    node, nodes = options.get(NODE_OPTION), options.get(NODES_OPTION)
    if node is not None and nodes is not None:
        raise NodeSpecError(f"node spec {shown!r}: node= (one node) and nodes= (several) do not go together")
    if node is not None and (len(node) > 253 or not KUBE_NODE_NAME.fullmatch(node)):
        raise NodeSpecError(f"node spec {shown!r}: node= must be a Kubernetes node name (lower case letters, "
                            f"digits, '-', '.'), got {node!r}")
    if nodes is not None and (len(nodes) > MAX_SELECTOR or not nodes.isprintable()):
        raise NodeSpecError(f"node spec {shown!r}: nodes= must be all or a label selector (key, key=value, "
                            f"key!=value, ... joined by ',') of at most {MAX_SELECTOR} printable characters")
    if MAX_OPTION in options and nodes is None:
        raise NodeSpecError(f"node spec {shown!r}: max= goes with nodes=")
    _whole_number(options, MAX_OPTION, 1, MAX_FANOUT_CEILING, " (nodes at most)", shown)


def _kube_context(base: str, shown: str) -> str | None:
    """None for `kube` (the kubeconfig's current context); the context after `kube:`, which must not be empty."""
    if base == "kube":
        return None
    context = base[len("kube:"):]
    if not context or not context.isprintable() or any(c.isspace() for c in context):
        raise NodeSpecError(f"node spec {shown!r}: kube: needs a context name after the colon "
                            "(or plain kube for the current context)")
    return context


def _kind_config(base: str, options: dict[str, str], shown: str) -> str | None:
    """None for `kind` (the config matching --kubelet-config); the nodeconf/infra/kind/ file name after `kind:`; keep=0|1."""
    if options.get("keep", "0") not in ("0", "1"):
        raise NodeSpecError(f"node spec {shown!r}: keep must be 0 or 1, got {options['keep']!r}")
    if base == "kind":
        return None
    config = base[len("kind:"):]
    if not KIND_CONFIG.fullmatch(config):
        raise NodeSpecError(f"node spec {shown!r}: kind: needs a config name of nodeconf/infra/kind/ after the colon "
                            "(lower case letters, digits, '.', '-'), or plain kind")
    return config


def _whole_number(options: dict[str, str], name: str, low: int, high: int | None, why: str,
                  shown: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    if not value.isdigit() or int(value) < low or (high is not None and int(value) > high):
        bound = f"{low}-{high}" if high is not None else f">= {low}"
        raise NodeSpecError(f"node spec {shown!r}: {name} must be a whole number {bound}{why}, got {value!r}")
    return int(value)


def size_mib(text: str, low: int) -> int | None:
    """A size in MiB: a quantity as in a pod spec (6Gi, 512Mi, 6442450944), or a bare number of MiB as before
    quantities were accepted (6144); None unless it is a whole number of MiB of at least `low` (qemu takes MiB)."""
    if text.isascii() and text.isdigit():
        if len(text) > MAX_MIB_DIGITS:  # beyond int64 bytes, and int() refuses 4,300 digits
            return None
        size = int(text) * MIB
    else:
        try:
            quantity = Quantity.parse(text)
        except QuantityError:
            return None
        if beyond_int64(quantity) or quantity.amount % MIB:
            return None
        size = int(quantity.amount)
    return size // MIB if low * MIB <= size <= INT64_MAX else None


def size_expected(name: str, low: int) -> str:
    """What size_mib takes, as an error message says it."""
    return f"{name} must be a quantity (6Gi) or a whole number of MiB (6144), at least {low}Mi"


def size_argument(name: str, low: int) -> Callable[[str], int]:
    """size_mib as an argparse `type=` for option `name`: a bad size is argparse's one-line usage error."""

    def convert(text: str) -> int:
        size = size_mib(text, low)
        if size is None:
            raise argparse.ArgumentTypeError(f"{size_expected(name, low)}, got {text!r}")
        return size

    return convert


def _mebibytes(options: dict[str, str], name: str, low: int, shown: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    size = size_mib(value, low)
    if size is None:
        raise NodeSpecError(f"node spec {shown!r}: {size_expected(name, low)}, got {value!r}")
    return size


def _vm_size(options: dict[str, str], shown: str) -> VmSize:
    """memory ≥ 256 MiB (the smallest the reference VM boots with), swap ≥ 0 MiB (both quantities, a bare number
    MiB), 1 ≤ cpus ≤ this host's cpus
    (more vCPUs than host cpus would skew the CPU throttling checks)."""
    host_cpus = os.cpu_count() or 1
    return VmSize(
        memory_mib=_mebibytes(options, "memory", MIN_VM_MEMORY_MIB, shown),
        swap_mib=_mebibytes(options, "swap", 0, shown),
        cpus=_whole_number(options, "cpus", 1, host_cpus, f" (this host has {host_cpus})", shown),
        variant=_variant(options, shown),
        image=_image(options, shown),
        uefi=None if "uefi" not in options else _zero_or_one(options, "uefi", shown),
    )


def _image(options: dict[str, str], shown: str) -> Path | None:
    """image=PATH: a readable file here (its format is probed before the run); not with a variant's layers."""
    if "image" not in options:
        if "uefi" in options:
            raise NodeSpecError(f"node spec {shown!r}: uefi= goes with image=PATH")
        return None
    layers = sorted(set(options) & set(VARIANT_OPTIONS) - {RUNTIME_OPTION})
    if layers:
        raise NodeSpecError(f"node spec {shown!r}: image= brings its own layers; {layers[0]}= cannot go with it")
    return readable_file("image", options["image"], shown)


def _zero_or_one(options: dict[str, str], name: str, shown: str) -> bool:
    if options[name] not in ("0", "1"):
        raise NodeSpecError(f"node spec {shown!r}: {name} must be 0 or 1, got {options[name]!r}")
    return options[name] == "1"


def _variant(options: dict[str, str], shown: str) -> Variant:
    """debian=, init=, runtime=: the reference node's layers (issue 13), checked before anything is built; a vendor
    image brings its own (its runtime= chooses whether its own runtime is used)."""
    if "image" in options:
        return Variant()
    try:
        return parse_variant(options)
    except ValueError as err:
        raise NodeSpecError(f"node spec {shown!r}: {err}") from None


def _node_path(name: str, value: str, shown: str) -> str:
    """An absolute, normalized path of plain characters (it is data on the node, never shell)."""
    if not NODE_PATH.fullmatch(value) or posixpath.normpath(value) != value or ".." in value.split("/"):
        raise NodeSpecError(f"node spec {shown!r}: {name}= must be an absolute, normalized path of letters, "
                            f"digits and ._+@- without .., got {value!r}")
    return value


def _enforcer_options(options: tuple[tuple[str, str], ...], scheme: str, shown: str) -> EnforcerOptions:
    from nodeconf.enforcer.lifecycle import Faults

    single = dict(options)
    faults = tuple(value for name, value in options if name == "fault")
    try:
        Faults.parse(faults)
    except ValueError as err:
        raise NodeSpecError(f"node spec {shown!r}: {err}") from None
    backoff = single.get("backoff")
    if backoff is not None and not (SECONDS.fullmatch(backoff) and math.isfinite(float(backoff))):
        raise NodeSpecError(f"node spec {shown!r}: backoff must be seconds (a finite number >= 0), got {backoff!r}")
    formula = single.get("cpu-weight-formula")
    if formula is not None and formula not in CPU_WEIGHT_FORMULAS:
        raise NodeSpecError(f"node spec {shown!r}: cpu-weight-formula must be one of "
                            f"{', '.join(CPU_WEIGHT_FORMULAS)}, got {formula!r}")
    return EnforcerOptions(
        faults=faults,
        backoff=float(backoff) if backoff is not None else None,
        cpu_weight_formula=formula,
        cgroup_root=_cgroup_root(single.get("root"), shown),
        remote_dir=_work_dir(single.get("dir"), scheme, shown),
        python=_python(single.get("python"), scheme, shown),
        runtime=None if scheme == "vm" and "image" not in single else _own_runtime(single.get(RUNTIME_OPTION), shown),
    )


def _own_runtime(value: str | None, shown: str) -> str | None:
    """runtime= of a node with a runtime of its own: one of runtime_choice.CHOICES (None when absent)."""
    from nodeconf.nodes.enforced.runtime_choice import CHOICES

    if value is not None and value not in CHOICES:
        raise NodeSpecError(f"node spec {shown!r}: runtime must be one of {'|'.join(CHOICES)} (absent: the node's "
                            f"CRI runtime when it has one, else direct), got {value!r}")
    return value


def _cgroup_root(value: str | None, shown: str) -> str | None:
    """root= lies under the cgroup v2 mount, so the enforcer never writes elsewhere."""
    if value is None:
        return None
    _node_path("root", value, shown)
    if value != CGROUP_MOUNT and not value.startswith(CGROUP_MOUNT + "/"):
        raise NodeSpecError(f"node spec {shown!r}: root= must be {CGROUP_MOUNT} or a cgroup under it, got {value!r}")
    return value


def _work_dir(value: str | None, scheme: str, shown: str) -> str | None:
    """dir= is a directory nodeconf creates itself: on `local` it must not exist yet (it is removed at the end)."""
    if value is None:
        return None
    _node_path("dir", value, shown)
    if scheme == "local" and os.path.lexists(value):
        raise NodeSpecError(f"node spec {shown!r}: dir={value} already exists; nodeconf only uses a work "
                            "directory it creates itself (name one that does not exist)")
    return value


def _python(value: str | None, scheme: str, shown: str) -> str | None:
    """python= is a bare program name or an absolute path (on `local`: an existing executable)."""
    if value is None:
        return None
    if not value.startswith("/"):
        if not PROGRAM.fullmatch(value):
            raise NodeSpecError(f"node spec {shown!r}: python= must be an absolute path or a program name of "
                                f"letters, digits and ._+@-, got {value!r}")
        return value
    _node_path("python", value, shown)
    if scheme == "local" and not (os.path.isfile(value) and os.access(value, os.X_OK)):
        raise NodeSpecError(f"node spec {shown!r}: python={value} is not an executable file")
    return value
