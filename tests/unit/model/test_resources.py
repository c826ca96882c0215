"""The suite tree locator, the build info and `nodeconf --version` (issue 17: a run works from any directory)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodeconf import build_info, resources
from nodeconf.errors import InputError
from nodeconf.resources import Tree, is_checkout, locate_tree

ROOT = Path(__file__).resolve().parents[3]


def _checkout(root: Path, name: str = "nodeconf") -> Path:
    (root / "suites").mkdir(parents=True)
    (root / "conftest.py").write_text("", encoding="utf-8")
    (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n', encoding="utf-8")
    return root


@pytest.fixture
def not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No installed tree and a package that does not sit in a checkout (a wheel install without its data)."""
    monkeypatch.setattr(resources, "BUNDLED_DIR", tmp_path / "site-packages" / "nodeconf" / "bundled")
    monkeypatch.setattr(resources, "PACKAGE_DIR", tmp_path / "site-packages" / "nodeconf")
    return tmp_path / "site-packages" / "nodeconf" / "bundled"


def test_this_repository_is_a_checkout() -> None:
    assert is_checkout(ROOT)
    assert locate_tree(ROOT / "suites" / "swap") == Tree(ROOT, "checkout")
    assert (locate_tree(ROOT).programs / "memhog.py").is_file()


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        pytest.param(None, True, id="complete"),
        pytest.param("conftest.py", False, id="no-root-conftest"),
        pytest.param("pyproject.toml", False, id="no-pyproject"),
        pytest.param("other-project", False, id="another-project"),
        pytest.param("broken-toml", False, id="unreadable-pyproject"),
    ],
)
def test_is_checkout_needs_suites_conftest_and_the_nodeconf_project(tmp_path: Path, damage: str | None,
                                                                    expected: bool) -> None:
    root = _checkout(tmp_path / "repo", "other" if damage == "other-project" else "nodeconf")
    if damage in ("conftest.py", "pyproject.toml"):
        (root / damage).unlink()
    if damage == "broken-toml":
        (root / "pyproject.toml").write_text("[project\n", encoding="utf-8")
    assert is_checkout(root) is expected


def test_a_checkout_around_the_working_directory_wins(tmp_path: Path, not_installed: Path) -> None:
    (not_installed / "suites").mkdir(parents=True)
    root = _checkout(tmp_path / "repo")
    (root / "suites" / "swap").mkdir()
    assert locate_tree(root / "suites" / "swap") == Tree(root, "checkout")


def test_elsewhere_the_installed_tree_is_used(tmp_path: Path, not_installed: Path) -> None:
    (not_installed / "suites").mkdir(parents=True)
    assert locate_tree(tmp_path) == Tree(not_installed, "installed")
    assert locate_tree(tmp_path).programs == not_installed / "workloads" / "programs"


def test_an_editable_install_falls_back_to_its_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _checkout(tmp_path / "repo")
    monkeypatch.setattr(resources, "BUNDLED_DIR", root / "nodeconf" / "bundled")
    monkeypatch.setattr(resources, "PACKAGE_DIR", root / "nodeconf")
    (tmp_path / "elsewhere").mkdir()
    assert locate_tree(tmp_path / "elsewhere") == Tree(root, "checkout")


def test_no_tree_at_all_is_one_clear_input_error(tmp_path: Path, not_installed: Path) -> None:
    with pytest.raises(InputError, match="no nodeconf suites: not inside a nodeconf checkout"):
        locate_tree(tmp_path)


def test_commit_of_a_checkout_is_git_head() -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert build_info.commit(Tree(ROOT, "checkout")).removesuffix(build_info.DIRTY) == head


def test_commit_without_git_or_record_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_info, "COMMIT_FILE", tmp_path / "build_commit.txt")
    assert build_info.commit(Tree(tmp_path, "checkout")) == ""  # no .git
    assert build_info.commit(Tree(tmp_path, "installed")) == ""
    assert build_info.version_line(None) == f"nodeconf {build_info.version()}"
    (tmp_path / "build_commit.txt").write_text("0123abc\n", encoding="utf-8")
    assert build_info.commit(Tree(tmp_path, "installed")) == "0123abc"
    assert build_info.version_line(None) == f"nodeconf {build_info.version()} (commit 0123abc)"


@pytest.mark.parametrize("cwd", [pytest.param(ROOT, id="checkout"), pytest.param(Path("/"), id="elsewhere")])
def test_version_prints_version_commit_and_the_suites_it_would_run(cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "nodeconf", "--version"], cwd=cwd, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    head = build_info.checkout_commit(ROOT)
    assert done.stdout.splitlines() == [f"nodeconf 0.1.0 (commit {head})", f"suites: {ROOT / 'suites'} (checkout)"]
