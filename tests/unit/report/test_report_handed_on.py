"""The HTML report as a vendor hands it on (issue 32 item 4): rules cite what a reader can open, node facts once with
human units, no internal temp paths, the node's scope, a mirrored check's upstream file and case, and per failure
cause what to check. The results are written here by hand in allure-python's shapes (as test_report_html does)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nodeconf.report.html import render_html
from nodeconf.report.node_display import neutral_paths, scope
from nodeconf.report.results import load_results
from nodeconf.semantics.documents import ARTICLE, POST
from tests.unit.report.documents import UNSHIPPED

RULE_ROW = ("pod,container,cgroup_path,file,expected,actual,rule,ok\n"
            "res-demo,hello,kubepods.slice/c.scope,cpu.weight,35,10,"
            "\"shares→weight (runtime formula for containers, " + ARTICLE.replace('"', '""') +
            ', section ""What the numbers turn into: cgroup v2"")",no\n'
            f"res-demo,,kubepods.slice/p.slice,memory.high,max,max,memory.high stays max ({POST} table),yes\n")
MESSAGE = ('AssertionError: pod res-demo: 1 mismatch\n  value of cgroup "cpu.weight" for container "hello" of pod '
           f'"res-demo" at kubepods.slice/c.scope was "10"; expected "35" (rule: {ARTICLE})\n'
           "  while reading /tmp/pytest-of-ci/pytest-7/run0/kubelet.yaml")
ENVIRONMENT = {
    "nodeconf version": "0.1.0", "command": "nodeconf run --node vm?runtime=runc --reports /tmp/tmp8x2/reports",
    "kubelet config": "/tmp/tmpab12/kubelet.yaml", "node": "vm?runtime=runc", "memory_capacity": "2069446656",
    "swap_capacity": "1073737728", "page_size": "4096", "kernel_version": "6.1.0-57-amd64",
    "hugepages": "(2097152, 16777216), (1073741824, 0)", "runtime": "runc", "runtime_version": "1.1.5+ds1",
    "kernel_config": "", "init": "minimal",
    "image": "nodeconf's reference image bookworm-1f6bb7eb03c17dd7 (its recipe and package versions)",
}


def _escape(key: str) -> str:
    return key.replace(" ", "\\ ")


@pytest.fixture
def page(tmp_path: Path) -> str:
    results = tmp_path / "allure-results"
    results.mkdir()
    (results / "c-attachment.csv").write_text(RULE_ROW, encoding="utf-8")
    labels = [{"name": "epic", "value": "upstream e2e test/e2e_node/pids_test.go"}, {"name": "feature",
              "value": "upstream"}, {"name": "upstream_case",
              "value": "test/e2e_node/pids_test.go: PodPidsLimit / should set pids.max for Pod"}]
    for uuid, name in (("u1", "test_weight[a]"), ("u2", "test_weight[b]")):
        body = {"uuid": uuid, "historyId": uuid, "name": name, "fullName": f"suites.x#{name}", "status": "failed",
                "labels": labels, "statusDetails": {"message": MESSAGE},
                "attachments": [{"name": "expected vs actual", "source": "c-attachment.csv", "type": "text/csv"}]}
        (results / f"{uuid}-result.json").write_text(json.dumps(body), encoding="utf-8")
    (results / "environment.properties").write_text(
        "".join(f"{_escape(key)}={value}\n" for key, value in ENVIRONMENT.items()), encoding="utf-8")
    return render_html(load_results(results))


def _text(page: str) -> str:
    return re.sub(r"<[^>]+>", " ", page).replace("&quot;", '"').replace("&#x27;", "'")


def test_rules_cite_what_a_reader_can_open(page: str) -> None:
    text = _text(page)
    assert f'(runtime formula for containers, {ARTICLE}, section "What the numbers turn into: cgroup v2")' in text
    assert f"memory.high stays max ({POST} table)" in text
    assert UNSHIPPED.findall(text) == []
    assert "References" in text and "How do requests, limits and QoS work?" in text


def test_node_facts_once_with_human_units(page: str) -> None:
    text = _text(page)
    assert text.count("6.1.0-57-amd64") == 1
    assert "1.92 GiB (2069446656 bytes)" in text and "1023.99 MiB (1073737728 bytes)" in text
    assert "2 MiB pages: 16 MiB (16777216 bytes); 1 GiB pages: none reserved" in text
    assert "(2097152" not in text and "kernel_config" not in text


def test_no_internal_temp_path(page: str) -> None:
    assert re.findall(r"/tmp/\S*", _text(page)) == []
    assert "&lt;tmp&gt;/…/kubelet.yaml" in page


def test_scope_names_the_image_who_started_the_containers_and_what_played_the_kubelet(page: str) -> None:
    text = _text(page)
    assert "image   nodeconf's reference image bookworm-1f6bb7eb03c17dd7 (its recipe and package versions)" in text
    assert "containers started by   the node's runc 1.1.5+ds1 (OCI runtime, called by nodeconf's enforcer)" in text
    assert "kubelet   nodeconf's enforcer (it plays the kubelet" in text


def test_mirrored_check_shows_its_upstream_file_and_case(page: str) -> None:
    assert ('mirrors upstream <a href="https://github.com/kubernetes/kubernetes/blob/master/test/e2e_node/pids_test.go">'
            "<code>test/e2e_node/pids_test.go</code></a> case “PodPidsLimit / should set pids.max for Pod”") in page


def test_failure_cause_says_what_to_check(page: str) -> None:
    assert ("what to check: container cpu.weight is the runtime&#x27;s shares→weight formula; a runtime writing the "
            "linear one fails here: upgrade to runc ≥ 1.3.2 / crun ≥ 1.23, or accept it with --cpu-weight-formula "
            "linear") in page


def test_a_kubernetes_node_scope_is_its_own_runtime_and_kubelet() -> None:
    facts = {"node": "kube:ctx?node=worker-1", "runtime": "containerd", "runtime_version": "2.1.1",
             "kubelet_version": "v1.34.2"}
    assert scope(facts) == [("containers started by", "the node's containerd 2.1.1 (CRI, through the node's kubelet)"),
                            ("kubelet", "the node's kubelet v1.34.2")]


@pytest.mark.parametrize(("runtime", "shown"), [
    ("direct", "nodeconf's enforcer (direct: it writes the cgroups itself; no container runtime exercised)"),
    ("containerd", "the node's containerd 1.7.24 (CRI, called by nodeconf's enforcer)"),
    ("youki", "the node's youki 1.7.24 (OCI runtime, called by nodeconf's enforcer)"),
], ids=["direct", "cri", "a-runtime-nodeconf-does-not-know-yet"])
def test_runtime_facts_are_shown_generically(runtime: str, shown: str) -> None:
    facts = {"node": f"vm?runtime={runtime}", "runtime": runtime,
             "runtime_version": "direct" if runtime == "direct" else "1.7.24"}
    assert dict(scope(facts))["containers started by"] == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("--reports /tmp/tmp8x2/reports", "--reports <tmp>/…/reports"),
    ("kube:/var/tmp/k/kubeconfig?node=a", "kube:<tmp>/…/kubeconfig?node=a"),
    ("/work/tmp/kept and /srv/data", "/work/tmp/kept and /srv/data"),
    ("/tmp", "/tmp"),
], ids=["tmp", "var-tmp-in-a-spec", "not-a-temp-dir", "the-dir-itself"])
def test_temp_paths_are_shown_neutral(text: str, shown: str) -> None:
    assert neutral_paths(text) == shown
