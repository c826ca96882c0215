"""Allure Report 3's own single-file HTML, rendered by the pinned npm CLI when it is installed.

Source: MEASURED.md "Report tooling" (Allure 3 awesome plugin, `singleFile: true`, offline rendering).
"""

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from nodeconf.report.categories import CATEGORIES
from nodeconf.report.results import ReportError

TOOL_DIR = Path(__file__).resolve().parent / "npm"
INSTALL_HINT = f"sh {TOOL_DIR.parent / 'install-tool.sh'}"  # also where a wheel installed it
GENERATE_TIMEOUT_S = 300
# The awesome plugin always embeds Google Analytics (generators.js: `analyticsEnable: true`); a report opened
# offline or inside a company must not call out, so the tag and its inline set-up script are removed.
ANALYTICS = re.compile(
    r'<script async src="https://www\.googletagmanager\.com/gtag/js[^"]*"></script>\s*<script>[^<]*gtag\([^<]*</script>'
)


def allure_cli() -> Path | None:
    """The installed Allure 3 command, or None when install-tool.sh has not run."""
    cli = TOOL_DIR / "node_modules" / ".bin" / "allure"
    return cli if cli.is_file() else None


def allure_config(output_dir: Path) -> str:
    """An `allurerc.mjs` for one self-contained HTML file: grouped by source, area, rule; failures first."""
    config = {
        "name": "nodeconf conformance",
        "output": str(output_dir),
        "categories": [category.as_allure() for category in CATEGORIES],
        "plugins": {
            "awesome": {
                "options": {
                    "singleFile": True,
                    "reportName": "nodeconf conformance",
                    "reportLanguage": "en",
                    "groupBy": ["epic", "feature", "story"],
                    "defaultSortBy": "status,asc",
                }
            }
        },
    }
    return f"export default {json.dumps(config, indent=2)};\n"


def write_allure_html(cli: Path, results_dir: Path, path: Path) -> Path:
    """Render `results_dir` with Allure 3 into the single file `path`."""
    with tempfile.TemporaryDirectory(prefix="nodeconf-allure-") as scratch:
        output_dir = Path(scratch) / "out"
        config = Path(scratch) / "allurerc.mjs"
        config.write_text(allure_config(output_dir), encoding="utf-8")
        argv = [str(cli), "generate", str(results_dir.resolve()), "--config", str(config), "-o", str(output_dir)]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=GENERATE_TIMEOUT_S, check=False, cwd=scratch
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ReportError(f"allure generate failed: {error}") from None
        index = output_dir / "index.html"
        if done.returncode != 0 or not index.is_file():
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise ReportError(f"allure generate failed (exit {done.returncode}): {last}")
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(index, path)
    path.write_text(without_analytics(path.read_text(encoding="utf-8")), encoding="utf-8")
    return path


def without_analytics(page: str) -> str:
    """The page without Allure's Google Analytics tag, so opening the report makes no network request."""
    return ANALYTICS.sub("", page)
