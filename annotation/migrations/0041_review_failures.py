# The crowd's review of retrieval failures: the REV kind (its choices only: no SQL on the
# hot tables), the review tables, the gold pairs' rule and uniqueness for REV. The pairs'
# rule and uniqueness change in 0042, concurrently.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0040_object_annotations"),
        ("sampling", "0011_adaptive_budget"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ReviewItem",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "model",
                    models.CharField(help_text="The evaluated model's name, as in the failures file.", max_length=200),
                ),
            ],
        ),
        migrations.CreateModel(
            name="ReviewMarks",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "marks",
                    models.PositiveSmallIntegerField(
                        help_text="Bits: object class 1, object colour 2, object count 4, action 8, size 16, details 32; a fair alternative 64, alone."
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="ReviewQueue",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("ratings_per_pair", models.PositiveSmallIntegerField(help_text="Distinct raters per failure.")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.RemoveConstraint(
            model_name="goldpair",
            name="gold_items_match_kind",
        ),
        migrations.AlterField(
            model_name="goldcounter",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="goldlease",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                help_text="Copied from the gold pair.",
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="goldpair",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="sampling_method",
            field=models.CharField(
                choices=[
                    ("i2i_csim", "i2i_csim: image pairs by co-caption similarity"),
                    ("c2c_isim", "c2c_isim: caption pairs by image similarity"),
                    ("c2c_cocaption", "c2c_cocaption: captions of the same image"),
                    ("c2i_intrasim", "c2i_intrasim: intermodal pairs through rated pivots"),
                    ("c2i_original", "c2i_original: every original image-caption pair"),
                    ("uploaded", "uploaded: a pair list without a method name"),
                    ("topk_c2i", "topk_c2i: a model's top-k images for a caption (model_topk audit)"),
                    ("topk_i2c", "topk_i2c: a model's top-k captions for an image (model_topk audit)"),
                    ("topk_c2c", "topk_c2c: a model's top-k captions for a caption (model_topk audit)"),
                    ("topk_i2i", "topk_i2i: a model's top-k images for an image (model_topk audit)"),
                    ("review", "review: an explained evaluation's retrieval failures queued for the crowd's review"),
                ],
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="qualification",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="queuecounter",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="quizattempt",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="ratergoldmet",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="ratermodelfit",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="ratingslot",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                help_text="Copied from the pair for the claim index.",
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="speedfloor",
            name="kind",
            field=models.CharField(
                choices=[
                    ("STS", "caption-caption (STS)"),
                    ("SIS", "image-image (SIS)"),
                    ("SITS", "caption-image (SITS)"),
                    ("REV", "retrieval failure review (REV)"),
                ],
                max_length=4,
            ),
        ),
        migrations.AlterField(
            model_name="speedfloor",
            name="seconds",
            field=models.FloatField(
                help_text="Ratings faster than this many seconds per item count as too fast (defaults: STS 3 s, SIS 1.5 s, SITS 1.5 s, REV 3 s)."
            ),
        ),
        migrations.AddConstraint(
            model_name="goldpair",
            constraint=models.CheckConstraint(
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
                name="gold_items_match_kind",
                violation_error_message="Gold pair items do not match its kind, or are not in canonical order.",
            ),
        ),
        migrations.AddConstraint(
            model_name="goldpair",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "REV")), fields=("caption_a", "image_a", "image_b"), name="gold_rev_unique"
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="pair",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="+", to="annotation.pair"
            ),
        ),
        migrations.AddField(
            model_name="reviewmarks",
            name="gold_rating",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="review_marks",
                to="annotation.goldrating",
            ),
        ),
        migrations.AddField(
            model_name="reviewmarks",
            name="rating",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="review_marks",
                to="annotation.rating",
            ),
        ),
        migrations.AddField(
            model_name="reviewqueue",
            name="batch",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT, related_name="review_queue", to="sampling.samplingbatch"
            ),
        ),
        migrations.AddField(
            model_name="reviewqueue",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="reviewqueue",
            name="job",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT, related_name="review_queue", to="annotation.job"
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="queue",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="items", to="annotation.reviewqueue"
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewmarks",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("gold_rating__isnull", True), ("rating__isnull", False)),
                    models.Q(("gold_rating__isnull", False), ("rating__isnull", True)),
                    _connector="OR",
                ),
                name="review_marks_of_one_rating",
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewmarks",
            constraint=models.CheckConstraint(
                condition=models.Q(("marks__gte", 0), models.Q(("marks__lte", 63), ("marks", 64), _connector="OR")),
                name="review_marks_fair_alternative_alone",
                violation_error_message="A fair alternative misreads nothing: it is ticked alone.",
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewqueue",
            constraint=models.CheckConstraint(
                condition=models.Q(("ratings_per_pair__gte", 1)), name="review_queue_raters_positive"
            ),
        ),
        migrations.AddIndex(
            model_name="reviewitem",
            index=models.Index(fields=["pair"], name="review_item_pair_idx"),
        ),
        migrations.AddConstraint(
            model_name="reviewitem",
            constraint=models.UniqueConstraint(fields=("queue", "model", "pair"), name="review_item_unique"),
        ),
    ]
