"""JUnit with one `testsuite` per node: pytest's single suite split by the node name in each test case's id.

Source: issue 14 item 1; pytest's junitxml (xunit2: `testsuites` > `testsuite` with `properties` > `testcase`).
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from nodeconf.report.allure_json import ReportError, shown
from nodeconf.run.check_ids import node_of_test

OTHER_SUITE = "nodeconf"  # test cases of no node (e.g. the run_complete error of an interrupted run)
COUNTED = (("failures", "failure"), ("errors", "error"), ("skipped", "skipped"))


def _suite(template: ET.Element, name: str, cases: list[ET.Element]) -> ET.Element:
    suite = ET.Element("testsuite", dict(template.attrib))
    suite.set("name", name)
    properties = template.find("properties")
    copied = copy.deepcopy(properties) if properties is not None else ET.Element("properties")
    if name != OTHER_SUITE:
        ET.SubElement(copied, "property", {"name": "node", "value": name})
    suite.append(copied)
    suite.extend(cases)
    suite.set("tests", str(len(cases)))
    for attribute, tag in COUNTED:
        suite.set(attribute, str(sum(1 for case in cases if case.find(tag) is not None)))
    suite.set("time", f"{sum(float(case.get('time', '0') or 0) for case in cases):.3f}")
    return suite


def split_junit_by_node(path: Path, names: Sequence[str]) -> None:
    """Rewrite the JUnit file at `path` with one testsuite per node (named after it, in the given order, each with
    a `node` property and the run's properties), and one `nodeconf` suite for test cases of no node."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as error:
        raise ReportError(f"{shown(path)}: cannot read the JUnit file ({error})") from None
    root = tree.getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        return
    groups: dict[str, list[ET.Element]] = {name: [] for name in (*names, OTHER_SUITE)}
    for case in (case for suite in suites for case in suite.iter("testcase")):
        groups[node_of_test(case.get("name", ""), names) or OTHER_SUITE].append(case)
    out = ET.Element("testsuites", {"name": root.get("name", "pytest tests")})
    out.extend(_suite(suites[0], name, cases) for name, cases in groups.items() if cases or name != OTHER_SUITE)
    try:
        ET.ElementTree(out).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as error:
        raise ReportError(f"{shown(path)}: cannot rewrite the JUnit file ({error.strerror})") from None
