"""`nodeconf run`'s signal handling: pytest runs in its own process group, the first SIGINT/SIGTERM is forwarded
once as SIGINT, a second one is only noted, a third or an overlong cleanup kills the group; cluster cleanup holds
signals back until it is done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nodeconf.cli.signals import PytestGroup
from nodeconf.nodes.shield import signals_deferred

# A stand-in for pytest: counts SIGINTs, takes `cleanup` seconds to "tear down" after the first one.
CHILD = '''
import signal, sys, time
from pathlib import Path
log = Path(sys.argv[1]); cleanup = float(sys.argv[2]); seen = []
def on_int(signum, frame):
    seen.append(signum); log.write_text(f"{len(seen)}\\n")
signal.signal(signal.SIGINT, on_int)
log.write_text("ready\\n")
while not seen:
    time.sleep(0.01)
time.sleep(cleanup)
log.write_text(f"{len(seen)} cleaned\\n")
sys.exit(2)
'''


def _child(tmp_path: Path, cleanup: float) -> tuple[list[str], Path]:
    script, log = tmp_path / "child.py", tmp_path / "log"
    script.write_text(CHILD)
    return [sys.executable, str(script), str(log), str(cleanup)], log


def _signal_when_ready(log: Path, signum: int, times: int) -> threading.Thread:
    """Send `signum` to this process `times` times, 0.2 s apart, once the child is ready."""
    def run() -> None:
        while not log.exists() or "ready" not in log.read_text():
            time.sleep(0.01)
        for _ in range(times):
            os.kill(os.getpid(), signum)
            time.sleep(0.2)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_first_signal_is_forwarded_once_and_cleanup_finishes(tmp_path: Path, signum: int) -> None:
    argv, log = _child(tmp_path, cleanup=1.0)
    previous = signal.getsignal(signum)
    with PytestGroup(argv, grace=30) as group:
        assert os.getpgid(group.process.pid) == group.process.pid if group.process else False
        _signal_when_ready(log, signum, 2)
        status = group.wait()
    assert status == 2
    assert log.read_text() == "1 cleaned\n", "the second signal must not reach pytest"
    assert group.received == [signal.Signals(signum).name] * 2 and not group.killed
    assert signal.getsignal(signum) is previous


def test_third_signal_kills_the_group(tmp_path: Path) -> None:
    argv, log = _child(tmp_path, cleanup=60.0)
    with PytestGroup(argv, grace=60) as group:
        _signal_when_ready(log, signal.SIGTERM, 3)
        started = time.monotonic()
        status = group.wait()
    assert status == -signal.SIGKILL and group.killed
    assert time.monotonic() - started < 10


def test_a_cleanup_longer_than_the_grace_is_killed(tmp_path: Path) -> None:
    argv, log = _child(tmp_path, cleanup=60.0)
    with PytestGroup(argv, grace=1.0) as group:
        _signal_when_ready(log, signal.SIGTERM, 1)
        status = group.wait()
    assert status == -signal.SIGKILL and group.killed
    assert log.read_text() == "1\n"


def test_pytest_gets_sigterm_when_nodeconf_dies(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG: a SIGKILL of nodeconf still lets pytest clean up."""
    log, child, parent = tmp_path / "log", tmp_path / "child.py", tmp_path / "parent.py"
    child.write_text(
        "import signal, sys, time\n"
        "def on_term(signum, frame):\n"
        f"    open({str(log)!r}, 'w').write('term')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        f"open({str(log)!r}, 'w').write('ready')\n"
        "time.sleep(60)\n")
    parent.write_text(
        "import sys, time\nfrom nodeconf.cli.signals import PytestGroup\n"
        f"PytestGroup([sys.executable, {str(child)!r}]).__enter__()\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(parent)], cwd=Path(__file__).resolve().parents[3])
    deadline = time.monotonic() + 30
    while (not log.exists() or log.read_text() != "ready") and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    while log.read_text() != "term" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text() == "term"


def test_signals_are_held_during_cluster_cleanup_then_delivered() -> None:
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt), signals_deferred("test cleanup"):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        done.append("cleanup finished")
    assert done == ["cleanup finished"]
