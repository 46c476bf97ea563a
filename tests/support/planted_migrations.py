"""Migrations planted for a test: a copy of the annotation app's migrations in a package of
the test's own, with one more migration after the latest, loaded in place of the real
ones through MIGRATION_MODULES (``settings`` fixture in the process, or a settings module
for a ``manage.py`` child). The real migrations folder is never written to."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from django.db.migrations import Migration
from django.db.migrations.loader import MigrationLoader

from tests.conftest import REPO_DIR

PLANT_NAME = "0999_planted"


def latest_annotation_migration() -> str:
    """The name of the annotation app's latest migration on disk."""
    (leaf,) = MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes("annotation")
    return leaf[1]


def plant(folder: Path, package: str, body: str, *, imports: str = "") -> str:
    """``folder``/``package``: the annotation migrations copied, plus PLANT_NAME, whose
    Migration class has ``body`` (indented class lines: operations, atomic ...) and
    depends on the latest. ``folder`` goes on sys.path; returns the package's name."""
    target = folder / package
    target.mkdir(parents=True)
    for source in (REPO_DIR / "annotation" / "migrations").glob("*.py"):
        shutil.copy(source, target / source.name)
    (target / f"{PLANT_NAME}.py").write_text(
        "from django.db import migrations, models\n"
        f"{imports}\n\n"
        "class Migration(migrations.Migration):\n"
        f"    dependencies = [('annotation', {latest_annotation_migration()!r})]\n"
        f"{body}\n"
    )
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return package


def settings_module(folder: Path, package: str) -> str:
    """A settings module in ``folder`` (on a child's PYTHONPATH): the project's, with the
    annotation migrations taken from ``package``. Returns its name."""
    name = f"{package}_settings"
    (folder / f"{name}.py").write_text(
        f"from config.settings import *  # noqa: F403\n\nMIGRATION_MODULES = {{'annotation': {package!r}}}\n"
    )
    return name


def in_memory(operations: list, *, atomic: bool = True, name: str = PLANT_NAME) -> Migration:
    """A planted annotation migration as an object, after the latest, for recording on the
    test database (annotation.schema.recording.record) inside the test's transaction."""
    migration_class = type(
        "Migration",
        (Migration,),
        {"dependencies": [("annotation", latest_annotation_migration())], "operations": operations, "atomic": atomic},
    )
    return migration_class(name, "annotation")
