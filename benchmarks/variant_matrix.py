"""Node-variant matrix (issue 13 item 6): for each variant, its image's cold build time, then one `nodeconf run`
on it (the default suites unless PYTEST_ARGS say otherwise): wall time, passed/failed/broken/skipped and every
non-pass grouped by cause, from the run's summary.json and junit.xml. Boot times: benchmarks/vm_bench.py --debian R
--init I --runtime X.

Run one variant per VM-lock acquisition (each is a build of ≈1-2 min when not cached plus a run of a few minutes):
    flock /tmp/nodeconf-vm.lock .venv/bin/python benchmarks/variant_matrix.py sid-systemd-containerd [--reports DIR]
        [--json] [-- PYTEST_ARGS]
Results accumulate in DIR/variant-matrix.json (one entry per variant, the latest run wins) and print as the
Markdown table docs/node-variants.md carries. The cold build time is the image manifest's build_seconds (the
build that made the cached image; build it into an empty cache, e.g. benchmarks/vm_bench.py, for a fresh figure).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nodeconf.infra.vm.image import MANIFEST, ImageBuildError, ensure_image
from nodeconf.infra.vm.progress import StepPrinter
from nodeconf.node_variant import Variant

# Every Debian release with systemd and each runtime, then the defaults (issue 13 item 6), then containerd 1.6, 1.7
# and 2.x over CRI (issue 28 item 7; containerd goes only with systemd: node_variant.REFUSED).
DEFAULT_VARIANTS = (*(f"{debian}-systemd-{runtime}" for debian in ("bullseye", "bookworm", "trixie", "sid")
                      for runtime in ("runc", "crun")), "bookworm-minimal-direct",
                    *(f"{debian}-systemd-containerd" for debian in ("bookworm", "trixie", "sid")))


def variant_of(label: str) -> Variant:
    """The variant a label names (debian-init-runtime); exit 2 with one line when it names none."""
    parts = label.split("-")
    try:
        if len(parts) != 3:
            raise ValueError(f"{label!r} is not DEBIAN-INIT-RUNTIME")
        return Variant(*parts)
    except ValueError as err:
        print(f"variant_matrix: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def measure(variant: Variant, reports: Path, pytest_args: list[str]) -> dict[str, Any]:
    """Build (or find) the variant's image, run the suites on it, and summarise the run."""
    try:
        image = ensure_image(progress=StepPrinter("image"), variant=variant)
    except ImageBuildError as err:
        return {"variant": variant.label(), "kernel_release": "–", "cold_build_s": None, "run_wall_s": 0,
                "pytest_args": pytest_args, "error": f"image: {err}"[:300]}
    manifest = json.loads((image.directory / MANIFEST).read_text())
    spec = f"vm?debian={variant.debian}&init={variant.init}&runtime={variant.runtime}"
    out = reports / variant.label()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "nodeconf", "run", "--node", spec, "--reports", str(out),
                           *(["--", *pytest_args] if pytest_args else [])],
                          capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    entry: dict[str, Any] = {
        "variant": variant.label(), "spec": spec, "kernel_release": image.kernel_release,
        "installed": manifest.get("installed", {}), "cold_build_s": manifest.get("build_seconds"),
        "run_wall_s": round(wall, 1),
        "exit_code": proc.returncode, "pytest_args": pytest_args,
    }
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        entry["error"] = (proc.stderr.strip().splitlines() or ["no summary.json"])[-1][:300]
        return entry
    summary = json.loads(summary_path.read_text())
    entry["counts"] = summary["counts"]
    entry["run"] = summary["run"]
    entry["non_pass"] = [{"id": c["id"], "status": c["status"], "why": c["message"],
                          "first_mismatch": c["first_mismatch"], "about": about_by_check(summary).get(c["id"], [])}
                         for c in summary["checks"] if c["status"] != "passed"]
    return entry


def about_by_check(summary: dict[str, Any]) -> dict[str, list[str]]:
    """What each failed or broken check's mismatches are about, by check id, from the summary's causes (grouped
    from the checks' comparison tables by nodeconf.report.causes)."""
    found: dict[str, list[str]] = {}
    for cause in summary.get("causes", []):
        for check in cause["checks"]:
            found.setdefault(check, []).append(cause["about"])
    return {check: sorted(about) for check, about in found.items()}


def grouped(non_pass: list[dict[str, Any]]) -> str:
    """The non-passes grouped by cause (what each mismatch is about, else the first line; a check may count in
    several groups), largest first, each group with its count and one check."""
    groups: dict[tuple[str, str], list[str]] = {}
    for n in non_pass:
        for about in n.get("about") or [n["why"]]:
            groups.setdefault((n["status"], about), []).append(n["id"])
    found = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return "; ".join(f"{len(checks)} × {status} {about} (e.g. {checks[0]})" for (status, about), checks in found) or "–"


def table(entries: list[dict[str, Any]]) -> str:
    """The Markdown table of docs/node-variants.md."""
    rows = ["| variant | kernel | runtime | cold build | checks run | commit, started | wall "
            "| passed / failed / broken / skipped | non-pass (by what each mismatch is about) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for e in entries:
        counts = e.get("counts", {})
        result = " / ".join(str(counts.get(key, 0)) for key in ("passed", "failed", "broken", "skipped")) \
            if counts else f"no result: {e.get('error', '')}"
        name = e["variant"].split("-")[2]
        runtime = f"{name} {e.get('installed', {}).get(name, '')}".strip()
        reasons = grouped(e.get("non_pass", []))
        args = e["pytest_args"]
        checks = f"{len(args)} chosen checks" if args and all("::" in a for a in args) else " ".join(args)
        run = e.get("run", {})
        when = f"{str(run.get('nodeconf_commit', ''))[:7]}, {str(run.get('started', ''))[:16]}"
        rows.append(f"| {e['variant']} | {e['kernel_release']} | {runtime} | {e['cold_build_s']} s | "
                    f"{checks or 'default suites'} | {when} | {e['run_wall_s']} s | {result} | {reasons} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("variants", nargs="*", default=list(DEFAULT_VARIANTS), help="e.g. sid-systemd-runc")
    parser.add_argument("--reports", type=Path, default=Path("reports/variant-matrix"))
    parser.add_argument("--json", action="store_true", help="print the entries as JSON instead of the table")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    pytest_args = argv[split + 1:]
    variants = [variant_of(label) for label in args.variants]
    results_file = args.reports / "variant-matrix.json"
    entries: dict[str, dict[str, Any]] = json.loads(results_file.read_text()) if results_file.is_file() else {}
    for variant in variants:
        entries[variant.label()] = measure(variant, args.reports, pytest_args)
        args.reports.mkdir(parents=True, exist_ok=True)
        results_file.write_text(json.dumps(entries, indent=2) + "\n")
    print(json.dumps(entries, indent=2) if args.json else table(list(entries.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
