"""What the enforced driver puts on a node: the agent bundle, and the shell scripts that create and remove its
directories (each marked with the session's token, so only what this session created is ever removed)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import py_compile
import tarfile
import tempfile
from pathlib import Path

from nodeconf.enforcer.state_file import LOCK_FILE, PID_FILE
from nodeconf.resources import SOURCE_DIR, locate_tree
from nodeconf.workloads import NODE_HOME, PROGRAMS

REMOTE_DIR = NODE_HOME
STATE_DIR = "/run/nodeconf-enforcer"
# Modules the agent needs on the node: the model, the oracle and the enforcer (all standard library only).
BUNDLE_MODULES = ("__init__.py", "errors.py", "quantity.py", "manifest.py", "manifest_reader.py", "manifest_writer.py",
                  "kubelet_config.py", "go_duration.py", "node_facts.py", "names.py", "cgroup_files.py", "workloads.py",
                  "str_enum.py")
BUNDLE_PACKAGES = ("semantics", "enforcer", "enforcer/cri")
# Pure-Python libraries the agent's CRI client imports (HTTP/2), pushed from the controller's own installation.
VENDORED = ("h2", "hpack", "hyperframe")
START_TIMEOUT = 60.0
# The mark in each directory the driver creates on the node; only a directory holding this session's token is
# ever removed.
MARKER_FILE = ".nodeconf-owner"
# Run as root on the node, from `/` and with an isolated import path (-I: neither the working directory nor
# PYTHON* variables nor the user's site; -I exists on 3.9, -P does not), before anything is made: each directory
# and every parent must be changeable by root (the agent's uid) only (owner root or that uid; not group- or
# world-writable unless sticky, where only an entry's owner may rename or remove it: unlink(2), rename(2)), so
# nothing can be swapped between push and run; no agent may hold the state directory's lock (exit 3); an existing
# work directory must hold in its mark the token one push recorded in the state directory's mark, and the state
# directory a token (exit 4, one line each).
CHECK = r"""
import fcntl, os, re, socket, stat, sys
work, state, mark, sock = sys.argv[1:5]
uid = os.geteuid()
def refuse(code, line):
    print("nodeconf agent: " + line, file=sys.stderr)
    sys.exit(code)
def guard(path):
    for literal in (path, os.path.realpath(path)):
        parts = literal.split("/")
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth]) or "/"
            try:
                info = os.lstat(here)
            except FileNotFoundError:
                return
            if stat.S_ISLNK(info.st_mode):
                continue
            loose = info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX
            if info.st_uid not in (0, uid) or loose:
                refuse(4, "%s (owner uid %d, mode %04o) can be changed by others than uid %d, so %s could be "
                       "swapped before it runs; choose a directory whose every parent only that uid can write"
                       % (here, info.st_uid, stat.S_IMODE(info.st_mode), uid, path))
for path in (work, state):
    guard(path)
lock = os.path.join(state, LOCK_FILE)
if os.path.isfile(lock) and not os.path.islink(lock):
    fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = open(os.path.join(state, PID_FILE)).read().split()[0]
        except (OSError, IndexError):
            holder = "unknown"
        refuse(3, "another agent (pid %s) holds %s: one run per node; stop that run first" % (holder, lock))
    os.close(fd)
try:
    socket.socket(socket.AF_UNIX).connect(sock)
except OSError:
    pass
else:
    refuse(3, "another agent is running at %s; stop it first" % sock)
def token(directory):
    marker = os.path.join(directory, mark)
    if os.path.islink(directory) or not os.path.isdir(directory) or os.path.islink(marker):
        return None
    try:
        text = open(marker).read()
    except OSError:
        return None
    return text if re.fullmatch(r"[0-9a-f]{32}\n", text) else None
recorded = token(state)
for directory, ours in ((work, recorded is not None and token(work) == recorded), (state, recorded is not None)):
    if os.path.lexists(directory) and not ours:
        print("%s exists and was not created by nodeconf (no %s holding the token nodeconf recorded in %s): "
              "choose another dir= or remove it" % (directory, mark, state), file=sys.stderr)
        sys.exit(4)
"""
# Then create the work directory fresh (a killed run's, proven by CHECK, is replaced) and keep the state directory
# (it holds a crashed agent's state), mark both with this session's token and unpack the bundle. Exit 5: the node's
# Python is older than 3.9, bullseye's, the oldest the pushed modules run on (test_agent_python39.py).
PUSH_SCRIPT = r"""
dir=$1 state=$2 token=$3 python=$4 socket=$5 mark=$6 check=$7
cd / || exit 1
if ! "$python" -I -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
  version=$("$python" -V 2>&1 | head -n 1 | cut -c1-40)
  echo "nodeconf agent: the node's $python is $version; the agent needs Python 3.9 or newer" \
    "(python= names another interpreter)" >&2
  exit 5
fi
"$python" -I -c "$check" "$dir" "$state" "$mark" "$socket" || exit $?
if [ -e "$dir" ]; then rm -rf -- "$dir" || exit 1; fi
mkdir -p -- "$(dirname -- "$dir")" "$(dirname -- "$state")" && mkdir -m 755 -- "$dir" &&
  printf '%s\n' "$token" > "$dir/$mark" || exit 1
