"""The HTML report's run header: what judged the node (version, commit, profile, kubelet config, command, times)
and, for a one-node run, what the node is: its layer facts and its scope (who started the containers, what played
the kubelet); its other facts are in the report's Node section, so each fact is shown once.

Source: issues 17 and 13 item 4; the values are the run entries and node facts of environment.properties
(nodeconf/report/run_info.py, nodeconf/fixtures/evidence.py).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from nodeconf.report.html_nodes import LAYER_FACTS
from nodeconf.report.node_display import neutral_paths, scope
from nodeconf.report.run_info import COMMAND_KEY, RUN_KEYS, run_fields, shown_command

NODE_KEY = "node"
IN_SCOPE = ("runtime", "runtime_version")  # the scope line names them


def header_facts() -> tuple[str, ...]:
    """The facts a one-node run's header shows (its Node section leaves them out)."""
    return tuple(key for key, _ in LAYER_FACTS)


def run_header(environment: Sequence[tuple[str, str]]) -> str:
    """A compact `key value` list of the run entries, the node spec and, for a one-node run, its layer facts and
    scope (a several-node run has them in its node × check table and node facts); a note when none were recorded."""
    fields = {**run_fields(environment), **{k: v for k, v in environment if k == NODE_KEY}}
    if not fields:
        return '<p class="run none">No run information was recorded (environment.properties is missing).</p>'
    recorded = dict(environment)
    single = "," not in recorded.get(NODE_KEY, "")
    facts = [(title, recorded[key]) for key, title in LAYER_FACTS
             if single and key not in fields and key not in IN_SCOPE and recorded.get(key)]
    facts += scope(recorded) if single else []
    rows = "".join(
        f"<dt>{html.escape(key)}</dt><dd><code>{html.escape(_shown(key, value))}</code></dd>"
        for key, value in [*((key, fields[key]) for key in (*RUN_KEYS, NODE_KEY) if key in fields), *facts]
    )
    return f'<dl class="run">{rows}</dl>'


def _shown(key: str, value: str) -> str:
    return neutral_paths(shown_command(value) if key == COMMAND_KEY else value)
