"""The project's own tests on two pytest-xdist workers (`make test`: `-n 2 --dist loadgroup`): what must share a
worker, and what starts first.

- An end-to-end module's tests share the VM its module-scoped fixtures boot: one xdist group per module, so that
  VM boots once. Tests on the session's reference VM form one group, so it boots once.
- The modules in INDEPENDENT start a whole `nodeconf run` (or pytest) with its own VM per test: no group, so their
  tests spread over both workers.
- The longest units start first (FIRST), one on each worker, so that neither is left alone with one at the end.
- Hypothesis has no per-example deadline: a wall-time bound is a flake on a loaded machine, not a finding.

Source: pytest-xdist's `loadgroup` distribution (an `xdist_group` mark keeps a group on one worker; a worker is
given the next unit in collection order when it has at most two tests left).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

E2E = Path(__file__).parent / "e2e"
INDEPENDENT = frozenset({"test_suite_self.py", "test_interrupt.py", "test_matrix.py", "test_containerd.py"})
# Each ≈ 4-5 min on this machine (CI durations): the main job's whole run and the vendor image's firmware boot.
FIRST = ("test_main_job.py", "test_vendor_image.py")
REFERENCE_VM_GROUP = "reference-vm"
# Tests that build the checkout's wheel: pip builds in the tree (its build/), so two at once would race.
WHEEL_BUILDERS = frozenset({"test_wheel.py", "test_docs_ci.py"})
WHEEL_GROUP = "test_wheel"

settings.register_profile("nodeconf", deadline=None)
settings.load_profile("nodeconf")


def xdist_group(item: pytest.Item) -> str | None:
    """The group an item must run in (None: any worker)."""
    path = Path(item.path)
    if "reference_vm" in getattr(item, "fixturenames", ()):
        return REFERENCE_VM_GROUP
    if path.name in WHEEL_BUILDERS:
        return WHEEL_GROUP
    if path.parent != E2E or path.name in INDEPENDENT:
        return None
    return path.stem


def start_rank(item: pytest.Item) -> int:
    """0, 1, … for the FIRST modules in their order; len(FIRST) for every other item."""
    path = Path(item.path)
    return FIRST.index(path.name) if path.parent == E2E and path.name in FIRST else len(FIRST)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=start_rank)  # stable: the rest keep their collection order
