"""The agent pushed to the node runs on Python 3.9 (Debian bullseye ships 3.9.2): every pushed file parses with the
3.9 grammar and uses nothing 3.9 rejects when it runs, and a real 3.9 (this machine's, and bullseye's own in the
cached bullseye node image, by chroot) imports the bundle and serves a pod through the driver."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeconf.enforcer.daemons import CONTAINERD_SOCKET, CRIO_SOCKET
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.nodes.enforced.bundle import BUNDLE_MODULES, VENDORED
from nodeconf.nodes.enforced.node import EnforcedNode, EnforcerSettings
from nodeconf.nodes.transport.local import LocalTransport
from nodeconf.semantics.expect import expect
from nodeconf.semantics.profile import profile_for
from suites.toolkit.builders import typed_pod
from tests.unit.enforcer.bullseye_chroot import bullseye_image, bullseye_root, image_python, why_not
from tests.unit.enforcer.enforcer_support import res_demo
from tests.unit.enforcer.python39_support import (
    ENUM_CHECK,
    find_python39,
    pushed_files,
    python39_problems,
    unpack_bundle,
)

PUSHED = pushed_files()
PYTHON39 = find_python39()


def test_the_bundle_holds_the_model_semantics_enforcer_and_programs() -> None:
    assert {f"nodeconf/{m}" for m in BUNDLE_MODULES} <= set(PUSHED)
    assert {p.rsplit("/", 1)[0] for p in PUSHED} == {"nodeconf", "nodeconf/semantics", "nodeconf/enforcer",
                                                     "nodeconf/enforcer/cri", "workloads/programs", *VENDORED}


@pytest.mark.parametrize("path", sorted(PUSHED))
def test_every_pushed_file_is_python39_clean(path: str) -> None:
    assert python39_problems(PUSHED[path].decode(), path) == []


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("match x:\n    case 1:\n        pass\n", "3.9 grammar"),
        ("try:\n    pass\nexcept* ValueError:\n    pass\n", "3.9 grammar"),
        ("ok = isinstance(x, int | str)\n", "`int | str` evaluated at runtime"),
        ("Alias = Foo | None\n", "`Foo | None` evaluated at runtime"),
        ("ok = isinstance(x, list | dict | tuple)\n", "`list | dict | tuple` evaluated at runtime"),
        ("def f(x: int | None) -> None:\n    pass\n", "without `from __future__ import annotations`"),
        ("pairs = zip(a, b, strict=True)\n", "zip(strict=)"),
        ("@dataclass(frozen=True, slots=True)\nclass A:\n    pass\n", "dataclass(slots=)"),
        ("@dataclasses.dataclass(kw_only=True)\nclass A:\n    pass\n", "dataclass(kw_only=)"),
        ("proc = subprocess.Popen(argv, process_group=0)\n", "Popen(process_group=)"),
        ("import tomllib\n", "import tomllib"),
        ("from enum import Enum, StrEnum\n", "from enum import StrEnum"),
        ("from typing import Any, Self\n", "from typing import Self"),
        ("from typing import NotRequired, TypedDict\n", "from typing import NotRequired"),
        ("import datetime\nnow = datetime.datetime.now(datetime.UTC)\n", "datetime.UTC"),
        ("from itertools import pairwise\n", "from itertools import pairwise"),
    ],
)
def test_the_checker_finds_what_python39_rejects(source: str, problem: str) -> None:
    found = python39_problems(source)
    assert len(found) == 1 and problem in found[0], found


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations\ndef f(x: int | None) -> list[str] | None:\n    return None\n",
        "from __future__ import annotations\nclass D(TypedDict):\n    a: NotRequired[int | None]\n",
        "flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND\nmask = POLLPRI | POLLERR\nbits = a | 4\n",
        "ok = isinstance(x, (int, str))\nAlias = Union[Foo, None]\n",
        "if TYPE_CHECKING:\n    from typing import NotRequired\n",
        "try:\n    import tomllib\nexcept ImportError:\n    tomllib = None\n",
        "if sys.version_info >= (3, 11):\n    from enum import StrEnum\nelse:\n    from enum import Enum\n",
        "pairs = zip(a, b)\n@dataclass(frozen=True)\nclass A:\n    x: int = 0\n",
    ],
)
def test_the_checker_passes_what_python39_accepts(source: str) -> None:
    assert python39_problems(source) == []


@pytest.mark.parametrize(
    "source",
    ["if sys.version_info >= (3, 11):\n    pass\nelse:\n    import tomllib\n",
     "try:\n    pass\nexcept ImportError:\n    import tomllib\n",
     "try:\n    import json\nexcept ValueError:\n    import tomllib\n"],
    ids=["else-of-version-check", "import-error-handler", "other-handler"],
)
def test_the_checker_looks_where_python39_runs(source: str) -> None:
    assert python39_problems(source) == ["line 4: import tomllib (not in 3.9)"]


@pytest.fixture(params=["python3.9", "bullseye"])
def node_python(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A 3.9 the agent runs on and a work directory it sees at the same path: this machine's python3.9, or
    bullseye's own python3 (3.9.2) in the cached bullseye node image, mounted read-only and entered by chroot."""
    if request.param == "python3.9":
        if PYTHON39 is None:
            pytest.skip("no Python 3.9 here (set NODECONF_PYTHON39 or put python3.9 on PATH)")
        yield PYTHON39, tmp_path
        return
    reason, disk = why_not(), bullseye_image()
    if reason or disk is None:
        pytest.skip(reason or "no bullseye image")
    work = Path(tempfile.mkdtemp(prefix="nodeconf-bullseye-", dir="/tmp"))
    try:
        with bullseye_root(disk, tmp_path / "root", work) as root:
            python = work / "python3"
            python.write_text(f'#!/bin/sh\nexec chroot {shlex.quote(str(root))} /usr/bin/python3 "$@"\n')
            python.chmod(0o755)
            version = subprocess.run([python, "-V"], capture_output=True, text=True, timeout=30, check=True).stdout
            assert version.split() == ["Python", image_python(disk).split("-")[0]]
            yield str(python), work
    finally:
        shutil.rmtree(work)


