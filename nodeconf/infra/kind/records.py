"""This host's record of the kind clusters nodeconf runs create: one file per cluster in the cache's `kind/`,
written before `kind create` starts (for a random name kind did not list) and removed once the cluster is deleted,
kept (keep=1, the user's then) or was never made (kind refused or failed on its own). A record whose run is gone
is what proves a leftover cluster is nodeconf's: `nodeconf clean --node kind` deletes only those.

Source: issue 26 item 2; the run's identity as for VMs (pid and its start time, infra/vm/state.py).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from infra.vm.paths import cache_root
from infra.vm.state import process_alive, process_start

RECORD_NAME = re.compile(r"(?P<name>nodeconf-[a-z0-9][a-z0-9.-]*-[0-9a-f]{6})\.json")


def records_dir(cache_dir: Path | None = None) -> Path:
    return cache_root(cache_dir) / "kind"


@dataclass(frozen=True)
class ClusterRecord:
    """A cluster a run of this host is creating or created, and that run's process."""

    name: str
    pid: int
    start: int

    @property
    def path(self) -> Path:
        return records_dir() / f"{self.name}.json"

    @classmethod
    def of_this_process(cls, name: str) -> ClusterRecord:
        return cls(name, os.getpid(), process_start(os.getpid()))

    def write(self) -> None:
        """Record it (atomically: a new file renamed into place; the directory only the user can write)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        scratch = self.path.with_name(f".{self.path.name}.{self.pid}")
        scratch.write_text(json.dumps({"name": self.name, "pid": self.pid, "start": self.start}) + "\n")
        scratch.replace(self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def run_alive(self) -> bool:
        """True while the run that wrote it still runs (its pid, not reused: same start time)."""
        return process_alive(self.pid, self.start) and self.start != 0


def read_records() -> list[ClusterRecord]:
    """The readable records (a regular file named after its cluster; anything else is not ours and is skipped)."""
    directory = records_dir()
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.iterdir()):
        match = RECORD_NAME.fullmatch(path.name)
        if match is None or path.is_symlink() or not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text())
            record = ClusterRecord(str(doc["name"]), int(doc["pid"]), int(doc["start"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if record.name == match["name"]:
            out.append(record)
    return out
