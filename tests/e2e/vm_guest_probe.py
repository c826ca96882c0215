"""Run on the VM (stdin to python3): one workload in a fresh child cgroup, sampled, then cleaned up.

Usage: python3 - '{"cgroup": NAME, "settings": {FILE: VALUE}, "workload": {"kind": "hog", "mib": N}
                   | {"kind": "busy", "seconds": S}, "sample": [FILE or FILE:KEY...]}'
Prints one JSON object: exit status, per-file samples and peaks, flat-keyed event files, wall time.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

ROOT = "/sys/fs/cgroup"
CONTROLLERS = "+cpu +memory +pids"
EVENT_FILES = ("memory.events", "memory.swap.events", "cpu.stat")
SAMPLE_INTERVAL = 0.005
HOG_PAUSE = 0.01
DEADLINE = 120.0


def hog(mib: int) -> None:
    """Allocate and touch mib MiB in 1 MiB chunks, then exit normally.

    Paced at HOG_PAUSE per MiB so that a full swap limit lasts across several samples before the OOM kill:
    at full speed under TCG the last samples before the kill could miss the peak.
    """
    chunk = b"\xa5" * (1 << 20)
    held = []
    for _ in range(mib):
        held.append(bytearray(chunk))
        time.sleep(HOG_PAUSE)
    os._exit(0 if len(held) == mib else 1)


def busy(seconds: float) -> None:
    """Spin on the CPU for the given wall time."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    os._exit(0)


def read_flat(path: str) -> dict[str, int]:
    """A flat-keyed cgroup file (`key value` lines) as a dict."""
    try:
        with open(path) as handle:
            return {key: int(value) for key, value in (line.split() for line in handle if line.strip())}
    except FileNotFoundError:
        return {}


def read_int(path: str) -> int:
    """A single-number cgroup file, or one key of a flat-keyed file written as `FILE:KEY`."""
    name, _, key = path.partition(":")
    if key:
        return read_flat(name).get(key, 0)
    with open(path) as handle:
        return int(handle.read().strip())


def main() -> None:
    spec = json.loads(sys.argv[1])
    directory = os.path.join(ROOT, spec["cgroup"])
    with open(os.path.join(ROOT, "cgroup.subtree_control"), "w") as handle:
        handle.write(CONTROLLERS)
    os.mkdir(directory)
    pid = 0
    try:
        for name, value in spec["settings"].items():
            with open(os.path.join(directory, name), "w") as handle:
                handle.write(value)
        workload = spec["workload"]
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                with open(os.path.join(directory, "cgroup.procs"), "w") as handle:
                    handle.write(str(os.getpid()))
                if workload["kind"] == "hog":
                    hog(int(workload["mib"]))
                busy(float(workload["seconds"]))
            finally:
                os._exit(1)
        samples: dict[str, list[int]] = {name: [] for name in spec["sample"]}
        status = 0
        while time.monotonic() - started < DEADLINE:
            for name, series in samples.items():
                series.append(read_int(os.path.join(directory, name)))
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
            time.sleep(SAMPLE_INTERVAL)
        wall = time.monotonic() - started
        events = {name: read_flat(os.path.join(directory, name)) for name in EVENT_FILES}
        peak_file = os.path.join(directory, "memory.peak")
        result = {
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timed_out": pid != 0,
            "wall_seconds": wall,
            "samples": samples,
            "peaks": {name: max(series, default=0) for name, series in samples.items()},
            "memory_peak": read_int(peak_file) if os.path.exists(peak_file) else None,
            "events": events,
        }
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for _ in range(100):
            try:
                os.rmdir(directory)
                break
            except OSError:
                time.sleep(0.05)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
