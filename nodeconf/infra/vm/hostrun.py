"""Running the host tools of an image build, and the one error type a build raises."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from nodeconf.errors import InfrastructureError


class ImageBuildError(InfrastructureError):
    """The image could not be built; the message is one line saying why and what to do."""


def run_tool(argv: Sequence[str], *, cwd: Path | None = None, input: bytes | None = None) -> str:
    """Run a host command; on failure raise ImageBuildError with its last stderr line."""
    proc = subprocess.run(list(argv), cwd=cwd, input=input, capture_output=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
        tail = lines[-1] if lines else f"exit status {proc.returncode}"
        raise ImageBuildError(f"{argv[0]} failed: {tail}")
    return proc.stdout.decode(errors="replace")
