"""`nodeconf clean --node SPEC` answers every node scheme in one line, or refuses in one line with exit 2, and
never with a traceback (issue 27: `--node kind` used to end in an AssertionError). Every run is a dry run in a
process whose cache, state, home and kubeconfig are empty temp directories, so nothing real is read or touched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SPECS = [
    "vm",
    "vm?image=/nonexistent/vendor.qcow2",
    "vm?image={tmp}/vendor.qcow2",
    "local",
    "ssh://root@192.0.2.1?key=/nonexistent/key",
    "ssh://root@192.0.2.1?key={tmp}/key",  # TEST-NET-1 (RFC 5737): a dry run never connects
    "kube",
    "kube:nodeconf-no-such-context",
    "kind",
    "kind:/nonexistent/kind-config.yaml",
    "ftp://nowhere",
]


@pytest.mark.parametrize("spec", SPECS)
def test_clean_answers_every_scheme_without_a_traceback(spec: str, tmp_path: Path) -> None:
    for name in ("vendor.qcow2", "key"):
        (tmp_path / name).write_text("")
    spec = spec.format(tmp=tmp_path)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    done = subprocess.run([sys.executable, "-m", "nodeconf", "clean", "--dry-run", "--node", spec],
                          capture_output=True, text=True, env=env, timeout=120)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert done.returncode in (0, 2), out
    assert out.strip(), "no answer at all"
    if done.returncode == 2:
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
