"""workloads/programs/memhog.py --reclaim: room below the tightest limit, reclaim requests, and "swap full"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.workloads.workload_programs import load_program

MIB = 2**20
memhog = load_program("memhog")


def cgroup(path: Path, **files: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (path / name.replace("_", ".")).write_text(value + "\n")
    return path


def test_room_is_the_least_over_the_cgroups_that_set_a_limit(tmp_path: Path) -> None:
    pod = cgroup(tmp_path / "pod", memory_max=str(64 * MIB), memory_current=str(60 * MIB))
    own = cgroup(tmp_path / "pod" / "c", memory_max="max", memory_current=str(50 * MIB))
    assert memhog.room([str(own), str(pod)], "memory.max", "memory.current") == 4 * MIB
    assert memhog.room([str(own)], "memory.max", "memory.current") is None


def test_make_room_asks_reclaim_for_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = cgroup(tmp_path / "c", memory_max=str(32 * MIB), memory_current=str(30 * MIB),
                 memory_swap_max=str(16 * MIB), memory_swap_current="0", memory_reclaim="")
    written: list[str] = []

    def reclaim(path: str, text: str) -> None:
        assert path == f"{own}/memory.reclaim"
        written.append(text)
        with open(own / "memory.current", "w") as current:  # the kernel reclaimed
            current.write(str(20 * MIB))

    monkeypatch.setattr(memhog, "write", reclaim)
    assert memhog.make_room([str(own)], MIB) is True
    # 32 - 30 = 2 MiB free; 1 MiB plus 4 MiB headroom wanted: 3 MiB asked for
    assert written == [str(3 * MIB)]


def test_make_room_reports_swap_full(tmp_path: Path) -> None:
    own = cgroup(tmp_path / "c", memory_max=str(32 * MIB), memory_current=str(31 * MIB),
                 memory_swap_max=str(16 * MIB), memory_swap_current=str(16 * MIB))
    assert memhog.make_room([str(own)], MIB) is False


def test_reclaim_without_its_cgroup_in_view_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A container without the node's cgroup tree: exit 2 with the path, not a silent race with the OOM killer."""
    monkeypatch.setattr(memhog, "CGROUP_ROOT", str(tmp_path))
    monkeypatch.setattr(memhog, "cgroup_dirs", lambda: [f"{tmp_path}/pod/c", f"{tmp_path}/pod", str(tmp_path)])
    assert memhog.main(["8", "--reclaim"]) == 2
    assert capsys.readouterr().err == f"memhog: --reclaim needs {tmp_path}/pod/c/memory.reclaim, which this " \
                                      "process cannot see\n"


def _tree(root: Path, procs: dict[str, str]) -> None:
    """A cgroup tree whose cgroup.procs lists `procs` (relative directory → content)."""
    for rel, text in procs.items():
        (root / rel).mkdir(parents=True, exist_ok=True)
        (root / rel / "cgroup.procs").write_text(text)


def test_own_cgroup_is_the_path_proc_self_cgroup_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memhog, "CGROUP_ROOT", str(tmp_path))
    _tree(tmp_path, {".": "1\n", "kubepods/pod/c": f"{os.getpid()}\n"})
    assert memhog.cgroup_dirs("0::/kubepods/pod/c\n") == [f"{tmp_path}/kubepods/pod/c", f"{tmp_path}/kubepods/pod",
                                                           f"{tmp_path}/kubepods", str(tmp_path)]


def test_in_a_cgroup_namespace_own_cgroup_is_the_one_listing_this_process(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """containerd gives a container on cgroup v2 its own cgroup namespace: /proc/self/cgroup says `0::/`, while the
    node's tree is mounted at /sys/fs/cgroup; cgroup.procs shows tasks outside the reader's pid namespace as 0."""
    monkeypatch.setattr(memhog, "CGROUP_ROOT", str(tmp_path))
    _tree(tmp_path, {".": "0\n0\n", "kubepods/pod": "", "kubepods/pod/pause": "0\n",
                     "kubepods/pod/cri-containerd-1.scope": f"{os.getpid()}\n", "system.slice": "0\n"})
    assert memhog.cgroup_dirs("0::/\n")[:2] == [f"{tmp_path}/kubepods/pod/cri-containerd-1.scope",
                                                f"{tmp_path}/kubepods/pod"]


@pytest.mark.parametrize(("argv", "expected"), [
    (["256"], (256, 0.0, 0.0, False, False, "")),
    (["256", "64", "--hold", "2.5", "--exit"], (256, 64.0, 2.5, True, False, "")),
    (["52", "--reclaim", "--wait-for", "/tmp/go"], (52, 0.0, 0.0, False, True, "/tmp/go")),
])
def test_command_line(argv: list[str], expected: tuple[object, ...]) -> None:
    args = memhog.Args(argv)
    assert (args.mib, args.rate, args.hold, args.exit, args.reclaim, args.wait_for) == expected


@pytest.mark.parametrize(("argv", "why"), [
    ([], "MIB and at most a RATE"), (["1", "2", "3"], "MIB and at most a RATE"), (["x"], "invalid literal"),
    (["8", "--hold"], "an option lacks its value"), (["8", "--fast"], "unknown option --fast"),
])
def test_a_bad_command_line_exits_2_with_the_usage(argv: list[str], why: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        memhog.Args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(memhog.USAGE + "\nmemhog: ") and why in err
