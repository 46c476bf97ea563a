"""The tests' own layout: tests/annotation mirrors the packages, the findings of `make
mutation` live in the behaviour tests they pin (no ``*_mutants.py``), and no test module
imports another (shared helpers live in tests/support/ or tests/factories.py). Pure: reads
the files only."""

import ast
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent


def _test_modules() -> list[Path]:
    return sorted(TESTS_DIR.rglob("test_*.py"))


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Each module ``path`` imports, as (line, dotted name), relative imports resolved
    against the file's package; ``from package import name`` yields ``package.name`` too."""
    package = path.relative_to(TESTS_DIR.parent).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_no_file_under_tests_is_a_mutants_file():
    assert sorted(str(p.relative_to(TESTS_DIR)) for p in TESTS_DIR.rglob("*_mutants.py")) == []


def test_no_test_module_imports_another_test_module():
    offenders = [
        f"{path.relative_to(TESTS_DIR)}:{line}: {module}"
        for path in _test_modules()
        for line, module in _imported_modules(path)
        if module.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert offenders == [], "move what they share into tests/support/ or tests/factories.py"


def test_no_test_module_sits_directly_in_tests_annotation():
    loose = sorted(p.name for p in (TESTS_DIR / "annotation").glob("test_*.py"))
    assert loose == [], "tests/annotation/<package>/ mirrors annotation/<package>/"


def test_every_test_folder_is_a_package():
    """Module names stay unique (two folders may hold a test_upload_cleanup.py)."""
    folders = {p.parent for p in _test_modules()}
    assert sorted(str(f.relative_to(TESTS_DIR)) for f in folders if not (f / "__init__.py").is_file()) == []
