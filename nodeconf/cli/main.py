"""`nodeconf` entry point: dispatches each subcommand to its own module, imported only when used."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from nodeconf.cli.version import VersionAction
from nodeconf.errors import UsageError

# subcommand -> (module, one-line help); each module has add_parser(subparsers) and run(args) -> int.
SUBCOMMANDS = {
    "explain": ("nodeconf.cli.explain", "show what a node should do with these pods"),
    "run": ("nodeconf.cli.run", "run the conformance suites against a node and write reports/"),
    "report": ("nodeconf.cli.report", "regenerate the HTML report from Allure results"),
    "node": ("nodeconf.cli.node", "manage the reference VM node (up, down, status, ssh)"),
    "clean": ("nodeconf.cli.clean", "remove what killed runs left (VMs, build scratch, enforcer, kube objects)"),
}


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit 2 (issue 2: "a bad flag → one short line")."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the subcommand and run it; usage errors exit 2."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = _OneLineParser(prog="nodeconf", description="Kubernetes node conformance suite")
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    name = next((a for a in args_list if not a.startswith("-")), None)
    for command, (module_name, help_text) in SUBCOMMANDS.items():
        if command == name:
            importlib.import_module(module_name).add_parser(subparsers)
        else:
            subparsers.add_parser(command, help=help_text)
    args, unknown = parser.parse_known_args(args_list)
    if unknown:
        if args.command != "run":
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
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
