"""Allure results post-processing: a check that failed in a fixture's setup or teardown is broken, not failed.

Source: DESIGN.md "an infrastructure fault is an error, not a failure"; pytest reports setup/teardown failures as
errors, but allure-pytest (listener.py `_exception_brokes_test`) marks pytest.fail/AssertionError there "failed".
"""

import json
from collections.abc import Iterable
from pathlib import Path

from nodeconf.report.allure_json import ReportError, load_json, mapping, sequence, shown, text

FAULTS = ("failed", "broken")


def _faulty_messages(fixtures: Iterable[object]) -> set[str]:
    return {
        text(mapping(mapping(fixture).get("statusDetails")).get("message")).strip()
        for fixture in fixtures
        if mapping(fixture).get("status") in FAULTS
    }


def fixture_faults(results_dir: Path) -> tuple[set[str], dict[str, set[str]]]:
    """Checks (uuids) whose setup failed, and per check the messages of its fixtures whose teardown failed."""
    setup_failed: set[str] = set()
    teardown_messages: dict[str, set[str]] = {}
    for path in sorted(results_dir.glob("*-container.json")):
        container = load_json(path)
        children = [text(child) for child in sequence(container.get("children"))]
        befores_failed = bool(_faulty_messages(sequence(container.get("befores"))))
        afters_failed = _faulty_messages(sequence(container.get("afters")))
        for child in children:
            if befores_failed:
                setup_failed.add(child)
            teardown_messages.setdefault(child, set()).update(afters_failed)
    return setup_failed, teardown_messages


def mark_fixture_failures_broken(results_dir: Path) -> list[str]:
    """Rewrite failed checks whose failure came from a fixture as broken; return their names.

    Setup failed: the body never ran, so nothing was checked. Teardown failed: only when the check's own message
    is that teardown's (a failed assertion in the body stays a product defect).
    """
    setup_failed, teardown_messages = fixture_faults(results_dir)
    changed: list[str] = []
    for path in sorted(results_dir.glob("*-result.json")):
        result = load_json(path)
        uuid = text(result.get("uuid"))
        message = text(mapping(result.get("statusDetails")).get("message")).strip()
        if result.get("status") != "failed":
            continue
        if uuid in setup_failed or message in teardown_messages.get(uuid, set()):
            result["status"] = "broken"
            try:
                path.write_text(json.dumps(result), encoding="utf-8")
            except (OSError, ValueError) as error:
                raise ReportError(f"{shown(path)}: cannot rewrite the result ({error})") from None
            changed.append(text(result.get("name")))
    return changed
