"""What judged the node, for the report: nodeconf version and commit, profile, kubelet config, command, times, host.

Source: issue 17 (a qualification report names exactly what judged the node); the entries go to Allure's
environment.properties, so every reader of the results (the HTML, summary.json, Allure) sees the same values.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from nodeconf.build_info import version
from nodeconf.kubelet_config import KubeletConfig, kubelet_config_to_dict

# `nodeconf run` hands its own (redacted) command line to the pytest it starts; direct pytest use records pytest's.
COMMAND_ENV = "NODECONF_COMMAND"
REDACTED = "***"
# user:password@ in any URL-like argument, and secret-looking query or option values.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/:@\s]*):[^@/\s]*@")
_SECRET_VALUE = re.compile(r"(?P<head>(?:^|[?&;]|--)(?:password|passwd|pass|token|secret|api[-_]?key)=)[^&;\s]*",
                           re.IGNORECASE)
# How sys.argv[0] names nodeconf itself: its console script, nodeconf/__main__.py, nodeconf/cli/main.py.
_NODECONF_PROGRAM = re.compile(r"(?:^|/)nodeconf(?:/__main__\.py|/cli/main\.py)?$")
# environment.properties keys, in the order the report shows them.
VERSION_KEY = "nodeconf version"
COMMIT_KEY = "nodeconf commit"
PROFILE_KEY = "profile"
KUBELET_CONFIG_KEY = "kubelet config"
KUBELET_SHA_KEY = "kubelet config sha256"
COMMAND_KEY = "command"
STARTED_KEY = "started"
FINISHED_KEY = "finished"
CONTROLLER_KEY = "controller"
RUN_KEYS = (VERSION_KEY, COMMIT_KEY, PROFILE_KEY, KUBELET_CONFIG_KEY, KUBELET_SHA_KEY, COMMAND_KEY, STARTED_KEY,
            FINISHED_KEY, CONTROLLER_KEY)


def redact(argument: str) -> str:
    """One argument with URL passwords and secret-looking `name=value` values replaced by ***."""
    without_password = _URL_PASSWORD.sub(lambda m: f"{m['head']}:{REDACTED}@", argument)
    return _SECRET_VALUE.sub(lambda m: f"{m['head']}{REDACTED}", without_password)


def command_line(argv: Sequence[str]) -> str:
    """The command as a shell would take it, each argument redacted; nodeconf's own program (an installed script,
    `python -m nodeconf`, a checkout's main.py) as `nodeconf`, since where it was installed tells a reader nothing."""
    program = [*argv[:1]]
    if program and _NODECONF_PROGRAM.search(program[0]):
        program = ["nodeconf"]
    return shlex.join(redact(argument) for argument in [*program, *argv[1:]])


def shown_command(command: str) -> str:
    """A recorded command with nodeconf's own program as `nodeconf` (also one recorded before command_line did)."""
    program, space, rest = command.partition(" ")
    return f"nodeconf{space}{rest}" if _NODECONF_PROGRAM.search(program) else command


def utc_now() -> str:
    """Now as UTC ISO 8601 to the second (`2026-11-30T14:50:24+00:00`)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class KubeletConfigRecord:
    """The kubelet configuration a run started with: where it came from, its text and the text's sha256."""

    origin: str
    content: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content.encode("utf-8")).hexdigest()


def kubelet_config_record(path: str | Path | None, text: str | None = None) -> KubeletConfigRecord:
    """The --kubelet-config file as given (`text`: as the run read it), or nodeconf's default configuration as a
    KubeletConfiguration document."""
    if path:
        return KubeletConfigRecord(str(path), Path(path).read_text(encoding="utf-8") if text is None else text)
    default = yaml.safe_dump(kubelet_config_to_dict(KubeletConfig()), sort_keys=False)
    return KubeletConfigRecord("(none given: nodeconf defaults)", default)


@dataclass(frozen=True)
class RunInfo:
    """The run's identity for environment.properties."""

    commit: str  # the suite tree's commit when the run started (build_info.commit)
    profile: str
    kubelet_config: KubeletConfigRecord
    command: str
    started: str
    finished: str

    def entries(self) -> list[tuple[str, str]]:
        """`(key, value)` pairs in RUN_KEYS order."""
        values = (version(), self.commit or "unknown", self.profile, self.kubelet_config.origin,
                  self.kubelet_config.sha256, self.command, self.started, self.finished, socket.gethostname())
        return list(zip(RUN_KEYS, values, strict=True))


def run_fields(environment: Sequence[tuple[str, str]]) -> Mapping[str, str]:
    """The run entries of an environment.properties read back (missing keys left out)."""
    return {key: value for key, value in environment if key in RUN_KEYS}
