"""`nodeconf explain` takes directories and `-` as kubectl -f does (issue 32)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf.cli.manifest_inputs import manifest_paths
from nodeconf.errors import InputError

ROOT = Path(__file__).resolve().parents[3]
RES_DEMO = ROOT / "workloads" / "requests-limits" / "res-demo.yaml"
QOS = ROOT / "workloads" / "requests-limits" / "qos-classes.yaml"


def test_a_directory_stands_for_its_manifest_files_sorted(tmp_path: Path) -> None:
    for name in ("b.yml", "a.yaml", "c.json", "notes.txt", "README"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.yaml").write_text("{}")  # not recursive, as kubectl without -R
    assert manifest_paths([str(tmp_path), "x.yaml"]) == [
        str(tmp_path / "a.yaml"), str(tmp_path / "b.yml"), str(tmp_path / "c.json"), "x.yaml"]


def test_a_directory_without_manifests_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(InputError, match=r"no \.json, \.yaml, \.yml file in this directory"):
        manifest_paths([str(tmp_path)])


def test_standard_input_is_read_once() -> None:
    assert manifest_paths(["-", "x.yaml"]) == ["-", "x.yaml"]
    with pytest.raises(InputError, match="standard input given twice"):
        manifest_paths(["-", "x.yaml", "-"])


def _explain(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "nodeconf", "explain", *argv], input=stdin, capture_output=True,
                          cwd=ROOT, timeout=60, check=False)


def test_explain_reads_a_manifest_from_standard_input() -> None:
    piped = _explain("-", stdin=RES_DEMO.read_bytes())
    named = _explain(str(RES_DEMO))
    assert piped.returncode == named.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == json.loads(named.stdout)


def test_explain_reads_a_directory_as_its_files(tmp_path: Path) -> None:
    for source in (QOS, RES_DEMO):
        (tmp_path / source.name).write_bytes(source.read_bytes())
    from_directory = _explain(str(tmp_path))
    from_files = _explain(str(QOS), str(RES_DEMO))
    assert from_directory.returncode == from_files.returncode == 0, from_directory.stderr
    assert json.loads(from_directory.stdout) == json.loads(from_files.stdout)


def test_bad_standard_input_is_one_line_naming_it() -> None:
    done = _explain("-", stdin=b"kind: [\n")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith("nodeconf: -: invalid YAML") and done.stderr.count(b"\n") == 1
