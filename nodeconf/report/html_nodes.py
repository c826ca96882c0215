"""The HTML report's node × check matrix of a several-node run: one column per node headed by its layer facts
(kernel, init, runtime, Debian release where recorded) and its scope (image, who started the containers, what played
the kubelet), one row per check, each cell that node's status.

Source: issue 14 item 1; the node facts are each node's environment-NAME.properties (nodeconf/fixtures/evidence.py).
"""

from __future__ import annotations

import html

from nodeconf.report.node_display import SCOPE_TITLES, fact_rows, neutral_paths, scope
from nodeconf.report.results import Check, RunResults, Status
from nodeconf.report.verdict import node_verdict
from nodeconf.run.check_ids import node_of_test

# The layer facts shown above each node's column, in this order, where the node recorded them.
LAYER_FACTS = (("node", "spec"), ("kernel_version", "kernel"), ("init", "init"), ("init_version", "init version"),
               ("runtime", "runtime"), ("runtime_version", "runtime version"),
               ("cpu_weight_formula", "cpu.weight formula"), ("debian_release", "Debian release"),
               ("profile", "profile"))


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def check_row(check: Check, names: tuple[str, ...]) -> str:
    """The check's id without its node (`module#test_x[case]`), the same for every node."""
    module, _, _ = check.full_name.rpartition("#")
    name = check.name
    node = node_of_test(name, names)
    if node is not None:
        base, _, params = name.partition("[")
        rest = params[:-1][len(node) + 1:]
        name = f"{base}[{rest}]" if rest else base
    return f"{module}#{name}" if module else name


def node_matrix(results: RunResults) -> str:
    """The node × check table, or "" for a single-node run."""
    names = results.node_names
    if len(names) < 2:
        return ""
    cells: dict[str, dict[str, Status]] = {}
    for check in results.checks:
        cells.setdefault(check_row(check, names), {})[check.node] = check.status
    environments = {node.name: node for node in results.nodes}
    head = "".join(f'<th scope="col">{_e(name)}</th>' for name in names)
    verdicts = "".join(
        f'<td class="verdict {_verdict_class(results, name)}">{_e(node_verdict(results, name).label)}</td>'
        for name in names)
    facts = "".join(
        f'<tr class="fact"><th scope="row">{_e(title)}</th>'
        + "".join(f"<td><code>{_e(neutral_paths(environments[name].get(key)))}</code></td>" if name in environments
                  and environments[name].get(key) else "<td></td>" for name in names)
        + "</tr>"
        for key, title in LAYER_FACTS
        if any(name in environments and environments[name].get(key) for name in names))
    scopes = {name: dict(scope(dict(environments[name].entries))) for name in names if name in environments}
    facts += "".join(
        f'<tr class="fact"><th scope="row">{_e(title)}</th>'
        + "".join(f"<td>{_e(scopes.get(name, {}).get(title, ''))}</td>" for name in names) + "</tr>"
        for title in SCOPE_TITLES if any(title in found for found in scopes.values()))
    rows = "".join(
        f'<tr><th scope="row"><code>{_e(row)}</code></th>'
        + "".join(_cell(statuses, name) for name in names) + "</tr>"
        for row, statuses in sorted(cells.items()))
    return (f'<section id="nodes"><h2>Nodes × checks</h2><table class="nodes">'
            f'<thead><tr><th scope="col">node</th>{head}</tr>{facts}'
            f'<tr class="fact"><th scope="row">verdict</th>{verdicts}</tr></thead>'
            f"<tbody>{rows}</tbody></table></section>")


def node_facts(results: RunResults) -> str:
    """Each node of a several-node run: the facts its column head (layer facts, scope) does not show, as
    node_display shows them, collapsed."""
    return "".join(
        f'<details class="node-facts"><summary>{_e(node.name)}</summary><table class="facts"><tbody>'
        + "".join(f"<tr><th>{_e(key)}</th><td>{_e(value)}</td></tr>"
                  for key, value in fact_rows(node.entries, [key for key, _ in LAYER_FACTS]))
        + "</tbody></table></details>"
        for node in results.nodes)


def _cell(statuses: dict[str, Status], name: str) -> str:
    status = statuses.get(name) or statuses.get("")  # a check of no node ran once, for every node
    if status is None:
        return '<td class="none">–</td>'
    return f'<td class="n {status.value}">{status.value}</td>'


def _verdict_class(results: RunResults, name: str) -> str:
    code = node_verdict(results, name).code
    return (Status.PASSED if code == 0 else Status.FAILED if code == 1 else Status.BROKEN).value

