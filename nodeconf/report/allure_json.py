"""Reading Allure's JSON files defensively: one-line errors for unreadable files, typed access to loose fields."""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path


class ReportError(Exception):
    """A results directory or report output that cannot be used; the message is one line."""


def load_json(path: Path) -> dict[str, object]:
    """The JSON object in `path`; ReportError naming the file if it is unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportError(f"{path}: unreadable Allure result ({error})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: unreadable Allure result (not a JSON object)")
    return data


def mapping(value: object) -> Mapping[str, object]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def sequence(value: object) -> Sequence[object]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: object) -> str:
    """`value` if it is a JSON string, else ""."""
    return value if isinstance(value, str) else ""
