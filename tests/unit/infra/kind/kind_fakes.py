"""Fake `kind` and `docker` executables for the kind provisioning tests: each records its arguments (one JSON line
per start and end of a call) and answers like the real one.

The answers follow kind's CLI: `kind version` prints `kind v0.31.0 go1.24.4 linux/amd64`
(pkg/cmd/kind/version/version.go DisplayVersion); `kind get clusters` prints one name a line, or
"No kind clusters found." on stderr (pkg/cmd/kind/get/clusters/clusters.go); `kind create cluster` refuses a name
in use with `ERROR: failed to create cluster: node(s) already exist for a cluster with the name "NAME"`
(pkg/cluster/internal/create/create.go) and writes the context `kind-NAME` into --kubeconfig.
A failed create removes the nodes it made, unless the name was in use (create.go: delete.Cluster after a failed
Provision or action; alreadyExists returns first). Behaviour knobs come from the environment: FAKE_KIND_VERSION,
FAKE_KIND_CREATE_SLEEP, FAKE_KIND_CREATE_FAIL, FAKE_KIND_DELETE_SLEEP, FAKE_KIND_SERVER, and
FAKE_KIND_NAME_TAKEN (another job creates a cluster of the name between `get clusters` and this create).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

FAKE_KIND = r'''
import json, os, sys, time
from pathlib import Path

state = Path(os.environ["FAKE_KIND_STATE"])
log = state / "calls.jsonl"
clusters = state / "clusters.txt"
argv = sys.argv[1:]

def record(phase):
    with log.open("a") as handle:
        handle.write(json.dumps({"tool": "kind", "argv": argv, "phase": phase}) + "\n")

def flag(name):
    return argv[argv.index(name) + 1] if name in argv else None

def names():
    return clusters.read_text().split() if clusters.exists() else []

record("start")
if argv[:1] == ["version"]:
    print(os.environ.get("FAKE_KIND_VERSION", "kind v0.31.0 go1.24.4 linux/amd64"))
elif argv[:2] == ["get", "clusters"]:
    if names():
        print("\n".join(names()))
    else:
        print("No kind clusters found.", file=sys.stderr)
elif argv[:2] == ["create", "cluster"]:
    name = flag("--name")
    if os.environ.get("FAKE_KIND_NAME_TAKEN") and name not in names():
        clusters.write_text("\n".join([*names(), name]) + "\n")
    if name in names():
        print(f'ERROR: failed to create cluster: node(s) already exist for a cluster with the name "{name}"',
              file=sys.stderr)
        sys.exit(1)
    clusters.write_text("\n".join([*names(), name]) + "\n")
    server = os.environ.get("FAKE_KIND_SERVER", "https://127.0.0.1:1")
    Path(flag("--kubeconfig")).write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": f"kind-{name}",
        "clusters": [{"name": f"kind-{name}", "cluster": {"server": server}}],
        "contexts": [{"name": f"kind-{name}", "context": {"cluster": f"kind-{name}", "user": f"kind-{name}"}}],
        "users": [{"name": f"kind-{name}", "user": {"token": "fake"}}]}))
    time.sleep(float(os.environ.get("FAKE_KIND_CREATE_SLEEP", "0")))
    if os.environ.get("FAKE_KIND_CREATE_FAIL"):
        print("ERROR: failed to create cluster: failed to init node with kubeadm", file=sys.stderr)
        clusters.write_text("\n".join(n for n in names() if n != name) + "\n")
        sys.exit(1)
elif argv[:2] == ["delete", "cluster"]:
    name = flag("--name")
    print(f'Deleting cluster "{name}" ...', file=sys.stderr)
    time.sleep(float(os.environ.get("FAKE_KIND_DELETE_SLEEP", "0")))
    clusters.write_text("\n".join(n for n in names() if n != name) + "\n")
else:
    print(f"ERROR: unknown command {argv}", file=sys.stderr)
    sys.exit(1)
record("end")
'''

FAKE_DOCKER = r'''
import json, os, sys
from pathlib import Path

with (Path(os.environ["FAKE_KIND_STATE"]) / "calls.jsonl").open("a") as handle:
    handle.write(json.dumps({"tool": Path(sys.argv[0]).name, "argv": sys.argv[1:], "phase": "start"}) + "\n")
if sys.argv[1:2] == ["info"]:
    print("Client: Docker Engine - Community")
    print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock.", file=sys.stderr)
    sys.exit(1)
print("Docker version 27.5.1, build 9f9e405")
'''


@dataclass(frozen=True)
class FakeTools:
    """A PATH directory holding the fakes and the directory where they keep their state and calls."""

    bin: Path
    state: Path

    def env(self, **extra: str) -> dict[str, str]:
        """An environment whose PATH holds only the fakes."""
        base = {k: v for k, v in os.environ.items() if k not in ("KIND_EXPERIMENTAL_PROVIDER", "KUBECONFIG")}
        return {**base, "PATH": str(self.bin), "FAKE_KIND_STATE": str(self.state), **extra}

    def calls(self, phase: str = "start") -> list[list[str]]:
        """Each call's tool and arguments, in order (`kind create cluster ...`)."""
        log = self.state / "calls.jsonl"
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        return [[e["tool"], *e["argv"]] for e in entries if e["phase"] == phase]

    def clusters(self) -> list[str]:
        path = self.state / "clusters.txt"
        return path.read_text().split() if path.exists() else []


def install(directory: Path, tools: tuple[str, ...] = ("kind", "docker")) -> FakeTools:
    """Write the fake executables named in `tools` into `directory/bin`."""
    bin_dir, state = directory / "bin", directory / "state"
    bin_dir.mkdir(parents=True)
    state.mkdir()
    sources = {"kind": FAKE_KIND, "docker": FAKE_DOCKER, "podman": FAKE_DOCKER}
    for tool in tools:
        path = bin_dir / tool
        path.write_text(f"#!{sys.executable}\n{sources[tool]}")
        path.chmod(0o755)
    return FakeTools(bin_dir, state)
