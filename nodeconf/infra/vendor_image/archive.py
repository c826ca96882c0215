"""The exact package versions a suite's image would get, from private apt lists of that suite (not the host's).

Source: apt.conf(5) (Dir::State::Lists, Dir::Etc::SourceList, Dir::Cache, Dir::State::Status); the host's apt
knows only its own release (MEASURED.md, "Node layers").
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from infra.vendor_image.recipe import VendorRecipe
from infra.vm.recipe import candidate_versions, kernel_package_from_depends


class VendorImageError(RuntimeError):
    """The vendor image could not be built; the message is one line saying why."""


def run(argv: Sequence[str], *, cwd: Path | None = None) -> str:
    """Run a host command; VendorImageError with its last stderr line when it fails."""
    proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
        raise VendorImageError(f"{argv[0]} failed: {lines[-1] if lines else f'exit status {proc.returncode}'}")
    return proc.stdout.decode(errors="replace")


def apt_options(state: Path) -> list[str]:
    """apt options that use only the lists, cache and sources under state (never the host's)."""
    return [
        "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Etc::SourceList={state / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/nonexistent", "-o", f"Dir::Cache={state / 'cache'}",
        "-o", f"Dir::State::Status={state / 'status'}", "-o", "APT::Sandbox::User=root",
    ]


def resolve_versions(recipe: VendorRecipe, state: Path) -> dict[str, str]:
    """Refresh the suite's private apt lists, then package → candidate version (plus the versioned kernel)."""
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text("".join(line.format(suite=recipe.suite) + "\n" for line in recipe.sources))
    (state / "status").touch()
    options = apt_options(state)
    try:
        run(["apt-get", "update", "-q", *options])
    except VendorImageError as err:
        raise VendorImageError(f"cannot read the {recipe.suite} package lists from the archive ({err})") from err
    try:
        kernel = kernel_package_from_depends(run(["apt-cache", *options, "depends", "linux-image-amd64"]))
    except ValueError as err:
        raise VendorImageError(f"cannot resolve {recipe.suite}'s kernel package: {err}") from err
    packages = [kernel, *recipe.all_packages]
    versions = candidate_versions(run(["apt-cache", *options, "policy", *packages]))
    unknown = [p for p in packages if versions.get(p, "(none)") == "(none)"]
    if unknown:
        raise VendorImageError(f"{recipe.suite} has no package {' '.join(unknown)}")
    versions["kernel-package"] = kernel
    return versions
