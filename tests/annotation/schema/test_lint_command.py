"""``manage.py lint_migrations`` as the test command runs it, over the real migrations and
one planted after them that adds a column with a volatile default to the rating table:
it fails, and the plant is the one thing it refuses, named with its rule and reason, so
every real migration passes (the older ones listed in annotation/schema/excused.py excused, none stale). The test
command (scripts/test) runs it over the real migrations alone."""

import os
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from annotation.schema.excused import EXCUSED
from tests.conftest import REPO_DIR
from tests.support.planted_migrations import PLANT_NAME, plant, settings_module

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

VOLATILE_DEFAULT = """
    operations = [
        migrations.AddField(
            "rating",
            "planted_at",
            models.DateTimeField(
                db_default=models.Func(function="clock_timestamp", output_field=models.DateTimeField())
            ),
        ),
    ]
"""


def test_the_linter_fails_on_the_plant_alone(tmp_path):
    package = plant(tmp_path, "planted_volatile_default", VOLATILE_DEFAULT)
    scratch = f"{urlparse(os.environ['DATABASE_URL']).path.lstrip('/')}_plant_lint"
    result = subprocess.run(
        [sys.executable, "manage.py", "lint_migrations", "--scratch-database", scratch],
        cwd=REPO_DIR,
        env=os.environ
        | {"DJANGO_SETTINGS_MODULE": settings_module(tmp_path, package), "PYTHONPATH": f"{tmp_path}:{REPO_DIR}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    refused = [line for line in result.stderr.splitlines() if line.startswith(("REFUSED", "STALE"))]
    assert refused == [
        f"REFUSED annotation.{PLANT_NAME}: [volatile-default] adds annotation_rating.planted_at with the volatile "
        "default clock_timestamp()"
    ]
    assert "1 refused statement(s), 0 stale excuse(s)" in result.stderr
    assert result.stdout.count("  excused annotation.") == len(EXCUSED)
