"""The report's "Changes since an earlier run" section (`nodeconf report --diff OLD NEW`): verdict changes, changed
mismatches of checks failing in both, changed node facts."""

import html

from nodeconf.report.run_diff import KIND_LABELS, KINDS, OTHER, PASS_TO_FAIL, RunDiff


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _lines(lines: tuple[str, ...]) -> str:
    return "<br>".join(f"<code>{_e(line)}</code>" for line in lines) or "(none)"


def _label(kind: str, before: str, after: str) -> str:
    return f"{before} → {after}" if kind == OTHER else KIND_LABELS[kind]


def diff_section(diff: RunDiff) -> str:
    """The section, placed first in the report: its summary, then one table per kind of change that occurred."""
    parts = [f'<p class="meta">from <code>{_e(diff.old)}</code> to <code>{_e(diff.new)}</code>: '
             f"<strong>{_e(diff.summary)}</strong></p>"]
    if diff.verdicts:
        rows = "".join(
            f'<tr class="{"failed" if c.kind == PASS_TO_FAIL else ""}"><td>{_e(_label(c.kind, c.before, c.after))}</td>'
            f"<td>{_e(c.before or '—')}</td><td>{_e(c.after or '—')}</td><td><code>{_e(c.id)}</code></td></tr>"
            for kind in KINDS for c in diff.of_kind(kind))
        parts.append('<table class="diff"><caption>checks whose verdict changed</caption><thead><tr><th>change</th>'
                     f"<th>before</th><th>after</th><th>check</th></tr></thead><tbody>{rows}</tbody></table>")
    if diff.mismatches:
        rows = "".join(f"<tr><td><code>{_e(m.id)}</code></td><td>{_lines(m.before)}</td><td>{_lines(m.after)}</td></tr>"
                       for m in diff.mismatches)
        parts.append('<table class="diff"><caption>checks failing in both runs whose mismatch changed</caption>'
                     f"<thead><tr><th>check</th><th>before</th><th>after</th></tr></thead><tbody>{rows}</tbody></table>")
    if diff.facts:
        rows = "".join(f"<tr><td>{_e(f.node or 'node')}</td><th>{_e(f.key)}</th><td>{_e(f.before or '—')}</td>"
                       f"<td>{_e(f.after or '—')}</td></tr>" for f in diff.facts)
        parts.append('<table class="diff"><caption>node facts that changed</caption><thead><tr><th>node</th>'
                     f"<th>fact</th><th>before</th><th>after</th></tr></thead><tbody>{rows}</tbody></table>")
    return f'<section id="diff"><h2>Changes since an earlier run</h2>{"".join(parts)}</section>'
