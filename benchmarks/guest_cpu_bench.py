"""The guest's own speed under TCG for each guest CPU model: what a check's work costs inside the reference VM.

Run: .venv/bin/python benchmarks/guest_cpu_bench.py [--cpu max --cpu max,-erms,-fsrm ...] [--rounds 3] [--host]
         [--json]
Boots the reference VM once per CPU model and round (the models alternate, so a drifting host load hits each
alike), runs the same guest script over SSH and prints the median milliseconds of each step per model: 200
fork+execs of /bin/true, 100 `/bin/sh -c` starts that exec (the enforcer's trampoline), 2000 opens, reads and
closes of /proc/self/stat from one Python process (the agent's evidence and state), a fixed piece of interpreted
Python (Fractions, dicts and strings, as the agent's oracle computes), 50 cgroup mkdirs and rmdirs (from one
Python process, as the agent makes them), 5 bare Python starts, and one Python process touching 200 MiB (every
page fault clears a page: the hogs). `--host` runs the same steps but the cgroup ones on this host too, between
the rounds (its python3, read-only but for the 200 MiB): a column `host` and, per model, the guest's factor.
The model is set for this process only (nodeconf.infra.vm.qemu.TCG_CPU); under KVM the model is `host` and
nothing is compared. Issue 31: the guest's CPU time per check is the run's limit on this host.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from nodeconf.infra.vm import qemu
from nodeconf.infra.vm.accel import detect_accel
from nodeconf.infra.vm.image import ensure_image
from nodeconf.infra.vm.machine import VirtualMachine
from nodeconf.infra.vm.progress import StepPrinter

# Each step prints "name milliseconds". The steps any Linux host can run unharmed (nothing written but memory):
COMMON_SCRIPT = r"""
set -e
ms() { echo $(( $(date +%s%N) / 1000000 )); }
step() { name=$1; shift; s=$(ms); "$@" >/dev/null 2>&1; echo "$name $(( $(ms) - s ))"; }
execs() { i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done; }
shells() { i=0; while [ $i -lt 100 ]; do /bin/sh -c 'echo x >/dev/null; exec /bin/true'; i=$((i+1)); done; }
pythons() { for i in 1 2 3 4 5; do python3 -I -S -c pass; done; }
touch200() { python3 -I -S -c 'b = bytearray(200 << 20)
for i in range(0, len(b), 4096): b[i] = 1'; }
step execs_200 execs
step sh_starts_100 shells
python3 -I -S -c '
import os, time
from fractions import Fraction
t = time.monotonic()
for i in range(2000):
    fd = os.open("/proc/self/stat", os.O_RDONLY)
    os.read(fd, 65536)
    os.close(fd)
print("proc_reads_2000", round((time.monotonic() - t) * 1000))
t = time.monotonic()
total, counts = Fraction(0), {}
for i in range(1, 20001):
    total += Fraction(i, 1024) * 3 // 2
    key = f"pod-{i % 97}/{i % 7}"
    counts[key] = counts.get(key, 0) + len(key.split("/"))
print("python_work", round((time.monotonic() - t) * 1000))
'
step python_starts_5 pythons
step touch_200MiB touch200
"""
# The guest's steps besides: the cgroups are made under a directory of the benchmark's own.
GUEST_SCRIPT = COMMON_SCRIPT + r"""
B=/sys/fs/cgroup/nodeconf-guest-cpu-bench
mkdir "$B"
python3 -I -S -c '
import os, sys, time
base = sys.argv[1]
for name, op in (("cgroup_mkdir_50", os.mkdir), ("cgroup_rmdir_50", os.rmdir)):
    t = time.monotonic()
    for i in range(50):
        op(f"{base}/c{i}")
    print(name, round((time.monotonic() - t) * 1000))
' "$B"
rmdir "$B"
"""
HOST = "host"


def measure(cpu: str) -> dict[str, float]:
    """One boot with this guest CPU model: the script's steps in milliseconds."""
    qemu.TCG_CPU = cpu
    image = ensure_image(progress=StepPrinter("image"))
    with VirtualMachine(image, name="guest-cpu-bench") as machine, machine.ssh() as node:
        out = node.run(["sh", "-c", GUEST_SCRIPT], timeout=600).expect().text
    return steps_of(out)


def measure_host() -> dict[str, float]:
    """The common steps on this host."""
    out = subprocess.run(["sh", "-c", COMMON_SCRIPT], capture_output=True, text=True, timeout=600, check=True).stdout
    return steps_of(out)


def steps_of(out: str) -> dict[str, float]:
    return {name: float(value) for name, value in (line.split() for line in out.splitlines() if line.strip())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cpu", action="append",
                        help="a qemu -cpu value (repeat; default: `max`, every feature TCG emulates, and TCG_CPU)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--host", action="store_true", help="the common steps on this host too, for the factor")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if detect_accel().name != "tcg":
        print("guest_cpu_bench: the VM runs under KVM with -cpu host; nothing to compare", file=sys.stderr)
        return 0
    models = args.cpu or ["max", qemu.TCG_CPU]
    columns = [*models, *([HOST] if args.host else [])]
    samples: dict[str, dict[str, list[float]]] = {c: {} for c in columns}
    for round_ in range(args.rounds):
        for column in columns if round_ % 2 == 0 else reversed(columns):
            for name, value in (measure_host() if column == HOST else measure(column)).items():
                samples[column].setdefault(name, []).append(value)
            print(f"round {round_ + 1}/{args.rounds} {column}: done", file=sys.stderr)
    medians = {m: {k: statistics.median(v) for k, v in steps.items()} for m, steps in samples.items()}
    if args.json:
        print(json.dumps({"medians_ms": medians, "samples_ms": samples}, indent=2))
        return 0
    steps = list(medians[models[0]])
    factors = models if args.host else []
    print(f"{'step (median ms)':<18}" + "".join(f"{c:>20}" for c in columns)
          + "".join(f"{'x ' + m:>20}" for m in factors))
    for step in steps:
        print(f"{step:<18}" + "".join(f"{medians[c][step]:>20.0f}" if step in medians[c] else f"{'-':>20}"
                                      for c in columns)
              + "".join(factor(medians[m][step], medians[HOST].get(step)) for m in factors))
    return 0


def factor(guest: float, host: float | None) -> str:
    """The guest's time as a multiple of the host's, right-aligned ("-" for a step the host does not run)."""
    return f"{guest / host:>20.1f}" if host else f"{'-':>20}"


if __name__ == "__main__":
    sys.exit(main())
