"""The guest's own speed under TCG for each guest CPU model: what a check's work costs inside the reference VM.

Run: .venv/bin/python benchmarks/guest_cpu_bench.py [--cpu max --cpu max,-erms,-fsrm ...] [--rounds 3] [--json]
Boots the reference VM once per CPU model and round (the models alternate, so a drifting host load hits each
alike), runs the same guest script over SSH and prints the median milliseconds of each step per model: 200
fork+execs of /bin/true, 100 `/bin/sh -c` starts that exec (the enforcer's trampoline), 50 cgroup mkdirs and
rmdirs (from one Python process, as the agent makes them), 5 bare Python starts, and one Python process touching
200 MiB (every page fault clears a page: the hogs).
The model is set for this process only (nodeconf.infra.vm.qemu.TCG_CPU); under KVM the model is `host` and
nothing is compared. Issue 31: the guest's CPU time per check is the run's limit on this host.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from nodeconf.infra.vm import qemu
from nodeconf.infra.vm.accel import detect_accel
from nodeconf.infra.vm.image import ensure_image
from nodeconf.infra.vm.machine import VirtualMachine
from nodeconf.infra.vm.progress import StepPrinter

# Each step prints "name milliseconds"; the cgroups are made under a directory of the benchmark's own.
GUEST_SCRIPT = r"""
set -e
ms() { echo $(( $(date +%s%N) / 1000000 )); }
step() { name=$1; shift; s=$(ms); "$@" >/dev/null 2>&1; echo "$name $(( $(ms) - s ))"; }
execs() { i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done; }
shells() { i=0; while [ $i -lt 100 ]; do /bin/sh -c 'echo x >/dev/null; exec /bin/true'; i=$((i+1)); done; }
pythons() { for i in 1 2 3 4 5; do python3 -I -S -c pass; done; }
touch200() { python3 -I -S -c 'b = bytearray(200 << 20)
for i in range(0, len(b), 4096): b[i] = 1'; }
B=/sys/fs/cgroup/nodeconf-guest-cpu-bench
mkdir "$B"
step execs_200 execs
step sh_starts_100 shells
python3 -I -S -c '
import os, sys, time
base = sys.argv[1]
for name, op in (("cgroup_mkdir_50", os.mkdir), ("cgroup_rmdir_50", os.rmdir)):
    t = time.monotonic()
    for i in range(50):
        op(f"{base}/c{i}")
    print(name, round((time.monotonic() - t) * 1000))
' "$B"
step python_starts_5 pythons
step touch_200MiB touch200
rmdir "$B"
"""


def measure(cpu: str) -> dict[str, float]:
    """One boot with this guest CPU model: the script's steps in milliseconds."""
    qemu.TCG_CPU = cpu
    image = ensure_image(progress=StepPrinter("image"))
    with VirtualMachine(image, name="guest-cpu-bench") as machine, machine.ssh() as node:
        out = node.run(["sh", "-c", GUEST_SCRIPT], timeout=600).expect().text
    return {name: float(value) for name, value in (line.split() for line in out.splitlines() if line.strip())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cpu", action="append",
                        help="a qemu -cpu value (repeat; default: `max`, every feature TCG emulates, and TCG_CPU)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if detect_accel().name != "tcg":
        print("guest_cpu_bench: the VM runs under KVM with -cpu host; nothing to compare", file=sys.stderr)
        return 0
    models = args.cpu or ["max", qemu.TCG_CPU]
    samples: dict[str, dict[str, list[float]]] = {m: {} for m in models}
    for round_ in range(args.rounds):
        for cpu in models if round_ % 2 == 0 else reversed(models):
            for name, value in measure(cpu).items():
                samples[cpu].setdefault(name, []).append(value)
            print(f"round {round_ + 1}/{args.rounds} {cpu}: done", file=sys.stderr)
    medians = {m: {k: statistics.median(v) for k, v in steps.items()} for m, steps in samples.items()}
    if args.json:
        print(json.dumps({"medians_ms": medians, "samples_ms": samples}, indent=2))
        return 0
    steps = list(next(iter(medians.values())))
    print(f"{'step (median ms)':<18}" + "".join(f"{m:>20}" for m in models))
    for step in steps:
        print(f"{step:<18}" + "".join(f"{medians[m][step]:>20.0f}" for m in models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