def test_a_python39_imports_every_pushed_module_and_answers_help(node_python: tuple[str, Path]) -> None:
    python, work = node_python
    modules = [m for m in unpack_bundle(work / "bundle") if m.startswith("nodeconf")]
    env = {**os.environ, "PYTHONPATH": str(work / "bundle"), "PYTHONDONTWRITEBYTECODE": "1"}
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n" + ENUM_CHECK
    programs = [str(p) for p in sorted((work / "bundle" / "workloads" / "programs").glob("*.py"))]
    compile_programs = "import sys\nfor path in sys.argv[1:]:\n    compile(open(path).read(), path, 'exec')\n"
    for argv in ([python, "-c", script, *modules], [python, "-c", compile_programs, *programs]):
        ran = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert (ran.returncode, ran.stderr) == (0, "")
    helped = subprocess.run([python, "-m", "nodeconf.enforcer", "--help"], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert helped.returncode == 0 and "{serve,cleanup,runtime-probe}" in helped.stdout, helped.stderr
    probed = subprocess.run([python, "-m", "nodeconf.enforcer", "runtime-probe"], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert (probed.returncode, probed.stderr) == (0, "")
    assert [s["socket"] for s in json.loads(probed.stdout)["sockets"]] == [CONTAINERD_SOCKET, CRIO_SOCKET]


def test_the_agent_serves_a_pod_under_python39(node_python: tuple[str, Path]) -> None:
    """The driver pushes the agent, which the 3.9 runs as the daemon: a pod's files match the oracle, resize,
    exec, and the stop leaves nothing (the agent's root is a temporary tree, as in test_nodes_enforced)."""
    python, work = node_python
    (work / "cgroup").mkdir()
    settings = EnforcerSettings(cgroup_root=str(work / "cgroup"), remote_dir=str(work / "opt"),
                                state_dir=str(work / "state"), python=python, backoff=0.1, stand_in=True)
    node = EnforcedNode(LocalTransport(), settings, spec="local").start()
    try:
        agent_pid = int((work / "state" / "agent.pid").read_text().split()[0])
        assert os.readlink(f"/proc/{agent_pid}/exe").endswith("python3.9")
        handle = node.run(typed_pod(res_demo()))
        assert handle.admitted
        evidence = handle.evidence()
        expected = expect([handle.pod], node.facts(), KubeletConfig(), profile_for("1.38")).pod("res-demo")
        hello = evidence.container("hello")
        assert {f: hello.cgroup[f] for f in expected.container("hello").cgroup.files} == \
            {f: e.value for f, e in expected.container("hello").cgroup.files.items()}
        assert hello.cgroup["cpu.weight"] == "35"
        assert evidence.status.qos_class == "Burstable" and evidence.status.container("hello").running
        status = handle.resize({"spec": {"containers": [{"name": "hello", "resources": {"limits": {"cpu": "1"}}}]}})
        assert status.status == "Applied"
        assert handle.evidence().container("hello").cgroup.cpu_max() == (100000, 100000)
        result = handle.exec("hello", ["sh", "-c", "echo out; exit 3"])
        assert (result.rc, result.stdout) == (3, "out\n")
    finally:
        node.close()
    assert [p.name for p in (work / "cgroup").iterdir()] == ["cgroup.subtree_control"]
    assert not (work / "opt").exists() and not (work / "state").exists()
