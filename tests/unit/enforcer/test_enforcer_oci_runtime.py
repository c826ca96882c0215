"""The runtime command lines the agent uses (runc/crun CLI: run --detach --pid-file, update --resources FILE,
kill, delete --force, list --quiet, --version), against a stand-in runtime that records its arguments; the real
runtimes run in tests/e2e/test_runtimes.py."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path

import pytest

from nodeconf.enforcer.oci_runtime import PROBE_CGROUP, OciRuntime, RuntimeCommandError
from nodeconf.enforcer.systemd_tree import SystemdTree

# A stand-in `runc`: records each call, runs `run`'s and `create`'s container as a sleeper whose pid it writes to
# --pid-file; `create` then runs $FAKE_WEIGHTS, the cgroup files a runtime would write.
FAKE = r"""#!/bin/sh
[ "$1" = --version ] && { echo "runc version 1.1.5"; echo "commit: v1.1.5"; exit 0; }
echo "$*" >> "$FAKE_DIR/calls"
root=$2; shift 2
[ "$1" = --systemd-cgroup ] && shift
case "$1" in
  run) mkdir -p "$root"; [ "$5" = bad ] && { echo "no such file: rootfs/bin/x" >&2; exit 1; }
       sleep 60 </dev/null >/dev/null 2>&1 & echo $! > "$4"; echo $! > "$FAKE_DIR/$5.pid"; echo started;;
  create) sleep 60 </dev/null >/dev/null 2>&1 & echo $! > "$3"; echo $! > "$FAKE_DIR/$4.pid"
          [ -z "$FAKE_WEIGHTS" ] || sh -c "$FAKE_WEIGHTS";;
  update) cp "$3" "$FAKE_DIR/update.json";;
  kill) kill -9 "$(cat "$FAKE_DIR/$2.pid")";;
  delete) [ -f "$FAKE_DIR/$3.pid" ] || { echo "container $3 does not exist" >&2; exit 1; }
          kill -9 "$(cat "$FAKE_DIR/$3.pid")" 2>/dev/null; rm "$FAKE_DIR/$3.pid";;
  hang) exec sleep 30;;
  list) for f in "$FAKE_DIR"/*.pid; do [ -e "$f" ] && basename "$f" .pid; done;;
  *) echo "unknown command $1" >&2; exit 1;;
esac
"""


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> OciRuntime:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "runc").write_text(FAKE)
    (bin_dir / "runc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    return OciRuntime("runc", tmp_path / "state", ("/opt/nodeconf",))


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls").read_text().splitlines()


def test_run_update_stop(runtime: OciRuntime, tmp_path: Path) -> None:
    resources = {"cpu": {"shares": 256}, "memory": {"limit": 1 << 27, "swap": 1 << 27}}
    log = tmp_path / "logs" / "c.log"
    proc = runtime.run("abc", ("sleep", "infinity"), 982, "kubepods/pod1/abc", resources, log)
    assert proc.poll() is None and Path(f"/proc/{proc.pid}").exists()
    spec = json.loads((runtime.bundles / "abc" / "config.json").read_text())
    assert (spec["linux"]["cgroupsPath"], spec["process"]["oomScoreAdj"]) == ("/kubepods/pod1/abc", 982)
    assert log.read_text() == "started\n"  # the runtime's (and the container's) output goes to the log
    new = {"cpu": {"shares": 512}, "memory": {}}
    runtime.update("abc", new)
    assert json.loads((tmp_path / "update.json").read_text()) == new  # the whole linux.resources
    proc.stop()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{proc.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() == 255  # not our child here (no subreaper): gone, exit status unknown
    assert not (runtime.bundles / "abc").exists()
    root = f"--root {runtime.root}"
    assert calls(tmp_path) == [
        f"{root} run --detach --pid-file {runtime.bundles / 'abc' / 'pid'} abc",
        f"{root} update --resources {runtime.bundles / 'abc' / 'resources.json'} abc",
        f"{root} kill abc KILL", f"{root} delete --force abc",
    ]


def test_version_is_the_first_lines_number(runtime: OciRuntime) -> None:
    assert runtime.version() == "1.1.5"


def test_a_failed_command_names_itself_and_the_runtimes_words(runtime: OciRuntime) -> None:
    with pytest.raises(RuntimeCommandError, match=r"`runc run --detach .* bad` failed \(exit 1\): no such file"):
        runtime.run("bad", ("x",), 0, "kubepods/p/bad", {"cpu": {}, "memory": {}}, runtime.bundles / "bad.log")


def test_clear_deletes_what_a_crashed_agent_left(runtime: OciRuntime, tmp_path: Path) -> None:
    runtime.run("left", ("sleep", "infinity"), 0, "kubepods/p/left", {"cpu": {}, "memory": {}}, tmp_path / "l.log")
    assert runtime.clear() == ["left"]
    assert not (tmp_path / "left.pid").exists()


def test_a_runtime_that_is_not_installed_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeCommandError, match="runtime 'crun' is not installed on this node"):
        OciRuntime("crun", tmp_path, ())


def test_a_systemd_cgroup_runtime_gets_the_global_flag_and_a_slice_path(runtime: OciRuntime, tmp_path: Path) -> None:
    """containerd with SystemdCgroup=true: `runc --systemd-cgroup`, cgroupsPath `<pod slice>:cri-containerd:<id>`."""
    runtime.systemd_cgroup = True
    cgroup = "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-abc.scope"
    proc = runtime.run("abc", ("sleep", "infinity"), 0, cgroup, {"cpu": {"shares": 2}}, tmp_path / "c.log")
    spec = json.loads((runtime.bundles / "abc" / "config.json").read_text())
    assert spec["linux"]["cgroupsPath"] == "kubepods-besteffort-pod1.slice:cri-containerd:abc"
    proc.stop()
    assert [line.split()[2] for line in calls(tmp_path)] == ["--systemd-cgroup"] * 3


def test_a_runtime_command_that_hangs_is_killed_and_reported(runtime: OciRuntime) -> None:
    """A call past its bound (the configured runtimeRequestTimeout) ends as a RuntimeCommandError naming the
    command (a StartError for the pod)."""
    assert runtime.timeout == 120  # the kubelet's default runtimeRequestTimeout, 2m0s, until configured
    runtime.bound_requests(0.2)
    with pytest.raises(RuntimeCommandError, match=r"`runc hang` did not return within 0\.2 s \(runtimeRequestTimeout\) "
                                                  "and was killed"):
        runtime._run("hang")


def test_a_slow_command_is_logged_with_its_time(runtime: OciRuntime, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """The agent holds its lock during a runtime command: one slower than SLOW_COMMAND leaves a line in its log."""
    monkeypatch.setattr("nodeconf.enforcer.oci_runtime.SLOW_COMMAND", 0.0)
    with caplog.at_level(logging.WARNING, logger="nodeconf.enforcer"):
        runtime.kill("abc")
    assert re.fullmatch(r"`runc kill abc KILL` took \d+\.\d s", caplog.messages[-1])


def test_the_weight_probe_reads_crun_s_sub_cgroup_not_the_scope(runtime: OciRuntime, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """crun 0.17 under the systemd driver (measured on bullseye): the scope keeps cpu.weight 100, the values are in
    its `container` sub-cgroup (10 for 256 shares, linear). The probe reads where the checks read."""
    root = tmp_path / "cgroup"
    root.mkdir()
    scope = root / PROBE_CGROUP
    monkeypatch.setenv("FAKE_WEIGHTS", f"mkdir -p {scope}/container && echo 100 > {scope}/cpu.weight && "
                                       f"echo 10 > {scope}/container/cpu.weight")
    runtime.systemd_cgroup = True

    def no_systemd(argv: object) -> str:
        raise AssertionError(f"no systemd call expected: {argv}")

    assert runtime.measure_weight(SystemdTree(root, owner="nodeconf test", run=no_systemd)) == 10
    assert [line.split()[3] for line in calls(tmp_path)] == ["create", "kill", "delete"]
