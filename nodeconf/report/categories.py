"""Allure categories for nodeconf: product defect, infrastructure, not applicable.

Source: DESIGN.md "How checks are written" (a failed assertion is a product defect, an infrastructure fault an
error, a check that cannot apply a skip) and Allure's categories.json format (name + matchedStatuses).
"""

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Category:
    """One Allure category: the statuses it collects."""

    name: str
    description: str
    statuses: tuple[str, ...]

    def as_allure(self) -> dict[str, object]:
        """The category as Allure's categories.json (and allurerc `categories`) spell it."""
        return {"name": self.name, "description": self.description, "matchedStatuses": list(self.statuses)}


CATEGORIES: tuple[Category, ...] = (
    Category("Product defect", "The node disagreed with the oracle: a check's assertion failed.", ("failed",)),
    Category("Infrastructure", "The check could not run to a verdict: the node, driver or harness raised an error.",
             ("broken",)),
    Category("Not applicable", "The check does not apply to this node or profile and was skipped with a reason.",
             ("skipped",)),
)


def category_name(status: str) -> str:
    """The name of the category a check with Allure status `status` falls in ("" for passed)."""
    return next((category.name for category in CATEGORIES if status in category.statuses), "")


def categories_json() -> str:
    """The categories as the JSON text Allure reads from `categories.json`."""
    return json.dumps([category.as_allure() for category in CATEGORIES], indent=2) + "\n"


def write_categories(results_dir: Path) -> Path:
    """Write `categories.json` into an Allure results directory and return its path."""
    path = results_dir / "categories.json"
    path.write_text(categories_json(), encoding="utf-8")
    return path
