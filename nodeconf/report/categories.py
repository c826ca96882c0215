"""Allure categories for nodeconf: product defect, infrastructure, not applicable.

Source: DESIGN.md "How checks are written" (a failed assertion is a product defect, an infrastructure fault an
error, a check that cannot apply a skip) and Allure's categories.json format (name + matchedStatuses).
"""

import json
from pathlib import Path

CATEGORIES: tuple[dict[str, object], ...] = (
    {
        "name": "Product defect",
        "description": "The node disagreed with the oracle: a check's assertion failed.",
        "matchedStatuses": ["failed"],
    },
    {
        "name": "Infrastructure",
        "description": "The check could not run to a verdict: the node, driver or harness raised an error.",
        "matchedStatuses": ["broken"],
    },
    {
        "name": "Not applicable",
        "description": "The check does not apply to this node or profile and was skipped with a reason.",
        "matchedStatuses": ["skipped"],
    },
)


def categories_json() -> str:
    """The categories as the JSON text Allure reads from `categories.json`."""
    return json.dumps(list(CATEGORIES), indent=2) + "\n"


def write_categories(results_dir: Path) -> Path:
    """Write `categories.json` into an Allure results directory and return its path."""
    path = results_dir / "categories.json"
    path.write_text(categories_json(), encoding="utf-8")
    return path
