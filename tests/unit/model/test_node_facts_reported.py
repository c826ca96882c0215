"""Node facts as reports name them: the measured cpu.weight formula is the node's, the accepted one the run's;
the kernel's release; and /proc/meminfo read once for every driver."""

from __future__ import annotations

import pytest

from nodeconf.node_facts import NOT_MEASURED, NodeFacts, kernel_major_minor, meminfo_bytes, reported_facts


@pytest.mark.parametrize(("measured", "reported"), [("linear", "linear"), ("neither", "neither"),
                                                    ("nonlinear", "nonlinear"), ("", NOT_MEASURED)])
def test_the_reported_formula_is_the_measured_one(measured: str, reported: str) -> None:
    facts = NodeFacts(memory_capacity=1 << 30, cpu_weight_formula="nonlinear", measured_cpu_weight_formula=measured)
    entries = reported_facts(facts)
    assert entries["cpu_weight_formula"] == reported
    assert "measured_cpu_weight_formula" not in entries


def test_every_other_fact_is_reported_in_field_order() -> None:
    facts = NodeFacts(memory_capacity=1 << 30, runtime="crun", runtime_version="1.21", psi=True)
    entries = reported_facts(facts)
    assert list(entries)[:3] == ["memory_capacity", "swap_capacity", "cpu_capacity_milli"]
    assert (entries["runtime"], entries["runtime_version"], entries["psi"]) == ("crun", "1.21", True)


# Lines as Linux 6.1 prints them (fs/proc/meminfo.c: show_val_kb's "%8lu kB", hugetlb_report_meminfo's counts).
MEMINFO = ("MemTotal:        2018436 kB\nSwapTotal:             0 kB\nHugePages_Total:       4\n"
           "Hugepagesize:       2048 kB\n")


def test_meminfo_is_read_in_bytes_and_counts_stay_counts() -> None:
    assert meminfo_bytes(MEMINFO) == {"MemTotal": 2018436 * 1024, "SwapTotal": 0, "HugePages_Total": 4,
                                      "Hugepagesize": 2 * 1024 * 1024}
    assert meminfo_bytes("kernel_version=6.1\nMemTotal: lots kB\n") == {}


@pytest.mark.parametrize(("version", "release", "has_reclaim"), [
    ("6.1.0-57-amd64", (6, 1), True), ("5.10.0-30-amd64", (5, 10), False), ("5.19.17", (5, 19), True),
    ("", None, True), ("7", None, True), ("x.1", None, True),
])
def test_kernel_release_and_features(version: str, release: tuple[int, int] | None, has_reclaim: bool) -> None:
    """major.minor of the uname release; an unreadable one counts as new enough (a feature check then runs)."""
    assert kernel_major_minor(version) == release
    assert NodeFacts(memory_capacity=1, kernel_version=version).has_kernel_feature("memory.reclaim") == has_reclaim
