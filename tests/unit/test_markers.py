"""Suite markers: typos and bad arguments are collection errors; profile and node needs become skips with reasons."""

from __future__ import annotations

import pytest

from nodeconf.fixtures.markers import marker_problems, mirrors, not_applicable, profile_too_old
from nodeconf.node_facts import NodeFacts

pytest_plugins = ("pytester",)

REGISTERED = ["parametrize", "skip", "usefixtures"]
GIB = 1024**3


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "problem"),
    [
        ("kep5359", (), {}, None),
        ("needs_kernel", ("5.9",), {}, None),
        ("min_profile", ("1.36",), {}, None),
        ("parametrize", ("x", [1]), {}, None),
        ("kep5539", (), {}, "unknown marker 'kep5539'"),
        ("needs_kernel", (5.9,), {}, "marker 'needs_kernel' takes one \"X.Y\" kernel version, got (5.9,)"),
        ("needs_kernel", ("5",), {}, "marker 'needs_kernel' takes one \"X.Y\" kernel version, got ('5',)"),
        ("needs_kernel", (), {}, "marker 'needs_kernel' takes one \"X.Y\" kernel version, got ()"),
        ("min_profile", ("1.40",), {},
         "marker 'min_profile' takes one profile version out of 1.34, 1.35, 1.36, 1.37, 1.38, got ('1.40',)"),
        ("needs_swap", ("yes",), {}, "marker 'needs_swap' takes no arguments, got ('yes',)"),
        ("disruptive", (), {"serial": True}, "marker 'disruptive' takes no keyword arguments, got {'serial': True}"),
        ("upstream_e2e", (), {"file": "test/e2e_node/swap_test.go", "case": "Swap / with configuration"}, None),
        ("upstream_e2e", (), {"file": "test/e2e/common/node/pod_resize.go", "case": "Pod InPlace Resize Container"},
         None),
        ("upstream_e2e", (), {"file": "test/e2e/node/pods.go", "case": "Pods Extended"}, None),
        ("upstream_e2e", (), {},
         "marker 'upstream_e2e' takes file=\"test/e2e_node/…_test.go\" and case=\"Describe / It\" only, got () {}"),
        ("upstream_e2e", (), {"file": "test/e2e_node/swap_test.go"},
         "marker 'upstream_e2e' takes file=\"test/e2e_node/…_test.go\" and case=\"Describe / It\" only, got () "
         "{'file': 'test/e2e_node/swap_test.go'}"),
        ("upstream_e2e", ("test/e2e_node/swap_test.go",), {"case": "Swap"},
         "marker 'upstream_e2e' takes file=\"test/e2e_node/…_test.go\" and case=\"Describe / It\" only, got "
         "('test/e2e_node/swap_test.go',) {'case': 'Swap'}"),
        ("upstream_e2e", (), {"file": "test/e2e/apps/job.go", "case": "Job"},
         "marker 'upstream_e2e' file must be a .go file under test/e2e_node/, test/e2e/common/node/, test/e2e/node/, "
         "got 'test/e2e/apps/job.go'"),
        ("upstream_e2e", (), {"file": "test/e2e_node/swap_test.py", "case": "Swap"},
         "marker 'upstream_e2e' file must be a .go file under test/e2e_node/, test/e2e/common/node/, test/e2e/node/, "
         "got 'test/e2e_node/swap_test.py'"),
        ("upstream_e2e", (), {"file": "test/e2e_node/swap_test.go", "case": " "},
         "marker 'upstream_e2e' case must be the upstream case's text, got ' '"),
        ("runs_alone", ("judges the kubepods sums",), {}, None),
        ("runs_alone", (), {}, "marker 'runs_alone' takes one reason (a non-empty string: which node-level state "
                               "it judges or changes), got ()"),
        ("runs_alone", (" ",), {}, "marker 'runs_alone' takes one reason (a non-empty string: which node-level "
                                   "state it judges or changes), got (' ',)"),
        ("independent", ("yes",), {}, "marker 'independent' takes no arguments, got ('yes',)"),
    ],
    ids=["source", "kernel", "profile", "builtin", "typo", "kernel-float", "kernel-no-minor", "kernel-missing",
         "profile-unknown", "flag-with-arg", "flag-with-kwarg", "upstream-e2e-node", "upstream-common-node",
         "upstream-e2e-node-dir", "upstream-bare", "upstream-no-case", "upstream-positional", "upstream-outside-node",
         "upstream-not-go", "upstream-blank-case",
         "alone", "alone-without-reason", "alone-blank",
         "independent-with-arg"],
)
def test_marker_problems(name: str, args: tuple[object, ...], kwargs: dict[str, object], problem: str | None) -> None:
    assert marker_problems(name, args, kwargs, REGISTERED) == ([problem] if problem else [])


