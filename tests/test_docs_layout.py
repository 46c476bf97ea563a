"""docs/layout.md describes the tree as it is: every path a bullet starts with exists, and
every package of annotation/ and sampling/, every module at annotation/'s top level and
every top-level folder with tracked files is named on the page. A package added, moved or
removed without the page fails here. Pure: no database."""

import re
import subprocess

import pytest

from tests.conftest import REPO_DIR

PAGE = REPO_DIR / "docs" / "layout.md"
# A bullet's leading code spans: "- `a/`: ..." or "- `a.py`, `b.py`: ...".
LEADING_PATHS = re.compile(r"^\s*[-*+]\s+((?:`[^`]+`(?:,\s*)?)+)")
CODE_SPAN = re.compile(r"`([^`]+)`")
# Top-level folders that are not part of the project's tree: local state and build output.
NOT_PROJECT = {"var", "site", "mutants", "mutants-scratch", "test-artifacts", "node_modules"}


def page_text() -> str:
    return PAGE.read_text()


def bullet_paths(text: str) -> list[str]:
    """The paths (ending in / or .py) that bullets start with."""
    paths = []
    for line in text.splitlines():
        match = LEADING_PATHS.match(line)
        if match:
            paths += [p for p in CODE_SPAN.findall(match.group(1)) if p.endswith(("/", ".py"))]
    return paths


def named(text: str) -> set[str]:
    """Every code span of the page."""
    return set(CODE_SPAN.findall(text))


def test_the_parser_reads_leading_paths_only():
    text = "- `a/`: see `b/`\n    - `a/x.py`, `a/y.py`: two\n- text `c/`\n* `d/`\n- `e.yml`: no\n"
    assert bullet_paths(text) == ["a/", "a/x.py", "a/y.py", "d/"]


def test_every_path_the_page_names_exists():
    paths = bullet_paths(page_text())
    assert len(paths) > 20, "the page lists the layout as bullets starting with paths"
    missing = [path for path in paths if not (REPO_DIR / path.rstrip("/")).exists()]
    kinds = [path for path in paths if path.endswith("/") and (REPO_DIR / path).is_file()]
    assert not missing, f"docs/layout.md names paths that do not exist: {missing}"
    assert not kinds, f"docs/layout.md names files as folders: {kinds}"


@pytest.mark.parametrize("app", ["annotation", "sampling"])
def test_every_package_of_the_apps_is_on_the_page(app):
    packages = sorted(
        f"{app}/{child.name}/"
        for child in (REPO_DIR / app).iterdir()
        if child.is_dir() and (child / "__init__.py").is_file()
    )
    assert packages
    unnamed = [package for package in packages if package not in named(page_text())]
    assert not unnamed, f"packages missing from docs/layout.md: {unnamed}"


def test_every_module_at_the_top_of_annotation_is_on_the_page():
    modules = sorted(f"annotation/{child.name}" for child in (REPO_DIR / "annotation").glob("*.py"))
    unnamed = [module for module in modules if module not in named(page_text())]
    assert not unnamed, f"annotation/ holds packages and these modules only if the page names them: {unnamed}"


def tracked_top_level_folders() -> set[str]:
    try:
        listed = subprocess.run(
            ["git", "-C", str(REPO_DIR), "ls-files", "-z"], capture_output=True, check=True, timeout=60
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    folders = {path.split("/", 1)[0] for path in listed.split("\0") if "/" in path}
    return {folder for folder in folders if not folder.startswith(".") and folder not in NOT_PROJECT}


def test_every_top_level_folder_is_on_the_page():
    folders = tracked_top_level_folders()
    assert "tests" in folders
    unnamed = sorted(f"{folder}/" for folder in folders if f"{folder}/" not in named(page_text()))
    assert not unnamed, f"top-level folders missing from docs/layout.md: {unnamed}"
