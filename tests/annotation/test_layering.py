"""The mechanisms know nothing of who rates: the queue and gold serving import nothing from
the crowd, the quiz, onboarding or the rating policy (which imports them), so no import
circle can come back through them."""

import ast
from pathlib import Path

import pytest

import annotation

MECHANISMS = ("queue", "gold")
FORBIDDEN = ("annotation.crowd", "annotation.quiz", "annotation.onboarding", "annotation.rating")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("package", MECHANISMS)
def test_a_mechanism_imports_no_policy_crowd_or_quiz_module(package):
    root = Path(annotation.__file__).parent / package
    offending = {
        f"{path.relative_to(root.parent)}: {name}"
        for path in sorted(root.rglob("*.py"))
        for name in imported_modules(path)
        if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN)
    }
    assert not offending, sorted(offending)
