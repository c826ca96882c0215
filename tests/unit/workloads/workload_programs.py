"""The container programs under workloads/programs/, loaded as modules so their pure parts can be unit tested."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PROGRAMS = Path(__file__).resolve().parents[3] / "workloads" / "programs"


def load_program(name: str) -> ModuleType:
    """workloads/programs/NAME.py as module NAME (registered in sys.modules, as dataclasses and pickling need)."""
    spec = importlib.util.spec_from_file_location(name, PROGRAMS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
