"""Run identity for the report: argument redaction, the kubelet config record, entries, the HTML run header."""

from __future__ import annotations

import hashlib
import socket
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from nodeconf.report.html_run import run_header
from nodeconf.report.run_info import RUN_KEYS, RunInfo, command_line, kubelet_config_record, redact, utc_now


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        pytest.param("ssh://root:hunter2@host:2222", "ssh://root:***@host:2222", id="url-password"),
        pytest.param("--node=ssh://root:p%40ss@host?key=/k", "--node=ssh://root:***@host?key=/k", id="in-option"),
        pytest.param("ssh://root@host:2222?key=KEYFILE", "ssh://root@host:2222?key=KEYFILE", id="key-path-kept"),
        pytest.param("kube:ctx?token=abc&x=1", "kube:ctx?token=***&x=1", id="token-query"),
        pytest.param("--password=hunter2", "--password=***", id="password-option"),
        pytest.param("https://example/a?api_key=s3cr3t", "https://example/a?api_key=***", id="api-key"),
        pytest.param("-k", "-k", id="plain"),
    ],
)
def test_redact(argument: str, expected: str) -> None:
    assert redact(argument) == expected


def test_command_line_is_shell_quoted_and_redacted() -> None:
    assert command_line(["nodeconf", "run", "--node", "vm?memory=6144&swap=2048", "ssh://u:pw@h"]) == (
        "nodeconf run --node 'vm?memory=6144&swap=2048' 'ssh://u:***@h'")


def test_kubelet_config_record_of_a_file_hashes_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text("kind: KubeletConfiguration\nmemorySwap: {swapBehavior: LimitedSwap}\n", encoding="utf-8")
    record = kubelet_config_record(path)
    assert (record.origin, record.content) == (str(path), path.read_text())
    assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_kubelet_config_record_without_a_file_is_the_default_document() -> None:
    record = kubelet_config_record(None)
    doc = yaml.safe_load(record.content)
    assert record.origin == "(none given: nodeconf defaults)"
    assert (doc["kind"], doc["apiVersion"]) == ("KubeletConfiguration", "kubelet.config.k8s.io/v1beta1")
    assert record.sha256 == hashlib.sha256(record.content.encode()).hexdigest()


def test_utc_now_is_iso_utc_to_the_second() -> None:
    now = datetime.fromisoformat(utc_now())
    assert now.utcoffset() == timedelta(0) and now.microsecond == 0


def test_entries_in_order(tmp_path: Path) -> None:
    info = RunInfo("", "1.36", kubelet_config_record(None), "nodeconf run",
                   "2026-11-30T14:00:00+00:00", "2026-11-30T14:01:00+00:00")
    entries = dict(info.entries())
    assert list(entries) == list(RUN_KEYS)
    assert (entries["profile"], entries["command"], entries["controller"]) == ("1.36", "nodeconf run",
                                                                                socket.gethostname())
    assert entries["nodeconf commit"]  # "unknown" rather than empty when no commit was recorded


def test_run_header_shows_the_run_entries_escaped() -> None:
    header = run_header([("nodeconf version", "0.1.0"), ("command", "nodeconf run -k 'a<b'"), ("node", "vm"),
                         ("memory_capacity", "2069446656")])
    assert header.startswith('<dl class="run">')
    assert "<dt>nodeconf version</dt><dd><code>0.1.0</code></dd>" in header
    assert "a&lt;b" in header and "<dt>node</dt>" in header and "memory_capacity" not in header


def test_run_header_shows_what_the_node_is_after_the_run() -> None:
    header = run_header([("command", "nodeconf run"), ("node", "vm?debian=trixie&runtime=crun"),
                         ("memory_capacity", "2069446656"), ("debian_release", "trixie"),
                         ("kernel_version", "6.12.118+deb13-amd64"), ("init", "systemd"),
                         ("init_version", "systemd 257"), ("runtime", "crun"), ("runtime_version", "1.21"),
                         ("cpu_weight_formula", "linear")])
    terms = [term.split("</dt>")[0] for term in header.split("<dt>")[1:]]
    assert terms == ["command", "node", "kernel", "init", "init version", "cpu.weight formula", "Debian release",
                     "containers started by", "kubelet"]
    assert "<dt>cpu.weight formula</dt><dd><code>linear</code></dd>" in header
    assert "<dd><code>the node&#x27;s crun 1.21 (OCI runtime, called by nodeconf&#x27;s enforcer)</code></dd>" in header


def test_run_header_without_entries_says_so() -> None:
    assert "No run information was recorded" in run_header([])


@pytest.mark.parametrize("program", ["/work/wt-x/nodeconf/__main__.py", "/home/me/venv/bin/nodeconf",
                                     "/work/wt-x/nodeconf/cli/main.py", "nodeconf"])
def test_command_line_names_nodeconf_not_where_it_is_installed(program: str) -> None:
    assert command_line([program, "run", "--node", "vm"]) == "nodeconf run --node vm"


def test_command_line_keeps_another_program() -> None:
    assert command_line(["/usr/bin/pytest", "suites"]) == "/usr/bin/pytest suites"


def test_header_shows_a_recorded_command_without_where_nodeconf_was_installed() -> None:
    header = run_header([("command", "/work/wt-x/nodeconf/__main__.py run --reports /tmp/tmpq1w2/reports")])
    assert "<dd><code>nodeconf run --reports &lt;tmp&gt;/…/reports</code></dd>" in header
