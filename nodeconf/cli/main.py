"""`nodeconf` entry point: dispatches each subcommand to its own module, imported only when used."""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Collection, Sequence
from typing import Any, NoReturn

from nodeconf.cli.version import VersionAction
from nodeconf.errors import UsageError

# How close (difflib ratio) an unknown option must be to one of the subcommand's to be taken for its misspelling:
# `--profiel` (0.89) is `--profile`; pytest's `--strict-markers` (0.67 to `--strict`) or `--no-header` (0.59 to
# `--node`) pass on to pytest.
NEAR_MISS = 0.8

# subcommand -> (module, one-line help); each module has add_parser(subparsers) and run(args) -> int.
SUBCOMMANDS = {
    "explain": ("nodeconf.cli.explain", "show what a node should do with these pods"),
    "run": ("nodeconf.cli.run", "run the conformance suites against a node and write reports/"),
    "checks": ("nodeconf.cli.checks", "list the checks of a run with their source, area and needs"),
    "report": ("nodeconf.cli.report", "regenerate the HTML report from Allure results"),
    "node": ("nodeconf.cli.node", "manage the reference VM node (up, down, status, ssh)"),
    "clean": ("nodeconf.cli.clean", "remove what killed runs left (VMs, build scratch, enforcer, kube objects)"),
    "completion": ("nodeconf.cli.completion", "print a shell completion script (bash or zsh)"),
}


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit 2 (issue 2: "a bad flag → one short line"); no option prefixes
    (`--nod` is not `--node`: issue 32), for this parser and every subcommand's, which argparse builds with this
    class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _unknown_options(parser: argparse.ArgumentParser, unknown: Sequence[str], *, stop_at_pytest: bool) -> list[str]:
    """The unknown options, each with the subcommand's option it most likely meant (a prefix or a near miss);
    for `nodeconf run` (`stop_at_pytest`) only those that look like one of its own: the others go to pytest."""
    own = [option for action in parser._actions for option in action.option_strings if option.startswith("--")]
    found = []
    for arg in unknown:
        if arg == "--" and stop_at_pytest:
            break
        name = arg.split("=", 1)[0]
        near = ([o for o in own if o.startswith(name)] or difflib.get_close_matches(name, own, n=1, cutoff=NEAR_MISS)
                if name.startswith("--") else [])
        if near:
            found.append(f"{name} (did you mean {' or '.join(near)}?)")
        elif not stop_at_pytest:
            found.append(arg)
    return found


def build_parser(
    declared: Collection[str],
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]]:
    """The `nodeconf` parser and its subcommands: those in `declared` with all their options (their modules
    imported), the others by name and help only."""
    parser: argparse.ArgumentParser = _OneLineParser(prog="nodeconf", description="Kubernetes node conformance suite")
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, (module_name, help_text) in SUBCOMMANDS.items():
        if command in declared:
            importlib.import_module(module_name).add_parser(subparsers)
        else:
            subparsers.add_parser(command, help=help_text)
    return parser, subparsers


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the subcommand and run it; usage errors exit 2."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    name = next((a for a in args_list if not a.startswith("-")), None)
    parser, subparsers = build_parser({name} if name else set())
    args, unknown = parser.parse_known_args(args_list)
    if unknown:
        chosen = subparsers.choices[args.command]
        refused = _unknown_options(chosen, unknown, stop_at_pytest=args.command == "run")
        if refused:
            chosen.error(f"unrecognized arguments: {', '.join(refused)}")
        args.pytest_args = [*unknown, *args.pytest_args]  # `nodeconf run -k swap` passes -k on to pytest
    try:
        code = importlib.import_module(SUBCOMMANDS[args.command][0]).run(args)
    except UsageError as err:
        print(f"nodeconf: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nodeconf: interrupted", file=sys.stderr)
        return 130
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
