"""environment.properties, categories.json and the expected-vs-actual CSV: written text and read back."""

import json
from pathlib import Path

import pytest

from nodeconf.report.categories import write_categories
from nodeconf.report.comparison import comparison_csv, parse_comparison
from nodeconf.report.properties import flatten_facts, format_properties, parse_properties, read_properties
from tests.unit.report.comparison_rows import Row


@pytest.mark.parametrize(
    ("entries", "text"),
    [
        pytest.param([("kernel", "6.1.0-28-amd64")], "kernel=6.1.0-28-amd64\n", id="plain"),
        pytest.param([("kubelet config", "/etc/k.yaml")], "kubelet\\ config=/etc/k.yaml\n", id="space-in-key"),
        pytest.param([("a=b:c", "x")], "a\\=b\\:c=x\n", id="separators-in-key"),
        pytest.param([("cmd", "a=b\nc\\d")], "cmd=a=b\\nc\\\\d\n", id="newline-backslash-in-value"),
        pytest.param([("#k", "")], "\\#k=\n", id="comment-char-and-empty-value"),
    ],
)
def test_properties_text_and_round_trip(entries: list[tuple[str, str]], text: str) -> None:
    assert format_properties(entries) == text
    assert parse_properties(text) == entries


def test_parse_properties_skips_comments_and_blank_lines_and_accepts_colon() -> None:
    text = "# generated\n\n! also a comment\nkernel: 6.1\n  pageSize = 4096\n"
    assert parse_properties(text) == [("kernel", "6.1"), ("pageSize", "4096")]


def test_missing_properties_file_has_no_entries(tmp_path: Path) -> None:
    assert read_properties(tmp_path / "environment.properties") == []


def test_flatten_facts_nests_with_dots_and_joins_sequences() -> None:
    facts = {"kernel": "6.1.0", "swap": {"capacity": 1073741824, "enabled": True},
             "controllers": ("cpu", "memory"), "runtime": None}
    assert flatten_facts(facts) == [
        ("kernel", "6.1.0"),
        ("swap.capacity", "1073741824"),
        ("swap.enabled", "true"),
        ("controllers", "cpu, memory"),
        ("runtime", ""),
    ]


def test_categories_split_product_infrastructure_not_applicable(tmp_path: Path) -> None:
    written = json.loads(write_categories(tmp_path).read_text(encoding="utf-8"))
    assert [(c["name"], c["matchedStatuses"]) for c in written] == [
        ("Product defect", ["failed"]),
        ("Infrastructure", ["broken"]),
        ("Not applicable", ["skipped"]),
    ]


def test_comparison_csv_shows_accepted_sets_and_absent_values() -> None:
    rows = [
        Row("res-demo", "hello", "kubepods.slice/p", "memory.high", {"max", "510025728"}, "max", "Memory QoS", True),
        Row("res-demo", "", "kubepods.slice/p", "memory.swap.max", "0", None, "NoSwap", False),
    ]
    assert comparison_csv(rows) == (
        "pod,container,cgroup_path,file,expected,actual,rule,ok\n"
        "res-demo,hello,kubepods.slice/p,memory.high,510025728 | max,max,Memory QoS,yes\n"
        "res-demo,,kubepods.slice/p,memory.swap.max,0,(absent),NoSwap,no\n"
    )
    assert parse_comparison(comparison_csv(rows)) == [
        {"pod": "res-demo", "container": "hello", "cgroup_path": "kubepods.slice/p", "file": "memory.high",
         "expected": "510025728 | max", "actual": "max", "rule": "Memory QoS", "ok": "yes"},
        {"pod": "res-demo", "container": "", "cgroup_path": "kubepods.slice/p", "file": "memory.swap.max",
         "expected": "0", "actual": "(absent)", "rule": "NoSwap", "ok": "no"},
    ]


def test_parse_comparison_rejects_other_csv() -> None:
    assert parse_comparison("a,b\n1,2\n") is None


def test_flatten_facts_writes_pairs_as_name_value_not_python_tuples() -> None:
    facts = {"hugepages": ((2 << 20, 16 << 20), (1 << 30, 0)), "kernel_config": (("CONFIG_PSI", "y"),)}
    assert flatten_facts(facts) == [("hugepages", "2097152=16777216, 1073741824=0"),
                                    ("kernel_config", "CONFIG_PSI=y")]
