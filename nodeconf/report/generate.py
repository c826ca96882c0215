"""Write every report of a results directory: the nodeconf HTML and, when the tool is installed, Allure's HTML."""

from dataclasses import dataclass
from pathlib import Path

from nodeconf.report.allure_html import INSTALL_HINT, allure_cli, write_allure_html
from nodeconf.report.allure_json import is_inside, shown
from nodeconf.report.html import write_html
from nodeconf.report.postprocess import mark_fixture_failures_broken
from nodeconf.report.results import ReportError, RunResults, load_results
from nodeconf.report.run_diff import RunDiff

REPORT_FILE = "nodeconf-report.html"
ALLURE_FILE = "allure-report.html"


@dataclass(frozen=True)
class WrittenReports:
    """Paths of the written reports, and why Allure's HTML is missing when it is."""

    html: Path
    allure_html: Path | None
    allure_note: str


def read_results(results_dir: Path) -> RunResults:
    """Post-process the Allure results in place (fixture failures become broken), then read them."""
    mark_fixture_failures_broken(results_dir)
    return load_results(results_dir)


def write_reports(results: RunResults, html_dir: Path, diff: RunDiff | None = None) -> WrittenReports:
    """Write `html_dir/nodeconf-report.html` (with `diff`: its changes since an earlier run first) and, if Allure 3
    is installed, `html_dir/allure-report.html`."""
    remove_reports(html_dir)
    html = write_html(results, html_dir / REPORT_FILE, diff)
    outside = links_out(results.results_dir)
    if outside is not None:  # Allure would embed what the link points at
        return WrittenReports(html, None, f"Allure HTML skipped: {shown(outside)} links out of the results directory")
    cli = allure_cli()
    if cli is None:
        return WrittenReports(html, None, f"Allure HTML skipped: Allure 3 is not installed (run {INSTALL_HINT})")
    try:
        allure_html = write_allure_html(cli, results.results_dir, html_dir / ALLURE_FILE)
    except ReportError as error:
        return WrittenReports(html, None, f"Allure HTML skipped: {error}")
    return WrittenReports(html, allure_html, "")


def links_out(results_dir: Path) -> Path | None:
    """The first entry of `results_dir` that is a symbolic link leading out of it, if any."""
    return next((path for path in sorted(results_dir.iterdir()) if path.is_symlink()
                 and not is_inside(results_dir, path)), None)


def remove_reports(html_dir: Path) -> None:
    """Remove the HTML reports of an earlier run, so a failed run leaves none that looks current."""
    for name in (REPORT_FILE, ALLURE_FILE):
        try:
            (html_dir / name).unlink(missing_ok=True)
        except OSError as error:
            raise ReportError(f"{shown(html_dir / name)}: cannot replace the report "
                              f"({error.strerror or type(error).__name__})") from None


def report_paths(written: WrittenReports) -> list[tuple[str, Path]]:
    """The `label: path` pairs a summary prints."""
    paths = [("report", written.html)]
    if written.allure_html is not None:
        paths.append(("allure", written.allure_html))
    return paths
