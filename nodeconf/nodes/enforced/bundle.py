"""What the enforced driver puts on a node: the agent bundle, and the shell scripts that create and remove its
directories (each marked with the session's token, so only what this session created is ever removed)."""

from __future__ import annotations

import importlib
import io
import tarfile
from pathlib import Path

from nodeconf.resources import locate_tree
from nodeconf.workloads import PROGRAMS

REMOTE_DIR = "/opt/nodeconf"
STATE_DIR = "/run/nodeconf-enforcer"
# Modules the agent needs on the node: the model, the oracle and the enforcer (all standard library only).
BUNDLE_MODULES = ("__init__.py", "errors.py", "quantity.py", "manifest.py", "manifest_writer.py", "kubelet_config.py",
                  "node_facts.py", "names.py", "cgroup_files.py", "workloads.py", "str_enum.py")
BUNDLE_PACKAGES = ("semantics", "enforcer", "enforcer/cri")
# Pure-Python libraries the agent's CRI client imports (HTTP/2), pushed from the controller's own installation.
VENDORED = ("h2", "hpack", "hyperframe")
START_TIMEOUT = 60.0
# The mark in each directory the driver creates on the node; only a directory holding this session's token is
# ever removed.
MARKER_FILE = ".nodeconf-owner"
# Create the work directory fresh (a marked one left by an earlier run is replaced; any other existing path is
# refused, exit 4) and the state directory (an earlier run's marked one is kept: it holds a crashed agent's state),
# then unpack the bundle. Exit 3 (an agent already answers on the socket) and 5 (the node's Python is older than
# 3.9, bullseye's, the oldest the pushed modules run on: test_agent_python39.py): nothing was touched.
PUSH_SCRIPT = r"""
dir=$1 state=$2 token=$3 python=$4 socket=$5 mark=$6
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
  version=$("$python" -V 2>&1 | head -n 1 | cut -c1-40)
  echo "nodeconf agent: the node's $python is $version; the agent needs Python 3.9 or newer" \
    "(python= names another interpreter)" >&2
  exit 5
fi
if "$python" -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$socket" 2>/dev/null; then
  echo "nodeconf agent: another agent is running at $socket; stop it first" >&2; exit 3
fi
ours() { [ -d "$1" ] && [ ! -L "$1" ] && [ -f "$1/$mark" ] && [ ! -L "$1/$mark" ]; }
for d in "$dir" "$state"; do
  if { [ -e "$d" ] || [ -L "$d" ]; } && ! ours "$d"; then
    echo "$d exists and was not created by nodeconf (no $mark in it): choose another dir= or remove it" >&2
    exit 4
  fi
done
if [ -e "$dir" ]; then rm -rf -- "$dir" || exit 1; fi
mkdir -p -- "$(dirname -- "$dir")" "$(dirname -- "$state")" && mkdir -m 755 -- "$dir" &&
  printf '%s\n' "$token" > "$dir/$mark" || exit 1
if [ ! -d "$state" ]; then mkdir -m 700 -- "$state" || exit 1; fi
printf '%s\n' "$token" > "$state/$mark" && tar -x -f - -C "$dir" --no-same-owner
"""
# Remove each directory that holds this session's token (nothing else, not a symlink).
REMOVE_SCRIPT = r"""
token=$1 mark=$2; shift 2
for d; do
  if [ -d "$d" ] && [ ! -L "$d" ] && [ ! -L "$d/$mark" ] && [ "$(cat -- "$d/$mark" 2>/dev/null)" = "$token" ]; then
    rm -rf -- "$d" || exit 1
  fi
done
"""
REFUSED = 4
PYTHON_TOO_OLD = 5


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def agent_bundle() -> bytes:
    """A tar of what runs on the node: the stdlib-only packages and the workload programs."""
    root = repo_root()
    files = [root / "nodeconf" / name for name in BUNDLE_MODULES]
    for package in BUNDLE_PACKAGES:
        files += sorted((root / "nodeconf" / package).glob("*.py"))
    members = [(path, str(path.relative_to(root))) for path in files]
    members += [(path, f"{PROGRAMS}/{path.name}") for path in sorted(locate_tree().programs.glob("*.py"))]
    for name in VENDORED:
        library = Path(str(importlib.import_module(name).__file__)).parent
        members += [(path, f"{name}/{path.relative_to(library)}") for path in sorted(library.rglob("*.py"))]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, arcname in members:
            info = archive.gettarinfo(str(path), arcname=arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = 0o644
            with open(path, "rb") as handle:
                archive.addfile(info, handle)
    return buffer.getvalue()
