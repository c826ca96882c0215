"""docs/upstream-coverage.md: generated from the suites' upstream_e2e markers and tools/upstream_cases.yaml, current,
and every in-scope upstream case either mirrored or given a reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.upstream_coverage import ROOT, UpstreamCase, UpstreamFile, expand, load_cases, problems, render, stale

SWAP = "test/e2e_node/swap_test.go"


def test_expand_names_every_combination_in_the_datas_order() -> None:
    assert expand("T / {policy} / resizing / {entry}", {"entry": ["cpu", "mem"], "policy": ["no restart"]}) == [
        "T / no restart / resizing / cpu", "T / no restart / resizing / mem"]
    assert expand("{test}{policy} (x={x})", {"test": ["a"], "policy": ["", ", p"], "x": ["false"]}) == [
        "a (x=false)", "a, p (x=false)"]


@pytest.mark.parametrize(("template", "values"), [("A / {p}", {"q": ["x"]}), ("A / {p}", {"p": ["x"], "q": ["y"]})],
                         ids=["unknown-placeholder", "value-without-placeholder"])
def test_expand_refuses_values_that_do_not_fit(template: str, values: dict[str, list[str]]) -> None:
    with pytest.raises(ValueError, match="placeholders"):
        expand(template, values)


def test_load_cases_expands_resolves_reasons_and_refuses_duplicates(tmp_path: Path) -> None:
    data = tmp_path / "cases.yaml"
    data.write_text("reasons:\n  api: needs an API server\nfiles:\n  f.go:\n    commit: abc\n    cases:\n"
                    "      - case: 'D / {it}'\n        values: {it: [a, b]}\n        reason: api\n"
                    "      - case: D / c\n        note: partly\n      - case: D / d\n        reason: its own words\n")
    (file,) = load_cases(data)
    assert file == UpstreamFile("f.go", "abc", (
        UpstreamCase("D / a", "needs an API server"), UpstreamCase("D / b", "needs an API server"),
        UpstreamCase("D / c", None, "partly"), UpstreamCase("D / d", "its own words")))
    data.write_text("files:\n  f.go:\n    commit: abc\n    cases:\n      - case: D / a\n"
                    "      - case: 'D / {it}'\n        values: {it: [a]}\n")
    with pytest.raises(ValueError, match="'D / a' is listed twice"):
        load_cases(data)


FILES = [UpstreamFile(SWAP, "2d0a4f75560154454682b193b42813159b20f284", (
    UpstreamCase("Swap / a"), UpstreamCase("Swap / b", "needs an API server"), UpstreamCase("Swap / c", note="n")))]


@pytest.mark.parametrize(("mirrors", "expected"), [
    ({(SWAP, "Swap / a"): ["s.py::t1"], (SWAP, "Swap / c"): ["s.py::t2"]}, []),
    ({(SWAP, "Swap / a"): ["s.py::t1"]},
     [f"{SWAP}: 'Swap / c' is in scope, but no check's upstream_e2e marker names it and upstream_cases.yaml gives "
      "no reason"]),
    ({(SWAP, "Swap / a"): ["s.py::t1"], (SWAP, "Swap / b"): ["s.py::t3"], (SWAP, "Swap / c"): ["s.py::t2"]},
     [f"{SWAP}: 'Swap / b' has a reason not to be mirrored, but s.py::t3 mirror it"]),
    ({(SWAP, "Swap / a"): ["s.py::t1"], (SWAP, "Swap / c"): ["s.py::t2"], (SWAP, "Swap / typo"): ["s.py::t4"]},
     [f"s.py::t4: upstream_e2e names 'Swap / typo' of {SWAP}, which upstream_cases.yaml does not list"]),
], ids=["consistent", "unmirrored-without-reason", "reason-but-mirrored", "marker-names-an-unlisted-case"])
def test_problems(mirrors: dict[tuple[str, str], list[str]], expected: list[str]) -> None:
    assert problems(FILES, mirrors) == expected


def test_render_counts_per_file_and_answers_every_case() -> None:
    text = render(FILES, {(SWAP, "Swap / a"): ["s.py::t1", "s.py::t2[mode=NoSwap]"], (SWAP, "Swap / c"): ["s.py::t3"]})
    lines = text.splitlines()
    assert f"| `{SWAP}` | `2d0a4f755601` | 2 | 3 | 66 % |" in lines
    assert "| all | | 2 | 3 | 66 % |" in lines
    assert "| Swap / a | `s.py::t1`<br>`s.py::t2[mode=NoSwap]` |" in lines
    assert "| Swap / b | not mirrored: needs an API server |" in lines
    assert "| Swap / c | `s.py::t3`<br>note: n |" in lines
    assert "Read at kubernetes/kubernetes@2d0a4f75560154454682b193b42813159b20f284." in lines


def test_stale_document_is_named() -> None:
    assert stale("a\n", "a\n") is None
    assert stale("a\n", "b\n") == "docs/upstream-coverage.md is stale: run python -m tools.upstream_coverage"
    assert stale(None, "b\n") == "docs/upstream-coverage.md is missing: run python -m tools.upstream_coverage"


def test_document_is_current_and_every_case_is_mirrored_or_refused() -> None:
    """The real suites and data: no case without a check or a reason, no marker naming an unlisted case, and the
    committed document equal to what the generator writes (collects the suites: about 6 s)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "tools.upstream_coverage", "--check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
