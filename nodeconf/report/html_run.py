"""The HTML report's run header: what judged the node (version, commit, profile, kubelet config, command, times).

Source: issue 17; the values are the run entries of environment.properties (nodeconf/report/run_info.py).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from nodeconf.report.run_info import RUN_KEYS, run_fields

NODE_KEY = "node"


def run_header(environment: Sequence[tuple[str, str]]) -> str:
    """A compact `key value` list of the run entries plus the node spec; a note when none were recorded."""
    fields = {**run_fields(environment), **{k: v for k, v in environment if k == NODE_KEY}}
    if not fields:
        return '<p class="run none">No run information was recorded (environment.properties is missing).</p>'
    rows = "".join(
        f"<dt>{html.escape(key)}</dt><dd><code>{html.escape(fields[key])}</code></dd>"
        for key in (*RUN_KEYS, NODE_KEY)
        if key in fields
    )
    return f'<dl class="run">{rows}</dl>'
