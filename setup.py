"""Build step: the wheel carries the suite tree under nodeconf/bundled/ and the commit it was built from.

The tree (the root conftest.py, suites/, workloads/) keeps the checkout's layout, so pytest sees the same rootdir,
node ids and imports installed as in a checkout; a pytest.ini marks its root. Metadata stays in pyproject.toml.
"""

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
TREE = ("conftest.py", "suites", "workloads")
PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\n"


def _commit() -> str:
    """HEAD of the checkout being built ("" outside git, e.g. from an sdist)."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if done.returncode != 0:
        return ""
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    return done.stdout.strip() + ("+modified" if dirty else "")


class BuildWithTree(build_py):
    """build_py that also copies the suite tree and records the commit (an editable install uses the checkout)."""

    def run(self) -> None:
        editable = getattr(self, "editable_mode", False)
        build_lib = Path(self.build_lib).resolve()
        if not editable and build_lib.is_relative_to(ROOT / "build"):
            shutil.rmtree(build_lib, ignore_errors=True)  # no package of an earlier build's layout (top-level infra)
        super().run()
        if editable:
            return
        package = Path(self.build_lib) / "nodeconf"
        bundled = package / "bundled"
        shutil.rmtree(bundled, ignore_errors=True)  # no stale file of an earlier build
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for name in TREE:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, bundled / name, ignore=ignore)
            else:
                bundled.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, bundled / name)
        (bundled / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
        (package / "build_commit.txt").write_text(_commit() + "\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildWithTree})
