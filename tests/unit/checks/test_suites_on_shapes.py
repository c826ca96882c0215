"""The suites, run without `--profile` or `--kubelet-config` against recorded cluster node shapes (kube_shapes.py,
each from a cited public configuration), judge the node as its provider configured it: at least 70 % of the checks
that apply to a kube node judge it, and every check that needs another configuration names the field and both
values (issue 29 item 1, which a run against the driver alone could not catch).

One pytest process runs suites/ on all six shapes as the nodes of one cluster (about 45 s of CPU): the real
fixtures, oracle and kube driver on the in-memory API server and scripted kubelet; a check counts as judged once
the node accepted its profile and configuration, i.e. when it sends its first pod (suite_on_shape.ReachedTheNode)
or ends without one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.nodes.kube.kube_shapes import SHAPES, Shape

ROOT = Path(__file__).resolve().parents[3]
JUDGED_SHARE = 0.70
# Skips that say the check does not apply to this node at all: a fact of the node (kernel features, capacity),
# a newer profile than its kubelet's, nothing to assert without --kubelet-config, or processes a kube: node does
# not show nodeconf (its kubelet's and runtime's).
DOES_NOT_APPLY = re.compile(r"needs profile >= |offers no hugetlb|has no swap|no memory controller|needs kernel"
                            r"|PSI|needs room for|nothing to assert|the node is judged as it runs"
                            r"|did not read the node's processes")
_DIFFERENCE = r"[\w.\-/]+: (?:requested|profile) .+?, node has [^;)]+"
NEEDS_ANOTHER_CONFIG = re.compile(rf"runs another kubelet configuration \({_DIFFERENCE}(?:; {_DIFFERENCE})*\)")


def run_suites(shape: Shape, tmp_path: Path, *args: str, kubelet: str = "") -> dict[str, tuple[str, str]]:
    """Each check's outcome (suite_on_shape.OUTCOMES) of one pytest run on the shape (`kubelet`: another
    kubeletVersion)."""
    out = tmp_path / "outcomes.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "NODECONF_TEST_SHAPE": f"{shape.name}@{kubelet}" if kubelet else shape.name,
           "NODECONF_TEST_SHAPE_OUT": str(out)}
    node = () if "--node" in args else ("--node", "kube")
    done = subprocess.run([sys.executable, "-m", "pytest", *(args or ("suites",)),
                           "-p", "tests.unit.nodes.kube.suite_on_shape", *node, "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist",
                           "--basetemp", str(tmp_path / "base")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    return {name: (kind, reason) for name, (kind, reason) in json.loads(out.read_text()).items()}


def judged_share(outcomes: dict[str, tuple[str, str]]) -> tuple[float, int, int]:
    applies = [kind for kind, reason in outcomes.values() if not (kind == "skipped" and DOES_NOT_APPLY.search(reason))]
    judged = sum(kind in ("judged", "passed") for kind in applies)
    return judged / len(applies), judged, len(applies)


@pytest.fixture(scope="module")
def all_shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """One run of the suites over every shape as one cluster (`--node kube:SHAPE` each): each node is judged by
    its own profile and configuration in one process."""
    nodes = [arg for shape in SHAPES for arg in ("--node", f"kube:{shape.name}")]
    return run_suites(SHAPES[0], tmp_path_factory.mktemp("shapes"), "suites", *nodes)


def of_shape(outcomes: dict[str, tuple[str, str]], shape: Shape) -> dict[str, tuple[str, str]]:
    """The outcomes of the checks run on the shape's node (ids `test_x[kube-SHAPE]`, `test_x[kube-SHAPE-param]`)."""
    return {name: outcome for name, outcome in outcomes.items()
            if re.search(rf"\[kube-{re.escape(shape.name)}[\]-]", name)}


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_a_run_without_options_judges_the_node_as_configured(
        all_shapes: dict[str, tuple[str, str]], shape: Shape) -> None:
    outcomes = of_shape(all_shapes, shape)
    assert outcomes
    errors = {name: reason for name, (kind, reason) in outcomes.items() if kind == "error"}
    assert not errors
    share, judged, applies = judged_share(outcomes)
    print(f"{shape.name}: {judged} of {applies} checks that apply judge the node ({share:.0%})")
    assert share >= JUDGED_SHARE, (judged, applies)
    for name, (kind, reason) in outcomes.items():
        if kind == "skipped" and not DOES_NOT_APPLY.search(reason):
            assert NEEDS_ANOTHER_CONFIG.search(reason), (name, reason)


def test_kubelet_config_on_a_cluster_node_is_one_assertion(tmp_path: Path) -> None:
    """`--kubelet-config` naming values the EKS node does not run: one failure naming each field and both values;
    the other checks judge the node as it runs, not skip."""
    eks = next(s for s in SHAPES if s.name == "eks-al2023")
    outcomes = run_suites(eks, tmp_path, "suites/cluster", "suites/resources/test_res_demo.py", "--kubelet-config",
                          "workloads/requests-limits/kubelet-config/reserved.yaml")
    failures = {name: reason for name, (kind, reason) in outcomes.items()
                if kind == "judged" and reason and "ReachedTheNode" not in reason}
    assert list(failures) == ["suites/cluster/test_node_config.py::test_node_runs_the_requested_kubelet[kube]"]
    assert "maxPods: requested 110, node has 29" in failures[next(iter(failures))]
    assert not [name for name, (kind, _) in outcomes.items() if kind == "skipped" and "cluster" not in name]


def test_a_kubelet_without_a_profile_fails_its_checks_with_one_line(tmp_path: Path) -> None:
    eks = next(s for s in SHAPES if s.name == "eks-al2023")
    outcomes = run_suites(eks, tmp_path, "suites/resources/test_res_demo.py", kubelet="v1.31.4-eks-0a21954")
    assert outcomes
    for name, (kind, reason) in outcomes.items():
        assert kind == "error" and "node kube:eks-al2023: 1.31: no profile; nodeconf knows 1.34–1.38" in reason, name
