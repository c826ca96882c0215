"""The cgroup v2 interface files read back as evidence: every file the oracle can expect, and those read besides.

Source: Documentation/admin-guide/cgroup-v2.rst (interface files); the oracle's expectations (nodeconf/semantics).
"""

from __future__ import annotations

from collections.abc import Iterable

from nodeconf import names

# Read for every pod, container and node-level cgroup. memory.stat and the PSI files are costly to read (a stats
# flush per read): callers ask for them as extra files. hugetlb: the x86-64 huge page sizes (2 MiB, 1 GiB).
OBSERVED_FILES = (
    "cgroup.procs", "cpu.weight", "cpu.max", "cpu.stat", "cpuset.cpus",
    "memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max", "memory.oom.group",
    "memory.current", "memory.swap.current", "memory.peak", "memory.events", "memory.swap.events", "pids.current",
    "pids.max", "hugetlb.2MB.max", "hugetlb.1GB.max", "hugetlb.2MB.rsvd.max", "hugetlb.1GB.rsvd.max",
)


def evidence_files(extra_files: Iterable[str] = ()) -> list[str]:
    """The files read per cgroup: the observed set, then validated extras (UnsafeName for a bad file name)."""
    return list(dict.fromkeys((*OBSERVED_FILES, *(names.cgroup_file(f) for f in extra_files))))
