"""A finished run's results read back for `nodeconf report --diff`: a results directory (`reports/` with junit.xml
and allure-results/, or an allure-results directory) or a .tar.gz archive of one, unpacked into a temporary
directory that is removed afterwards.

Source: the layout `nodeconf run` writes (README "Use"); Python's tarfile `data` filter (PEP 706) for unpacking.
"""

from __future__ import annotations

import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from nodeconf.report.allure_json import ReportError, read_bounded, shown
from nodeconf.report.comparison import mismatches
from nodeconf.report.properties import read_properties
from nodeconf.report.results import NODE_ENVIRONMENT_GLOB, Check, Status, load_results
from nodeconf.report.run_diff import BROKEN, FAILED, PASSED, SKIPPED, CheckVerdict, RunRecord
from nodeconf.report.run_state import read_run_state
from nodeconf.report.summary import check_id

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
ALLURE_DIR = "allure-results"
JUNIT_FILE = "junit.xml"
MAX_JUNIT_BYTES = 64 * 1024 * 1024
# An archive of one run's results: far below these (a full run's results are a few MiB in a few thousand files).
MAX_ARCHIVE_MEMBERS = 100_000
MAX_ARCHIVE_BYTES = 2 * 1024**3
_JUNIT_STATUS = (("failure", FAILED), ("error", BROKEN), ("skipped", SKIPPED))


@dataclass(frozen=True)
class RunSource:
    """Where one run's results lie: its Allure results directory and its JUnit file (either may be missing)."""

    label: str
    allure_dir: Path | None
    junit: Path | None
    archive: bool


def _has_results(directory: Path) -> bool:
    return any(directory.glob("*-result.json"))


def _locate(root: Path, label: str, archive: bool) -> RunSource:
    if _has_results(root):  # an allure-results directory; its run's junit.xml beside it (not above an archive)
        beside = root.parent / JUNIT_FILE
        return RunSource(label, root, beside if not archive and beside.is_file() else None, archive)
    allure = root / ALLURE_DIR
    junit = root / JUNIT_FILE
    found = RunSource(label, allure if allure.is_dir() else None, junit if junit.is_file() else None, archive)
    if found.allure_dir is None and found.junit is None:
        raise ReportError(f"{shown(Path(label))}: neither {JUNIT_FILE} nor Allure results ({ALLURE_DIR}/ or "
                          "*-result.json) in it")
    return found


def _unpack(archive: Path, into: Path) -> Path:
    """Unpack the archive with tarfile's `data` filter (no absolute paths, no links or devices leading out);
    the directory holding the results: the archive's root, or its one top-level directory."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = []
            total = 0
            for member in tar:
                members.append(member)
                total += member.size
                if len(members) > MAX_ARCHIVE_MEMBERS or total > MAX_ARCHIVE_BYTES:
                    raise ReportError(f"{shown(archive)}: more than {MAX_ARCHIVE_MEMBERS} files or "
                                      f"{MAX_ARCHIVE_BYTES} bytes: not the results of one run")
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ReportError(f"{shown(archive)}: not a readable .tar.gz archive ({error})") from None
    entries = list(into.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not _has_results(into):
        return entries[0]
    return into


@contextmanager
def opened_run(path: Path) -> Iterator[RunSource]:
    """The run at `path` (a directory or a .tar.gz archive); an archive is unpacked for the block's duration."""
    label = str(path)
    if path.is_dir():
        yield _locate(path, label, archive=False)
        return
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        problem = "no such directory or archive" if not path.exists() else "not a directory or a .tar.gz archive"
        raise ReportError(f"{shown(path)}: {problem}")
    if not path.is_file():
        raise ReportError(f"{shown(path)}: no such archive")
    with tempfile.TemporaryDirectory(prefix="nodeconf-diff-") as scratch:
        yield _locate(_unpack(path, Path(scratch)), label, archive=True)


def junit_verdicts(path: Path) -> dict[str, CheckVerdict]:
    """Each test case of a JUnit file by `classname#name` (Allure's id form): failure → failed, error → broken,
    skipped → skipped, else passed; the message is the failure's `message` attribute (no traceback)."""
    try:
        root = ET.fromstring(read_bounded(path, MAX_JUNIT_BYTES, path.parent))
    except ET.ParseError as error:
        raise ReportError(f"{shown(path)}: not a JUnit XML file ({error})") from None
    verdicts = {}
    for case in root.iter("testcase"):
        status, message = PASSED, ""
        for tag, named in _JUNIT_STATUS:
            found = case.find(tag)
            if found is not None:
                status, message = named, found.get("message", "")
                break
        case_id = f"{case.get('classname', '')}#{case.get('name', '')}".lstrip("#")
        verdicts[case_id] = CheckVerdict(case_id, status, message)
    return verdicts


def _allure_checks(source: RunSource) -> tuple[Check, ...]:
    """The run's checks in its Allure results; none when it has none beside its junit.xml."""
    if source.allure_dir is None or (source.junit is not None and not _has_results(source.allure_dir)):
        return ()
    return load_results(source.allure_dir).checks


def read_record(source: RunSource) -> RunRecord:
    """The run's verdicts (from JUnit when present, else Allure) with each failed check's mismatches from its
    comparison tables in the Allure results, each node's facts from environment*.properties, and whether the run
    finished (Allure's run-state marker)."""
    allure = _allure_checks(source)
    compared = {check_id(c): mismatches(c) if c.status is Status.FAILED else () for c in allure}
    if source.junit is not None:
        checks = {key: replace(verdict, mismatches=compared.get(key))
                  for key, verdict in junit_verdicts(source.junit).items()}
    else:
        checks = {check_id(c): CheckVerdict(check_id(c), c.status.value, c.message, compared[check_id(c)])
                  for c in allure}
    facts: dict[str, dict[str, str]] = {}
    interrupted = ""
    if source.allure_dir is not None:
        facts[""] = dict(read_properties(source.allure_dir / "environment.properties"))
        for node_file in sorted(source.allure_dir.glob(NODE_ENVIRONMENT_GLOB)):
            entries = dict(read_properties(node_file))
            facts[entries.get("name") or node_file.stem.removeprefix("environment-")] = entries
        state = read_run_state(source.allure_dir)
        if state is not None and not state.complete:
            interrupted = state.reason or "the run did not finish"
    return RunRecord(source.label, checks, facts, interrupted)