def test_mirrors_puts_one_marker_per_case() -> None:
    @mirrors("test/e2e_node/pids_test.go", "PodPidsLimit / a", "PodPidsLimit / b")
    def check() -> None:
        pass

    marks = [(m.name, m.args, m.kwargs) for m in getattr(check, "pytestmark", [])]
    assert sorted(marks, key=str) == [
        ("upstream_e2e", (), {"file": "test/e2e_node/pids_test.go", "case": "PodPidsLimit / a"}),
        ("upstream_e2e", (), {"file": "test/e2e_node/pids_test.go", "case": "PodPidsLimit / b"})]


@pytest.mark.parametrize(
    ("needed", "running", "reason"),
    [(None, "1.34", None), ("1.36", "1.36", None), ("1.36", "1.38", None),
     ("1.38", "1.36", "needs profile >= 1.38, this run uses profile 1.36")],
    ids=["unmarked", "equal", "newer", "too-old"],
)
def test_profile_too_old(needed: str | None, running: str, reason: str | None) -> None:
    assert profile_too_old(needed, running) == reason


@pytest.mark.parametrize(
    ("facts", "needs_swap", "kernel", "reason"),
    [
        (NodeFacts(memory_capacity=2 * GIB, swap_capacity=GIB, kernel_version="6.1.0-28-amd64"), True, "5.9", None),
        (NodeFacts(memory_capacity=2 * GIB, swap_capacity=0, kernel_version="6.1.0"), True, None,
         "the node has no swap"),
        (NodeFacts(memory_capacity=2 * GIB, swap_capacity=GIB, cgroup_controllers=("cpu",)), True, None,
         "the node's cgroup v2 has no memory controller (memory.swap.*)"),
        (NodeFacts(memory_capacity=2 * GIB, kernel_version="5.4.0-200-generic"), False, "5.9",
         "needs kernel >= 5.9, the node runs 5.4.0-200-generic"),
        (NodeFacts(memory_capacity=2 * GIB, kernel_version="5.10.0"), False, "5.9", None),
    ],
    ids=["fits", "no-swap", "no-memory-controller", "old-kernel", "minor-compared-as-number"],
)
def test_not_applicable(facts: NodeFacts, needs_swap: bool, kernel: str | None, reason: str | None) -> None:
    assert not_applicable(needs_swap, kernel, facts) == reason


FAKE_NODE = """
import pytest
from nodeconf.node_facts import NodeFacts

def pytest_addoption(parser):
    parser.addoption("--profile", default=None)
    parser.addoption("--swap", type=int, default=0)

class FakeNode:
    def __init__(self, swap):
        self.swap = swap

    def facts(self):
        return NodeFacts(memory_capacity=2 << 30, swap_capacity=self.swap, kernel_version="6.1.0")

@pytest.fixture(scope="session")
def node(request):
    return FakeNode(request.config.getoption("--swap"))
"""


ALONE = "pytestmark = [pytest.mark.runs_alone('the example judges node-level state')]\n\n"


