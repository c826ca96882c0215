"""benchmarks/side_by_side_bench.py: the modes' order per round and the figures of a round (pods per second, the
guest's busy fraction, the operations' medians) and their medians over rounds."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import side_by_side_bench  # noqa: E402


def test_each_mode_goes_first_in_turn() -> None:
    orders = [side_by_side_bench.rotated(i) for i in range(4)]
    assert [order[0] for order in orders] == ["agent", "serial", "pair", "agent"]
    assert all(sorted(order) == sorted(side_by_side_bench.MODES) for order in orders)


def test_figures_of_one_mode_and_shape() -> None:
    """12 pods in 4 s; /proc/stat's all-CPU line: 300 jiffies busy of 400 between the two readings."""
    found = {"wall": 4.0, "pods": 12, "stat": ["cpu  100 0 100 500 0 0 0 0 0 0\n",
                                                "cpu  250 0 250 600 0 0 0 0 0 0\n"],
             "ops": {"run": [300.0, 100.0, 200.0], "evidence": [20.0, 30.0], "delete": [50.0]}}
    assert side_by_side_bench.figures(found) == {"pods_per_s": 3.0, "busy": 0.75, "run_ms": 200.0,
                                                 "evidence_ms": 25.0, "delete_ms": 50.0}


def test_medians_over_rounds() -> None:
    rounds = [{"pair": {"three": {"pods_per_s": value, "busy": busy}}}
              for value, busy in ((1.0, 0.5), (3.0, 0.9), (2.0, 0.7))]
    assert side_by_side_bench.medians(rounds) == {"pair": {"three": {"pods_per_s": 2.0, "busy": 0.7}}}
