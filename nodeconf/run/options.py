"""Every option of a run declared once, for `nodeconf run`'s argparse (nodeconf/cli/run.py) and pytest's addoption
(the root conftest), as `declare_node_option` does for --node; their values are checked and resolved in one place,
run/settings.py, so both front ends take the same values and refuse the same ones with the same line.

Source: issue 27 item 1 (one declaration of each run option).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nodeconf.nodes.spec import declare_node_option
from nodeconf.semantics.profile import PROFILE_VERSION, SUPPORTED_VERSIONS


@dataclass(frozen=True)
class RunOption:
    """One option: its flags (the first names it), metavar and help; `pytest` False for the options that shape
    only `nodeconf run`'s own output."""

    flags: tuple[str, ...]
    metavar: str
    help: str
    pytest: bool = True

    @property
    def dest(self) -> str:
        return self.flags[0].removeprefix("--").replace("-", "_")


RUN_OPTIONS = (
    RunOption(("--matrix",), "FILE", "YAML list of nodes, each {node: SPEC, kubeletConfig: FILE, profile: X.Y, "
              "name: NAME} (instead of --node); several nodes run in parallel, one pytest-xdist worker each"),
    RunOption(("--kubelet-config",), "FILE", "KubeletConfiguration YAML the node starts with"),
    RunOption(("--profile", "--kubernetes-version"), "X.Y", "the Kubernetes version the oracle judges by, as in "
              "nodeconf explain (default: the newest, with default feature gates); --kubernetes-version is an alias"),
    RunOption(("--cpu-weight-formula",), "linear|nonlinear", "the container shares→weight formula the run accepts "
              "(default: the profile's non-linear one; linear accepts old runtimes)"),
    RunOption(("--reports",), "DIR", "where JUnit, Allure results and the HTML go (default: reports)", pytest=False),
)


def declare_run_options(add_option: Callable[..., object], *, pytest: bool) -> None:
    """Declare --node and every run option with argparse's add_argument or pytest's addoption (`pytest` True: the
    pytest ones only). No default and no type here: run/settings.py checks and resolves every value."""
    declare_node_option(add_option)
    for option in RUN_OPTIONS:
        if option.pytest or not pytest:
            add_option(*option.flags, dest=option.dest, metavar=option.metavar, help=option.help)


def profile_problem(value: str) -> str | None:
    """Why `value` is no profile (--profile, a matrix entry's profile:), None for a supported X.Y."""
    if not PROFILE_VERSION.fullmatch(value):
        return f'must look like "1.36", got {value!r}'
    if value not in SUPPORTED_VERSIONS:
        return f"{value!r} is not one of {', '.join(SUPPORTED_VERSIONS)}"
    return None
