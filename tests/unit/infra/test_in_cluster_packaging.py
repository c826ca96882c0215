"""The in-cluster packaging: infra/image/Containerfile copies files that exist and runs `nodeconf run` with the kube
driver; infra/sonobuoy/nodeconf-plugin.yaml is a Job plugin whose container the kubernetes client's models accept
unchanged, and whose script keeps Sonobuoy's done-file contract (site/content/docs/main/plugins.md "How Plugins
Work"; pkg/worker/worker.go GatherResults: the done file holds the result file's path)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CONTAINERFILE = REPO / "nodeconf" / "infra" / "image" / "Containerfile"
PLUGIN = REPO / "nodeconf" / "infra" / "sonobuoy" / "nodeconf-plugin.yaml"
RESULTS = "/tmp/sonobuoy/results"  # pkg/plugin/constants.go ResultsDir


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Containerfile, comments and blank lines left out."""
    lines = [line for line in CONTAINERFILE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [(line.split(None, 1)[0], line.split(None, 1)[1]) for line in lines]


def test_the_containerfile_copies_only_files_that_exist() -> None:
    copies = [shlex.split(args) for op, args in instructions() if op == "COPY"]
    sources = [source for args in copies for source in args[:-1]]
    assert sources, "nothing copied"
    missing = [s for s in sources if not (REPO / s).exists()]
    assert not missing, f"the Containerfile copies files that do not exist: {missing}"
    for needed in ("pyproject.toml", "conftest.py", "nodeconf/", "suites/", "workloads/"):
        assert needed in sources, f"`nodeconf run` in the image needs {needed}"


def test_the_containerfile_runs_nodeconf_with_the_kube_driver_unprivileged() -> None:
    ops = dict(instructions())
    assert ops["FROM"].startswith("docker.io/library/python:3.12")
    assert ops["WORKDIR"] == "/opt/nodeconf"
    assert "pip install --editable ." in ops["RUN"]
    assert ops["USER"] == "65532:65532"
    assert json.loads(ops["ENTRYPOINT"])[:4] == ["nodeconf", "run", "--node", "kube"]


def plugin() -> dict[str, Any]:
    doc = yaml.safe_load(PLUGIN.read_text())
    assert isinstance(doc, dict)
    return doc


def test_the_plugin_is_a_junit_job_plugin() -> None:
    """sonobuoy-config fields as pkg/plugin/manifest/manifest.go SonobuoyConfig names them."""
    doc = plugin()
    assert set(doc) == {"sonobuoy-config", "spec"}
    config = doc["sonobuoy-config"]
    assert config["driver"] == "Job" and config["plugin-name"] == "nodeconf" and config["result-format"] == "junit"
    assert set(config) <= {"driver", "plugin-name", "skip-cleanup", "result-format", "result-files", "description",
                           "source-url", "order"}


def test_the_plugin_container_is_valid_for_the_kubernetes_models() -> None:
    """The container builds the client's V1Container and serializes back to the same document (an unknown or
    misspelt field would be dropped)."""
    from kubernetes import client

    spec = plugin()["spec"]
    model = client.V1Container.from_dict(spec)
    assert client.ApiClient().sanitize_for_serialization(model) == spec  # type: ignore[no-untyped-call]
    assert {"name": "results", "mountPath": RESULTS} in spec["volumeMounts"]
    assert {"name": "NODECONF_RESULTS", "value": RESULTS} in spec["env"]
    security = spec["securityContext"]
    assert security["runAsNonRoot"] and not security["allowPrivilegeEscalation"]
    assert security["capabilities"] == {"drop": ["ALL"]}


FAKE_NODECONF = """#!{python}
import os, sys
from pathlib import Path
argv = sys.argv[1:]
Path(os.environ["FAKE_ARGV"]).write_text(" ".join(argv))
reports = Path(argv[argv.index("--reports") + 1])
if os.environ.get("FAKE_JUNIT"):
    (reports / "junit.xml").write_text("<testsuites/>")
    (reports / "summary.json").write_text("{{}}")
    (reports / "html").mkdir()
    (reports / "html" / "nodeconf-report.html").write_text("<html/>")
sys.exit(int(os.environ["FAKE_EXIT"]))
"""


@pytest.mark.parametrize(("junit", "status", "expected_exit"), [
    (True, 0, 0), (True, 1, 0), (True, 2, 0), (False, 2, 2), (False, 0, 1),
], ids=["passed", "check-failed", "interrupted-with-junit", "usage-error", "no-junit-yet-zero"])
def test_the_plugin_script_writes_the_done_file_only_with_a_junit(tmp_path: Path, junit: bool, status: int,
                                                                  expected_exit: int) -> None:
    """The plugin's own shell script, with a fake `nodeconf` on PATH: the done file names the JUnit (no newline),
    and without a JUnit there is no done file and the exit is non-zero."""
    bin_dir, results, reports = tmp_path / "bin", tmp_path / "results", tmp_path / "reports"
    bin_dir.mkdir()
    results.mkdir()
    reports.mkdir()
    fake = bin_dir / "nodeconf"
    fake.write_text(FAKE_NODECONF.format(python=sys.executable))
    fake.chmod(0o755)
    spec = plugin()["spec"]
    assert {e["name"]: e["value"] for e in spec["env"]}["NODECONF_ARGS"] == "", "a useful run needs no arguments"
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "NODECONF_RESULTS": str(results),
           "NODECONF_REPORTS": str(reports), "NODECONF_ARGS": "-- -k swap", "FAKE_ARGV": str(tmp_path / "argv"),
           "FAKE_EXIT": str(status), "FAKE_JUNIT": "1" if junit else ""}
    done = subprocess.run([*spec["command"], *spec["args"]], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == expected_exit, done.stderr
    assert (tmp_path / "argv").read_text() == f"run --node kube --reports {reports} -- -k swap"
    if junit:
        tarball = results / "nodeconf-results.tar.gz"
        assert (results / "done").read_text() == str(tarball)
        with tarfile.open(tarball) as tar:
            assert {"junit.xml", "summary.json", "html/nodeconf-report.html"} <= set(tar.getnames())
    else:
        assert not (results / "done").exists()
        assert "nodeconf left no JUnit" in done.stderr
