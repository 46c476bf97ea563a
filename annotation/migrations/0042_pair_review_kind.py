from django.db import migrations, models

from annotation.schema.operations import AddUniqueConstraintConcurrently, SwapCheckConstraint

# The pairs' rule that their items match their kind takes the REV kind (a query, the
# truth image and the retrieved one): on PostgreSQL added NOT VALID beside the old rule,
# validated apart (writes go on meanwhile), then the old one dropped and the new one
# renamed. REV pairs' uniqueness is a partial unique index built CONCURRENTLY. Every
# statement may run again (annotation/schema/operations.py).


class Migration(migrations.Migration):
    atomic = False
    idempotent = True

    dependencies = [
        ("annotation", "0041_review_failures"),
    ]

    operations = [
        SwapCheckConstraint(
            "pair",
            models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("caption_a__isnull", False),
                        ("caption_a__lt", models.F("caption_b")),
                        ("caption_b__isnull", False),
                        ("image_a__isnull", True),
                        ("image_b__isnull", True),
                        ("kind", "STS"),
                    ),
                    models.Q(
                        ("caption_a__isnull", True),
                        ("caption_b__isnull", True),
                        ("image_a__isnull", False),
                        ("image_a__lt", models.F("image_b")),
                        ("image_b__isnull", False),
                        ("kind", "SIS"),
                    ),
                    models.Q(
                        ("caption_a__isnull", False),
                        ("caption_b__isnull", True),
                        ("image_a__isnull", False),
                        ("image_b__isnull", True),
                        ("kind", "SITS"),
                    ),
                    models.Q(
                        ("caption_a__isnull", False),
                        ("caption_b__isnull", True),
                        ("image_a__isnull", False),
                        ("image_b__isnull", False),
                        ("kind", "REV"),
                        models.Q(("image_a", models.F("image_b")), _negated=True),
                    ),
                    _connector="OR",
                ),
                name="pair_items_match_kind",
                violation_error_message="Pair items do not match its kind, or are not in canonical order.",
            ),
        ),
        AddUniqueConstraintConcurrently(
            "pair",
            models.UniqueConstraint(
                condition=models.Q(("kind", "REV")), fields=("caption_a", "image_a", "image_b"), name="pair_rev_unique"
            ),
        ),
    ]
