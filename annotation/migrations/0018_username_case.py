"""Usernames that differ only by case (``Rater1`` beside ``rater1``) are one name to the
people who read rater tables and exports: a unique index on lower(username) of the user
table (``auth_user``: the project uses Django's user model) refuses the second; the same
statement works on PostgreSQL and SQLite, and the reverse drops it. Existing clashes stop the migration, naming them, so an admin
renames one of each pair first (nothing is renamed behind their back)."""

from django.conf import settings
from django.db import migrations
from django.db.models import Count
from django.db.models.functions import Lower

INDEX = "user_username_lower_unique"


def refuse_existing_clashes(apps, schema_editor):
    users = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    folded = (
        users.objects.annotate(folded=Lower("username"))
        .values("folded")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .values_list("folded", flat=True)
    )
    clashes = []
    for name in folded:
        spellings = users.objects.annotate(folded=Lower("username")).filter(folded=name).order_by("username")
        clashes.append(" = ".join(repr(u) for u in spellings.values_list("username", flat=True)))
    if clashes:
        raise RuntimeError(
            "usernames that differ only by case must be made distinct before this migration "
            f"(rename or remove one of each): {'; '.join(sorted(clashes))}"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_exclusion_pauses"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(refuse_existing_clashes, migrations.RunPython.noop),
        migrations.RunSQL(
            sql=f"CREATE UNIQUE INDEX {INDEX} ON auth_user (lower(username))",
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        ),
    ]