if [ ! -d "$state" ]; then mkdir -m 700 -- "$state" || exit 1; fi
printf '%s\n' "$token" > "$state/$mark" && tar -x -z -f - -C "$dir" --no-same-owner
"""
# Runs a module of the agent from `/` (argv: the work directory, the bundle's digest, the module, its arguments)
# with an isolated import path (-I) and no bytecode written (-B): the tree, the pushed bytecode in __pycache__
# included, is imported only when its digest is the pushed one (TREE_CHANGED otherwise, one line).
LAUNCH = r"""
import hashlib, os, sys
top, expected, module = sys.argv[1], sys.argv[2], sys.argv[3]
del sys.argv[1:4]
entries = []
for base, dirs, files in os.walk(top):
    for name in dirs + files:
        path = os.path.join(base, name)
        rel = os.path.relpath(path, top)
        if os.path.islink(path):
            entries.append("%s\0link %s\n" % (rel, os.readlink(path)))
        elif not os.path.isdir(path) and rel != MARK:
            with open(path, "rb") as handle:
                entries.append("%s\0%s\n" % (rel, hashlib.sha256(handle.read()).hexdigest()))
got = hashlib.sha256("".join(sorted(entries)).encode()).hexdigest()
if got != expected:
    print("nodeconf agent: %s does not hold the pushed tree (its digest is %s, the push's %s); not run"
          % (top, got, expected), file=sys.stderr)
    sys.exit(TREE_CHANGED)
sys.path.insert(0, top)
import runpy
runpy.run_module(module, run_name="__main__", alter_sys=True)
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
TREE_CHANGED = 6
LAUNCH = LAUNCH.replace("MARK", repr(MARKER_FILE)).replace("TREE_CHANGED", str(TREE_CHANGED))
CHECK = CHECK.replace("LOCK_FILE", repr(LOCK_FILE)).replace("PID_FILE", repr(PID_FILE))


def agent_socket(state_dir: str) -> str:
    """Where the agent of a state directory answers."""
    return f"{state_dir}/agent.sock"


AGENT_MODULE = "nodeconf.enforcer"
BRIDGE_MODULE = "nodeconf.enforcer.bridge"


def launch_argv(python: str, top: str, digest: str, *args: str, module: str = AGENT_MODULE) -> list[str]:
    """The command that runs `python3 -m MODULE ARGS` (the agent's commands, or BRIDGE_MODULE) from the pushed tree
    at top, from `/`, isolated, once the tree's digest is the push's."""
    return ["sh", "-c", 'cd / && exec "$@"', "nodeconf-agent", python, "-I", "-B", "-c", LAUNCH, top, digest, module,
            *args]


def tree_digest(bundle: bytes) -> str:
    """The digest LAUNCH computes on the node of the tree this bundle unpacks to: sha256 over the sorted lines
    `PATH NUL SHA256(CONTENT)` of its files."""
    entries = []
    with tarfile.open(fileobj=io.BytesIO(bundle)) as archive:
        for member in archive.getmembers():
            handle = archive.extractfile(member)
            if handle is not None:
                entries.append(f"{member.name}\0{hashlib.sha256(handle.read()).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(entries)).encode()).hexdigest()


def repo_root() -> Path:
    return SOURCE_DIR


def agent_bundle(root: Path | None = None) -> bytes:
    """A gzipped tar of what runs on the node (`tar -x -z`: under TCG the guest's sshd took ~1 s per MiB it
    received, the tar shrinks to a third): the stdlib-only packages (of the source tree at root, default this one; a
    benchmark compares two trees' agents) with their bytecode, and the workload programs.

    The bytecode is this interpreter's, checked against its source's hash (PEP 552), in __pycache__ under this
    interpreter's tag: a node's Python of the same version imports it instead of compiling every module at each
    agent start (under TCG ~2-5 s of the node's start, issue 31), any other ignores it (and, with -B, writes none);
    LAUNCH's digest covers it like every other file of the tree."""
    root = root or repo_root()
    files = [root / "nodeconf" / name for name in BUNDLE_MODULES]
    for package in BUNDLE_PACKAGES:
        files += sorted((root / "nodeconf" / package).glob("*.py"))
    members = [(path, str(path.relative_to(root))) for path in files]
    members += [(path, f"{PROGRAMS}/{path.name}") for path in sorted(locate_tree().programs.glob("*.py"))]
    for name in VENDORED:
        library = Path(str(importlib.import_module(name).__file__)).parent
        members += [(path, f"{name}/{path.relative_to(library)}") for path in sorted(library.rglob("*.py"))]
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as scratch, tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, arcname in [*members, *_bytecode(members, Path(scratch))]:
            info = archive.gettarinfo(str(path), arcname=arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = 0o644
            with open(path, "rb") as handle:
                archive.addfile(info, handle)
    return buffer.getvalue()


def _bytecode(members: list[tuple[Path, str]], scratch: Path) -> list[tuple[Path, str]]:
    """Each imported module's checked-hash .pyc, compiled into scratch, with its place in the tree (the workload
    programs run as scripts: none for them)."""
    compiled = []
    for path, arcname in members:
        if arcname.startswith(f"{PROGRAMS}/"):
            continue
        target = importlib.util.cache_from_source(arcname)
        py_compile.compile(str(path), cfile=str(scratch / target), dfile=arcname, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        compiled.append((scratch / target, target))
    return compiled
