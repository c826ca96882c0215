"""The settings of one run, built once per process from its options (run/options.py): every value checked, every
kubelet config file read once, and each node carrying what it runs by (a matrix entry's own kubelet config and
profile, else the run's).

Source: issue 27 item 1 (one owner for a run's settings; the kubelet config parsed once per process).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from nodeconf.errors import InputError
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.loader import UnknownFields, read_kubelet_config
from nodeconf.node_facts import CPU_WEIGHT_FORMULAS
from nodeconf.nodes.spec import NodeSpec
from nodeconf.run.matrix import RunNode, run_nodes
from nodeconf.run.options import profile_problem
from nodeconf.semantics.profile import DEFAULT_VERSION

DEFAULT_FORMULA = "nonlinear"  # the profile's shares→weight formula (KEP-2254's non-linear one)
DEFAULT_REPORTS = Path("reports")


@dataclass(frozen=True)
class NodeSettings:
    """One node of the run and what it runs by. `profile` is as given (None: the newest, or a cluster node's own
    kubelet's version); `kubelet_config` is the loaded file (None: nodeconf's defaults, or a cluster node's running
    configuration); `own` says its matrix entry named its own kubelet config or profile."""

    spec: NodeSpec
    kubelet_config_path: Path | None = None
    kubelet_config: KubeletConfig | None = None
    profile: str | None = None
    cpu_weight_formula: str = DEFAULT_FORMULA
    own: bool = False
    kubelet_config_text: str | None = field(default=None, repr=False)  # as read, for the report's record

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def judging_profile(self) -> str:
        """The profile the oracle judges a node nodeconf runs the kubelet of by."""
        return self.profile or DEFAULT_VERSION

    @property
    def base_config(self) -> KubeletConfig:
        """The kubelet configuration a node nodeconf runs the kubelet of starts with."""
        return self.kubelet_config or KubeletConfig()

    def __str__(self) -> str:
        return self.spec.display

    def __repr__(self) -> str:  # Allure shows fixture parameters by repr
        return self.spec.display


@dataclass(frozen=True)
class RunSettings:
    """The run's options, checked, and its nodes with their resolved settings."""

    nodes: tuple[NodeSettings, ...]
    kubelet_config_path: Path | None = None
    profile: str | None = None
    cpu_weight_formula: str = DEFAULT_FORMULA
    matrix: Path | None = None
    reports: Path = DEFAULT_REPORTS
    configs: Mapping[Path, tuple[str, KubeletConfig]] = field(default_factory=dict, repr=False)  # text, loaded

    @property
    def judging_profile(self) -> str:
        return self.profile or DEFAULT_VERSION

    def with_nodes(self, entries: Sequence[RunNode]) -> RunSettings:
        """The same settings for other nodes (a whole-cluster spec expanded), their kubelet configs loaded already."""
        return replace(self, nodes=tuple(self._resolved(entry) for entry in entries))

    def _resolved(self, entry: RunNode) -> NodeSettings:
        path = entry.kubelet_config or self.kubelet_config_path
        text, config = (None, None) if path is None else self.configs[path]
        return NodeSettings(entry.spec, path, config, entry.profile or self.profile, self.cpu_weight_formula,
                            own=entry.kubelet_config is not None or entry.profile is not None,
                            kubelet_config_text=text)


def run_settings(option: Callable[[str], object], unknown: UnknownFields | None = None) -> RunSettings:
    """The run's settings from its options' values (`option(dest)`, None when not given): each value checked
    (InputError, one line naming the option) and each kubelet config file read once; the fields nodeconf does not
    read go to `unknown` (without one they are warned about at once)."""
    matrix = _path(option("matrix"))
    entries = run_nodes(_specs(option("node")), matrix)
    profile = _text(option("profile"))
    problem = profile and profile_problem(profile)
    if problem:
        raise InputError(problem, field="--profile")
    formula = _text(option("cpu_weight_formula")) or DEFAULT_FORMULA
    if formula not in CPU_WEIGHT_FORMULAS:
        raise InputError(f"unknown value {formula!r} (expected one of {', '.join(CPU_WEIGHT_FORMULAS)})",
                         field="--cpu-weight-formula")
    config_path = _path(option("kubelet_config"))
    if config_path is not None and not config_path.is_file():
        raise InputError("no such file", source=str(config_path), field="--kubelet-config")
    paths = sorted({path for path in (config_path, *(entry.kubelet_config for entry in entries)) if path})
    configs = {path: read_kubelet_config(path, unknown) for path in paths}
    settings = RunSettings((), config_path, profile, formula, matrix, _path(option("reports")) or DEFAULT_REPORTS,
                           configs)
    return settings.with_nodes(entries)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _path(value: object) -> Path | None:
    return None if value is None else Path(str(value))


def _specs(value: object) -> list[NodeSpec] | None:
    return [spec for spec in value if isinstance(spec, NodeSpec)] if isinstance(value, list) else None
