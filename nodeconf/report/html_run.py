"""The HTML report's run header: what judged the node (version, commit, profile, kubelet config, command, times)
and, for a one-node run, what the node is (its layer facts).

Source: issues 17 and 13 item 4; the values are the run entries and node facts of environment.properties
(nodeconf/report/run_info.py, fixtures/evidence.py).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from nodeconf.report.html_nodes import LAYER_FACTS
from nodeconf.report.run_info import RUN_KEYS, run_fields

NODE_KEY = "node"


def run_header(environment: Sequence[tuple[str, str]]) -> str:
    """A compact `key value` list of the run entries, the node spec and the node's layer facts (a several-node run
    has them in its node × check table instead); a note when none were recorded."""
    fields = {**run_fields(environment), **{k: v for k, v in environment if k == NODE_KEY}}
    if not fields:
        return '<p class="run none">No run information was recorded (environment.properties is missing).</p>'
    recorded = dict(environment)
    facts = [(title, recorded[key]) for key, title in LAYER_FACTS if key not in fields and recorded.get(key)]
    rows = "".join(
        f"<dt>{html.escape(key)}</dt><dd><code>{html.escape(value)}</code></dd>"
        for key, value in [*((key, fields[key]) for key in (*RUN_KEYS, NODE_KEY) if key in fields), *facts]
    )
    return f'<dl class="run">{rows}</dl>'
