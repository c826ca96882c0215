"""`nodeconf checks` (issue 32 item 5): the default run's checks with source, area and needs, collected without
opening a node; -k and -m select as pytest does.

Cost: three `pytest --collect-only` of suites/ in subprocesses (about 10 s each here) and one in-process pytester
run of a two-test tree.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeconf.cli.checks import OUTPUT_ENV

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parents[3]
SUITES = ROOT / "suites"
COUNT_STATEMENT = re.compile(r"default run has \*\*(\d+) checks\*\*")  # README's statement, held by test_docs_numbers


def checks(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-m", "nodeconf", "checks", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    cache = tmp_path_factory.mktemp("cache")
    done = checks("-o", "json", cache=cache)
    assert (done.returncode, done.stderr) == (0, "")
    assert list(cache.iterdir()) == [], "listing the checks touched the VM cache"
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def by_file(listed: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    found = [c for c in listed if c["id"].startswith(f"{path}::")]
    assert found, path
    return found


def test_every_check_of_the_default_run_is_listed_once(listed: list[dict[str, Any]]) -> None:
    (stated,) = {int(n) for n in COUNT_STATEMENT.findall((ROOT / "README.md").read_text())}
    assert len(listed) == len({c["id"] for c in listed}) == stated


def test_each_check_has_a_source_and_the_suites_package_as_area(listed: list[dict[str, Any]]) -> None:
    packages = {p.name for p in SUITES.iterdir() if (p / "__init__.py").is_file() and any(p.glob("test_*.py"))}
    packages.discard("cluster")  # its checks are for cluster nodes only (suites/cluster/conftest.py)
    assert {c["area"] for c in listed} == packages
    for check in listed:
        assert check["id"].startswith(f"suites/{check['area']}/"), check
        assert check["sources"], check


@pytest.mark.parametrize(("path", "source", "needs"), [
    # Each file's pytestmark, as written in it.
    pytest.param("suites/swap/test_pressure.py", "kep5359",
                 {"needs_swap": True, "needs_kernel": "5.19", "min_profile": "1.38", "disruptive": False},
                 id="swap-pressure"),
    pytest.param("suites/resources/test_eviction.py", "requests_limits",
                 {"needs_swap": False, "disruptive": True, "min_profile": None}, id="eviction"),
    pytest.param("suites/upstream/test_psi.py", "kubelet_code", {"needs_psi": True, "min_profile": "1.36"},
                 id="upstream-psi"),
])
def test_needs_and_source_are_the_markers_of_the_file(listed: list[dict[str, Any]], path: str, source: str,
                                                      needs: dict[str, Any]) -> None:
    for check in by_file(listed, path):
        if "limitedswap" in check["id"]:
            continue  # KEP-2400 cases whose own parameter marks (min_profile 1.34) override the file's
        assert source in [s["marker"] for s in check["sources"]]
        assert {k: check["needs"][k] for k in needs} == needs


def test_a_parameter_marker_is_the_needs_of_that_case_only(listed: list[dict[str, Any]]) -> None:
    """suites/resources/test_throttling_and_oom.py marks only its group-kill case needs_kernel("5.17")."""
    path = "suites/resources/test_throttling_and_oom.py"
    kernels = {c["id"]: c["needs"]["needs_kernel"] for c in by_file(listed, path)}
    assert {k for k, v in kernels.items() if v is not None} == {k for k in kernels if "group-kill" in k}
    assert {v for v in kernels.values() if v is not None} == {"5.17"}


def test_k_and_m_select_as_pytest_does_and_the_table_lists_them(listed: list[dict[str, Any]],
                                                                tmp_path: Path) -> None:
    done = checks("-m", "needs_swap and not disruptive", "-k", "test_resize_swap", "-o", "table", cache=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "AREA", "SOURCE", "NEEDS"]
    shown = [line.split()[0] for line in lines[1:-1]]
    expected = [c["id"] for c in listed if c["needs"]["needs_swap"] and not c["needs"]["disruptive"]
                and c["id"].startswith("suites/swap/test_resize_swap.py::")]
    assert expected and shown == expected
    assert lines[-1] == f"{len(expected)} checks"


def test_no_match_exits_1_and_a_bad_expression_is_one_line_exit_2(tmp_path: Path) -> None:
    none = checks("-k", "no_check_is_called_this", "-o", "json", cache=tmp_path)
    assert (none.returncode, none.stdout, none.stderr) == (1, "[]\n", "nodeconf: no check matches\n")
    bad = checks("-k", "swap and (", cache=tmp_path)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.startswith("nodeconf: pytest could not collect the checks: ERROR: Wrong expression passed to")
    assert len(bad.stderr.splitlines()) == 1


def test_an_upstream_marker_naming_file_and_case_is_listed_with_them(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    upstream_e2e\n    kep2400\n    needs_kernel(v)\n")
    area = pytester.mkpydir("suites")
    (area / "swap").mkdir()
    (area / "swap" / "__init__.py").write_text("")
    (area / "swap" / "test_mirror.py").write_text(
        "import pytest\n"
        "@pytest.mark.upstream_e2e(file='test/e2e_node/swap_test.go', case='with swap')\n"
        "def test_mirrored(): pass\n"
        "@pytest.mark.kep2400\n@pytest.mark.needs_kernel('6.1')\ndef test_own(): pass\n")
    out = pytester.path / "checks.json"
    monkeypatch.setenv(OUTPUT_ENV, str(out))
    # a process of its own: this worker may hold the project's own `suites` package in sys.modules already
    pytester.runpytest_subprocess("--collect-only", "-q", "-p", "nodeconf.cli.checks").assert_outcomes()
    mirrored, own = json.loads(out.read_text())
    assert mirrored["sources"] == [{"marker": "upstream_e2e", "file": "test/e2e_node/swap_test.go",
                                    "case": "with swap"}]
    assert (mirrored["id"], mirrored["area"]) == ("suites/swap/test_mirror.py::test_mirrored", "swap")
    assert own["sources"] == [{"marker": "kep2400"}]
    assert own["needs"] == {"needs_swap": False, "needs_psi": False, "disruptive": False, "needs_kernel": "6.1",
                            "min_profile": None}