def _suite(pytester: pytest.Pytester, body: str, concurrency: str = ALONE) -> None:
    pytester.makeconftest(FAKE_NODE)
    pytester.mkdir("suites")
    pytester.path.joinpath("suites", "test_example.py").write_text("import pytest\n\n" + concurrency + body)


@pytest.mark.parametrize(
    ("body", "args", "lines"),
    [
        pytest.param("@pytest.mark.kep5539\ndef test_a():\n    pass\n", (),
                     ["*invalid test markers:*", "*suites/test_example.py::test_a: unknown marker 'kep5539'*"],
                     id="typo"),
        pytest.param("@pytest.mark.kep5359\n@pytest.mark.needs_kernel(5.9)\ndef test_a():\n    pass\n",
                     ("-m", "memory_qos"),
                     ["*test_a: marker 'needs_kernel' takes one \"X.Y\" kernel version, got (5.9,)*"],
                     id="bad-argument-even-when-deselected"),
        pytest.param("def test_a():\n    pass\n", (), ["*test_a: a suite test needs a source marker*"],
                     id="no-source-marker"),
        pytest.param("@pytest.mark.upstream_e2e\ndef test_a():\n    pass\n", (),
                     ["*test_a: marker 'upstream_e2e' takes file=* and case=* only, got () {}*"],
                     id="upstream-without-file-and-case"),
        pytest.param("@pytest.mark.upstream_e2e(file='test/e2e/apps/job.go', case='Job')\ndef test_a():\n    pass\n",
                     (), ["*test_a: marker 'upstream_e2e' file must be a .go file under test/e2e_node/*"],
                     id="upstream-outside-the-node-tests"),
        pytest.param("@pytest.mark.kep5359\n@pytest.mark.independent\n@pytest.mark.disruptive\ndef test_a():\n"
                     "    pass\n", (), ["*test_a: a disruptive test changes node-wide state: mark it runs_alone*"],
                     id="disruptive-but-independent"),
        pytest.param("@pytest.mark.kep5359\ndef test_a():\n    pass\n", ("--profile", "1.99"),
                     ["*--profile: '1.99' is not one of 1.34, 1.35, 1.36, 1.37, 1.38*"], id="unknown-profile"),
    ],
)
def test_usage_error_at_collection(pytester: pytest.Pytester, body: str, args: tuple[str, ...],
                                   lines: list[str]) -> None:
    _suite(pytester, body)
    result = pytester.runpytest("-p", "nodeconf.fixtures.markers", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(lines)


def test_profile_selected_at_collection(pytester: pytest.Pytester) -> None:
    _suite(pytester, "@pytest.mark.kep5359\n@pytest.mark.min_profile('1.38')\ndef test_new():\n    pass\n\n"
                     "@pytest.mark.memory_qos\n@pytest.mark.min_profile('1.36')\ndef test_old():\n    pass\n")
    result = pytester.runpytest("-p", "nodeconf.fixtures.markers", "--profile", "1.36", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*needs profile >= 1.38, this run uses profile 1.36*"])


@pytest.mark.parametrize(("args", "outcome", "gated"), [
    pytest.param((), {"passed": 1, "deselected": 1}, False, id="default-run-leaves-it-out"),
    pytest.param(("-m", "resize_extended"), {"passed": 1, "deselected": 1}, True, id="marker-selects-it"),
    pytest.param(("-m", "not resize_extended"), {"passed": 1, "deselected": 1}, False, id="marker-excludes-it"),
    pytest.param(("suites/test_example.py",), {"passed": 2}, True, id="module-named"),
    pytest.param(("suites/test_example.py::test_gated",), {"passed": 1}, True, id="node-id-named"),
    pytest.param(("suites",), {"passed": 1, "deselected": 1}, False, id="directory-named"),
])
def test_opt_in_checks_run_only_when_asked_for(pytester: pytest.Pytester, args: tuple[str, ...],
                                                outcome: dict[str, int], gated: bool) -> None:
    _suite(pytester, "@pytest.mark.kep5359\n@pytest.mark.resize_extended\ndef test_gated():\n    print('GATED')\n\n"
                     "@pytest.mark.kep5359\ndef test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "nodeconf.fixtures.markers", "-s", *args)
    result.assert_outcomes(**outcome)
    assert ("GATED" in result.stdout.str()) == gated


@pytest.mark.parametrize(("swap", "outcome"), [(0, {"skipped": 1}), (1 << 30, {"passed": 1})],
                         ids=["no-swap-skips", "swap-runs"])
def test_needs_swap_asks_the_node(pytester: pytest.Pytester, swap: int, outcome: dict[str, int]) -> None:
    _suite(pytester, "@pytest.mark.kep5359\n@pytest.mark.needs_swap\ndef test_a():\n    pass\n")
    result = pytester.runpytest("-p", "nodeconf.fixtures.markers", "--swap", str(swap), "-rs")
    result.assert_outcomes(**outcome)
    if not swap:
        result.stdout.fnmatch_lines(["*SKIPPED*the node has no swap*"])


def test_unmarked_test_never_touches_the_node(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_NODE.replace("return FakeNode", "raise RuntimeError('booted'); return FakeNode"))
    pytester.mkdir("suites")
    pytester.path.joinpath("suites", "test_example.py").write_text(
        "import pytest\n\n@pytest.mark.kep5359\n@pytest.mark.independent\ndef test_a():\n    pass\n"
    )
    pytester.runpytest("-p", "nodeconf.fixtures.markers").assert_outcomes(passed=1)


def test_a_check_without_a_concurrency_marker_stops_collection(pytester: pytest.Pytester) -> None:
    _suite(pytester, "@pytest.mark.kep5359\ndef test_a():\n    pass\n", concurrency="")
    result = pytester.runpytest("-p", "nodeconf.fixtures.markers")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_a: a suite test needs a concurrency marker (runs_alone(reason) or*"])


def test_a_checks_own_concurrency_marker_overrides_its_modules(pytester: pytest.Pytester) -> None:
    _suite(pytester, "@pytest.mark.kep5359\n@pytest.mark.runs_alone('reconfigures the kubelet')\n"
                     "def test_alone(request):\n    assert runs_alone(request.node)\n\n"
                     "@pytest.mark.kep5359\ndef test_beside(request):\n    assert not runs_alone(request.node)\n",
           "from nodeconf.fixtures.markers import runs_alone\n\npytestmark = [pytest.mark.independent]\n\n")
    pytester.runpytest("-p", "nodeconf.fixtures.markers").assert_outcomes(passed=2)


def test_disruptive_tests_share_one_xdist_group(pytester: pytest.Pytester) -> None:
    _suite(pytester, "@pytest.mark.kep5359\n@pytest.mark.disruptive\ndef test_a(request):\n"
                     "    assert request.node.get_closest_marker('xdist_group').args == ('disruptive',)\n")
    pytester.runpytest("-p", "nodeconf.fixtures.markers").assert_outcomes(passed=1)


def test_disruptive_tests_run_on_one_xdist_worker(pytester: pytest.Pytester) -> None:
    """The group is honoured, not only set: each disruptive test writes the worker it ran on. They come first, so
    a loadgroup that ignored the group would hand the first two to different workers (pytest-xdist#1386)."""
    tests = "".join(f"@pytest.mark.kep5359\n@pytest.mark.disruptive\ndef test_d{i}(worker_id):\n"
                    f"    open('ran-on-{i}', 'w').write(worker_id)\n\n" for i in range(4))
    tests += "".join(f"@pytest.mark.kep5359\ndef test_p{i}():\n    pass\n\n" for i in range(4))
    _suite(pytester, tests)
    result = pytester.runpytest_subprocess("-p", "nodeconf.fixtures.markers", "-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=8)
    workers = {pytester.path.joinpath(f"ran-on-{i}").read_text() for i in range(4)}
    assert len(workers) == 1 and workers <= {"gw0", "gw1"}, workers
