"""`nodeconf report` on garbage results directories: exit 0 with a report, or exit 2 with one short line naming
the file; never a traceback, and never the content of a file a link points to outside the directory (issue 11)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodeconf.cli import report as report_cli
from nodeconf.cli.main import main
from nodeconf.report.allure_json import MAX_JSON_BYTES, MAX_JSON_DEPTH
from nodeconf.report.html import MAX_ATTACHMENT_BYTES

SECRET = "top-secret-canary-7f3a"
MAX_LINE = 300


def _result(results: Path, name: str = "test_ok", **extra: object) -> Path:
    body = {"uuid": f"u-{name}", "historyId": name, "name": name, "fullName": f"suites.x#{name}",
            "status": "passed", "start": 1, "stop": 2, **extra}
    path = results / f"u-{name}-result.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def _report(results: Path, output: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["report", str(results), "-o", str(output)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def results(tmp_path: Path) -> Path:
    directory = tmp_path / "allure-results"
    directory.mkdir()
    _result(directory)
    return directory


def _assert_one_line_naming(err: str, name: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and len(lines[0]) < MAX_LINE, err


@pytest.mark.parametrize("cause", ["deep-array", "deep-object", "deep-steps"])
def test_deeply_nested_json_is_one_line(results: Path, tmp_path: Path, cause: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    bad = results / "bad-result.json"
    if cause == "deep-array":
        bad.write_text('{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif cause == "deep-object":
        bad.write_text('{"a": ' + '{"a": ' * 5000 + "1" + "}" * 5001)
    else:
        step: dict[str, object] = {"name": "s", "status": "passed"}
        for _ in range(MAX_JSON_DEPTH):
            step = {"name": "s", "status": "passed", "steps": [step]}
        bad.write_text(json.dumps({"name": "deep", "status": "passed", "steps": [step]}))
    code, _, err = _report(results, tmp_path / "html", capsys)
    assert code == 2
    _assert_one_line_naming(err, "bad-result.json")


@pytest.mark.parametrize("number", ["9" * 5000, str(2**70), "-5"])
def test_huge_or_negative_integers_never_crash(results: Path, tmp_path: Path, number: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (results / "big-result.json").write_text(
        f'{{"name": "big", "historyId": "big", "status": "passed", "start": 0, "stop": {number}}}')
    code, _, err = _report(results, tmp_path / "html", capsys)
    if len(number) > 4000:
        assert code == 2
        _assert_one_line_naming(err, "big-result.json")
    else:
        assert code == 0, err
        assert (tmp_path / "html" / "nodeconf-report.html").is_file()


def test_non_utf8_environment_properties_is_one_line(results: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (results / "environment.properties").write_bytes(b"node=vm\nkernel=\xff\xfe6.1\n")
    code, _, err = _report(results, tmp_path / "html", capsys)
    assert code == 2
    _assert_one_line_naming(err, "environment.properties")


@pytest.mark.parametrize("where", ["output-is-a-file", "report-is-a-directory"])
def test_unwritable_output_is_one_line(results: Path, tmp_path: Path, where: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out"
    if where == "output-is-a-file":
        output.write_text("not a directory")
    else:
        (output / "nodeconf-report.html").mkdir(parents=True)
    code, _, err = _report(results, output, capsys)
    assert code == 2
    _assert_one_line_naming(err, "out")


@pytest.mark.parametrize("name", ["huge-result.json", "environment.properties"])
def test_oversized_files_are_refused_without_reading_them(results: Path, tmp_path: Path, name: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with open(results / name, "wb") as handle:
        handle.truncate(MAX_JSON_BYTES + 1)  # sparse: costs no disk
    code, _, err = _report(results, tmp_path / "html", capsys)
    assert code == 2
    _assert_one_line_naming(err, name)


def test_oversized_attachment_is_not_embedded(results: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with open(results / "big-attachment.txt", "wb") as handle:
        handle.truncate(MAX_ATTACHMENT_BYTES + 1)
    _result(results, "with_big", attachments=[{"name": "log", "source": "big-attachment.txt", "type": "text/plain"}])
    code, _, err = _report(results, tmp_path / "html", capsys)
    assert code == 0, err
    page = (tmp_path / "html" / "nodeconf-report.html").read_text()
    assert "attachment not embedded" in page and "larger than" in page


@pytest.mark.parametrize("target", ["file-outside", "dev-zero", "fifo-inside"])
def test_attachment_links_out_of_the_directory_are_never_followed(results: Path, tmp_path: Path, target: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    source = results / "leak-attachment.txt"
    if target == "file-outside":
        secret = tmp_path / "secret.txt"  # a canary standing in for a private file of the machine
        secret.write_text(SECRET)
        source.symlink_to(secret)
    elif target == "dev-zero":
        source.symlink_to("/dev/zero")
    else:
        os.mkfifo(source)  # reading it would block forever
    _result(results, "leaky", attachments=[{"name": "log", "source": source.name, "type": "text/plain"}])
    code, _, err = _report(results, tmp_path / "html", capsys)
    assert code == 0, err
    page = (tmp_path / "html" / "nodeconf-report.html").read_text()
    assert SECRET not in page and "attachment not embedded" in page
    if target != "fifo-inside":
        assert "links out of the results directory" in err  # Allure's HTML would embed it: skipped


def test_result_file_linking_out_is_refused(results: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"name": SECRET, "status": "passed"}))
    (results / "linked-result.json").symlink_to(outside)
    code, out, err = _report(results, tmp_path / "html", capsys)
    assert code == 2 and SECRET not in out + err
    _assert_one_line_naming(err, "linked-result.json")


def test_lone_surrogates_in_names_are_written(results: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (results / "s-result.json").write_text('{"name": "bad \\ud800 name", "status": "failed", "historyId": "s"}')
    code, out, err = _report(results, tmp_path / "html", capsys)
    assert code == 0, err
    assert "bad ? name" in out


# --- property: any garbage in any results file ends in exit 0 with a report or exit 2 with one line -----------

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.sampled_from(["name", "status", "steps", "attachments", "start",
                                                              "stop", "uuid", "historyId", "children", "befores",
                                                              "labels", "statusDetails", "message", "source",
                                                              "type", "fullName", "complete", "reason"]),
                                             inner, max_size=6), max_leaves=20)
FILE_NAMES = st.sampled_from(["a-result.json", "b-result.json", "c-container.json", "environment.properties",
                              "nodeconf-run.json", "x-attachment.txt"])
CONTENTS = st.one_of(JSON_VALUES.map(lambda value: json.dumps(value).encode()), st.binary(max_size=200),
                     st.text(max_size=200).map(lambda text: text.encode("utf-8", "surrogatepass")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.dictionaries(FILE_NAMES, CONTENTS, min_size=1, max_size=5))
def test_garbage_results_end_in_a_report_or_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                     files: dict[str, bytes]) -> None:
    base = tmp_path_factory.mktemp("garbage")
    results = base / "allure-results"
    results.mkdir()
    for name, content in files.items():
        (results / name).write_bytes(content)
    args = argparse.Namespace(results_dir=results, output=base / "html")
    try:
        code = report_cli.run(args)
    except Exception as error:  # only the one-line InputError may leave run(); main prints it and exits 2
        from nodeconf.errors import InputError

        assert isinstance(error, InputError), f"{type(error).__name__}: {error}"
        assert "\n" not in str(error) and len(str(error)) < MAX_LINE
        return
    assert code in (0, 2)
    assert (base / "html" / "nodeconf-report.html").is_file()
