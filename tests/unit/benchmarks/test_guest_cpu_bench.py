"""benchmarks/guest_cpu_bench.py: the steps a script prints, the guest's factor over the host, and the host's
script, which must leave the host's cgroups alone (only the guest makes cgroups)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import guest_cpu_bench  # noqa: E402


def test_steps_of_a_scripts_output() -> None:
    assert guest_cpu_bench.steps_of("execs_200 7286\n\npython_work 1610\n") == {"execs_200": 7286.0,
                                                                                  "python_work": 1610.0}


def test_the_guests_factor_over_the_host() -> None:
    assert guest_cpu_bench.factor(1610.0, 123.0).strip() == "13.1"
    assert guest_cpu_bench.factor(17.0, None).strip() == "-"  # a step only the guest runs


def test_only_the_guests_script_touches_cgroups() -> None:
    assert "/sys/fs/cgroup" not in guest_cpu_bench.COMMON_SCRIPT
    assert "mkdir" not in guest_cpu_bench.COMMON_SCRIPT
    assert guest_cpu_bench.GUEST_SCRIPT.startswith(guest_cpu_bench.COMMON_SCRIPT)
    assert "/sys/fs/cgroup/nodeconf-guest-cpu-bench" in guest_cpu_bench.GUEST_SCRIPT


def test_the_guest_runs_each_step_once() -> None:
    """A step run twice would cost the guest its time again and report only its second run."""
    steps = re.findall(r"^step (\S+)", guest_cpu_bench.GUEST_SCRIPT, re.MULTILINE)
    assert steps and len(steps) == len(set(steps))
