"""Numbers the docs state match the code (issue 32): the default run's check count, the verdicts and exit codes;
and their relative links lead to files.

Cost: one `pytest --collect-only` of suites/ in a subprocess (about 6-12 s here); collection boots no node, which
the test checks with an empty cache directory that must stay empty.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.enforcer.lifecycle import Faults
from nodeconf.node_variant import VARIANT_OPTIONS
from nodeconf.report.results import Check, RunResults, Status
from nodeconf.report.verdict import verdict

ROOT = Path(__file__).resolve().parents[3]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
# The sentence that states the default run's size: "A default run has **219 checks** per node".
COUNT_STATEMENT = re.compile(r"default run has \*\*(\d+) checks\*\*")
COLLECTED = re.compile(r"^(\d+)(?:/\d+)? tests? collected", re.M)  # N, or N/ALL when some are deselected
# A row of an exit table (docs/ci.md, getting-started.md, report.md): | 2 | `NOTHING RAN` | ...
VERDICT_ROW = re.compile(r"^\| (\d) \| `([A-Z ]+)` \|", re.MULTILINE)


def _collected_checks(cache: Path) -> int:
    """How many checks `nodeconf run` with the default node collects (its pytest, its suites, `--node vm`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--node", "vm", str(ROOT / "suites")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found = COLLECTED.search(done.stdout)
    assert found, done.stdout[-2000:]
    return int(found[1])


def test_the_documented_check_count_is_the_collected_one(tmp_path: Path) -> None:
    statements = [(path.name, int(count)) for path in DOCS for count in COUNT_STATEMENT.findall(path.read_text())]
    assert statements, "README.md states the default run's check count"
    cache = tmp_path / "cache"
    cache.mkdir()
    collected = _collected_checks(cache)
    assert list(cache.iterdir()) == [], "collecting the checks touched the VM cache"
    assert statements == [(name, collected) for name, _ in statements]


def _check(status: Status) -> Check:
    return Check(name="t", full_name="m#t", status=status, message="", trace="", labels=(), parameters=(), steps=(),
                 attachments=(), fixtures=(), duration_ms=1)


def _results(*statuses: Status) -> RunResults:
    return RunResults(results_dir=ROOT, checks=tuple(_check(s) for s in statuses), shared_fixtures=(), environment=())


@pytest.mark.parametrize("doc", ["ci.md", "getting-started.md", "report.md"])
def test_the_docs_list_every_verdict_with_its_exit_code(doc: str) -> None:
    """Each verdict as the code gives it, from pytest's status and the checks' statuses."""
    given = {
        verdict(pytest.ExitCode.OK, _results(Status.PASSED)),
        verdict(pytest.ExitCode.TESTS_FAILED, _results(Status.PASSED, Status.FAILED)),
        verdict(pytest.ExitCode.TESTS_FAILED, _results(Status.BROKEN)),
        verdict(pytest.ExitCode.NO_TESTS_COLLECTED, None),
        verdict(pytest.ExitCode.INTERRUPTED, None),
    }
    documented = {label: int(code) for code, label in VERDICT_ROW.findall((ROOT / "docs" / doc).read_text())}
    assert documented == {outcome.label: outcome.code for outcome in given}


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_the_docs_relative_links_lead_to_files(doc: Path) -> None:
    """README.md and docs/ link each other and benchmarks/results/: every relative link names a file that exists."""
    targets = [target for target in LINK.findall(doc.read_text(encoding="utf-8")) if "://" not in target]
    assert [target for target in targets if not (doc.parent / target).exists()] == []


def test_node_variants_md_names_each_layer_value_and_only_faults_the_enforcer_takes() -> None:
    """docs/node-variants.md is the reference of `vm?debian=&init=&runtime=` and `fault=`."""
    text = (ROOT / "docs" / "node-variants.md").read_text(encoding="utf-8")
    missing = [f"{name}={value}" for name, values in VARIANT_OPTIONS.items() for value in values
               if f"`{name}={value}`" not in text and f"`{value}`" not in text]
    assert missing == []
    section = text[text.index("## Deliberate faults"):text.index("\n## ", text.index("## Deliberate faults") + 1)]
    faults = re.findall(r"`([a-z-]+=[a-z|X-]+)`", section)
    assert len(faults) >= 8
    for fault in faults:
        for value in fault.split("=", 1)[1].split("|"):
            Faults.parse([f"{fault.split('=', 1)[0]}={'0.5' if value == 'X' else value}"])
