"""Whether a run finished: a marker next to the Allure results, written incomplete at start, flipped at a clean end.

Source: issue 10 item 3 (a run that did not finish never looks green); Allure's result model for the broken
pseudo-result that tells Allure's own report the same.
"""

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from nodeconf.report.allure_json import ReportError, load_json, text

RUN_STATE_FILE = "nodeconf-run.json"
# The broken pseudo-result an incomplete run adds, so Allure's report and any Allure consumer sees it too.
RUN_CHECK_FULL_NAME = "nodeconf.run#run_complete"
RUN_CHECK_NAME = "the run finished"


@dataclass(frozen=True)
class RunState:
    """`complete` once pytest finished the session cleanly; otherwise why not."""

    complete: bool
    reason: str


def write_run_state(results_dir: Path, state: RunState) -> Path:
    """Record the run's state atomically (a killed writer leaves the previous state, never half a file)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / RUN_STATE_FILE
    scratch = path.with_name(f".{RUN_STATE_FILE}.{os.getpid()}")
    scratch.write_text(json.dumps({"complete": state.complete, "reason": state.reason}) + "\n", encoding="utf-8")
    scratch.replace(path)
    return path


def read_run_state(results_dir: Path) -> RunState | None:
    """The recorded state; None when the results carry no marker (written by another tool)."""
    path = results_dir / RUN_STATE_FILE
    if not path.is_file() and not path.is_symlink():
        return None
    raw = load_json(path)
    complete = raw.get("complete")
    if not isinstance(complete, bool):
        raise ReportError(f"{path}: unreadable run state (no true/false 'complete')")
    return RunState(complete, text(raw.get("reason")))


def incomplete_result(reason: str) -> dict[str, object]:
    """A broken Allure result saying the run did not finish and why."""
    now = int(time.time() * 1000)
    return {
        "uuid": str(uuid.uuid4()),
        "historyId": RUN_CHECK_FULL_NAME,
        "name": RUN_CHECK_NAME,
        "fullName": RUN_CHECK_FULL_NAME,
        "status": "broken",
        "statusDetails": {"message": f"INTERRUPTED: the run did not finish ({reason}); checks that did not run "
                                     "have no result"},
        "labels": [{"name": "epic", "value": "nodeconf run"}, {"name": "feature", "value": "run"}],
        "start": now,
        "stop": now,
    }


def write_incomplete_result(results_dir: Path, reason: str) -> Path:
    """Write the broken pseudo-result into the results directory."""
    result = incomplete_result(reason)
    path = results_dir / f"{result['uuid']}-result.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    return path
