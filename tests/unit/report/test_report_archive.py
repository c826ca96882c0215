"""The results archive takes what a run wrote, and only that: regular files and directories under one top
directory, no link followed, no owner recorded; an unwritable one is one line."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from nodeconf.report.archive import ARCHIVE_FILE, write_archive
from nodeconf.report.results import ReportError


def test_archive_holds_the_named_outputs_and_leaves_links_out(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    (reports / "allure-results").mkdir(parents=True)
    (reports / "allure-results" / "a-result.json").write_text("{}")
    (reports / "summary.json").write_text('{"verdict": "PASS"}')
    outside = tmp_path / "secret.txt"
    outside.write_text("not the run's")
    (reports / "allure-results" / "link").symlink_to(outside)
    (reports / "junit.xml").symlink_to(outside)
    archive = write_archive(reports, ("junit.xml", "html", "summary.json", "allure-results"))
    assert archive == reports / ARCHIVE_FILE
    with tarfile.open(archive) as opened:
        members = {member.name: member for member in opened.getmembers()}
    assert sorted(members) == ["nodeconf-results/allure-results", "nodeconf-results/allure-results/a-result.json",
                               "nodeconf-results/summary.json"]
    assert {(m.uid, m.gid, m.uname) for m in members.values()} == {(0, 0, "")}
    assert [path.name for path in reports.iterdir() if path.name.startswith(".")] == []


def test_unwritable_archive_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"nodeconf-results.tar.gz: cannot write the results archive"):
        write_archive(tmp_path / "missing", ("summary.json",))
