"""The concurrency rule on a node (nodeconf/fixtures/concurrency.py): a runs_alone check never overlaps another check or
another module's shared pods, judged on the start/stop intervals the node's ledger records, and an overlap errors
the check that would start it."""

from __future__ import annotations

import json

import pytest

from nodeconf.fixtures.concurrency import ALONE, BESIDE, Holder, Interval, Ledger, OverlapError, forbidden_overlaps

pytest_plugins = ("pytester",)

# A node object per session; its ledger's intervals are written out when the session lets the node go.
CONFTEST = '''
import json
import pytest
from nodeconf.fixtures.concurrency import ledger, shared_holding

@pytest.fixture(scope="session")
def node():
    the_node = object.__new__(type("FakeNode", (), {}))
    yield the_node
    json.dump([[i.holder.name, i.holder.rule, i.holder.module, i.holder.shared, i.start, i.stop]
               for i in ledger(the_node).closed], open("intervals.json", "w"))

@pytest.fixture(autouse=True)
def _on_node(node):
    pass

@pytest.fixture(scope="module")
def module_pods(node):
    with shared_holding(node, "a, b"):
        yield

@pytest.fixture(scope="session")
def lingering_pods(node):
    """Pods another module started and kept for the whole session: a runs_alone check must not start beside them."""
    with shared_holding(node, "kept"):
        yield
'''


def _run(pytester: pytest.Pytester, modules: dict[str, str]) -> tuple[pytest.RunResult, list[Interval]]:
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("suites")
    for name, body in modules.items():
        pytester.path.joinpath("suites", f"{name}.py").write_text("import pytest\n\n" + body)
    result = pytester.runpytest("-p", "nodeconf.fixtures.markers", "-p", "nodeconf.fixtures.concurrency",
                                "-p", "no:randomly")
    rows = json.loads(pytester.path.joinpath("intervals.json").read_text())
    return result, [Interval(Holder(name, rule, module, shared), start, stop)
                    for name, rule, module, shared, start, stop in rows]


def _checks(rule: str, count: int, prefix: str, fixture: str = "") -> str:
    mark = "@pytest.mark.independent" if rule == BESIDE else f"@pytest.mark.runs_alone({rule!r})"
    args = fixture or ""
    return "".join(f"@pytest.mark.kep5359\n{mark}\ndef test_{prefix}{i}({args}):\n    pass\n\n" for i in range(count))


def test_a_mixed_run_records_every_check_and_no_forbidden_overlap(pytester: pytest.Pytester) -> None:
    """Independent checks around runs_alone ones, a runs_alone module with its own shared pods and an independent
    module with its own: all pass, every check and deployment has its interval, none overlaps a runs_alone one
    unless it is the module's own shared pods."""
    result, intervals = _run(pytester, {
        "test_a_beside": _checks(BESIDE, 3, "beside", "module_pods"),
        "test_b_alone": _checks("reconfigures the kubelet", 3, "alone", "module_pods"),
        "test_c_mixed": _checks(BESIDE, 2, "beside") + _checks("judges the kubepods sums", 2, "alone"),
    })
    result.assert_outcomes(passed=10)
    names = {i.holder.name for i in intervals}
    assert len(intervals) == 12 and len(names) == 12, sorted(names)
    assert sum(i.holder.shared for i in intervals) == 2
    assert {i.holder.rule for i in intervals if i.holder.module.endswith("test_b_alone.py")} == {ALONE}
    assert forbidden_overlaps(intervals) == []
    alone = [i for i in intervals if i.holder.rule == ALONE and not i.holder.shared]
    assert len(alone) == 5
    assert all(i.start < i.stop for i in intervals)


@pytest.mark.parametrize(("first", "then", "error"), [
    (_checks(BESIDE, 1, "beside", "lingering_pods"), _checks("reconfigures the kubelet", 1, "alone"),
     "*test_alone0 (runs_alone) would share its node with *test_a.py (shared pods kept)*"),
    (_checks("judges the QoS sums", 1, "alone", "lingering_pods"), _checks(BESIDE, 1, "beside"),
     "*test_beside0 (independent) would share its node with *test_a.py (shared pods kept)*"),
], ids=["alone-beside-other-pods", "independent-beside-alone-pods"])
def test_an_overlap_errors_the_check_that_would_start_it(pytester: pytest.Pytester, first: str, then: str,
                                                        error: str) -> None:
    """Another module's pods still held (a session-scoped deployment, the way a wrong scope would keep them):
    the check that would overlap them against the rule errors with both names; the recorded intervals stay clean."""
    result, intervals = _run(pytester, {"test_a": first, "test_b": then})
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([error])
    assert forbidden_overlaps(intervals) == []
    assert not any(i.holder.module.endswith("test_b.py") for i in intervals)


def test_ledger_refuses_and_records_in_order() -> None:
    book = Ledger()
    beside_a, beside_b = Holder("a", BESIDE, "m1"), Holder("b", BESIDE, "m2")
    alone = Holder("c", ALONE, "m3")
    book.enter(beside_a)
    book.enter(beside_b)  # independent beside independent
    with pytest.raises(OverlapError, match="c \\(runs_alone\\) would share its node with a, b"):
        book.enter(alone)
    book.leave("a")
    book.leave("b")
    with book.holding(alone):
        with pytest.raises(OverlapError, match="would share its node with c"):
            book.enter(Holder("d", BESIDE, "m4"))
        book.enter(Holder("c-pods", ALONE, "m3", shared=True))  # its own module's shared pods
        book.leave("c-pods")
    assert [i.holder.name for i in book.closed] == ["a", "b", "c-pods", "c"]
    assert forbidden_overlaps(book.closed) == []


def test_forbidden_overlaps_names_each_pair() -> None:
    """Recorded intervals that overlap against the rule are found (what a side-by-side runner must never record)."""
    alone, beside, own = Holder("x", ALONE, "m1"), Holder("y", BESIDE, "m2"), Holder("p", ALONE, "m1", shared=True)
    other = Holder("z", BESIDE, "m3")
    intervals = [Interval(alone, 0.0, 2.0), Interval(beside, 1.0, 3.0), Interval(own, 0.0, 5.0),
                 Interval(other, 2.0, 4.0)]
    assert [(a.holder.name, b.holder.name) for a, b in forbidden_overlaps(intervals)] == [("x", "y"), ("y", "p"),
                                                                                          ("p", "z")]
