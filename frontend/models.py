"""Worked examples shown with the instructions: pairs with their reference level, chosen
by admins per dataset and task kind."""

from django.db import models
from django.db.models import Q

from annotation.models import Caption, Dataset, Image, TaskKind


class WorkedExample(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="worked_examples")
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    caption_a = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    caption_b = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    image_a = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    image_b = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    reference_score = models.FloatField(help_text="Where the pair belongs on the 0-5 scale; raters see its level name.")
    explanation = models.TextField(blank=True, help_text="Why the pair sits at that level, in a sentence or two.")
    position = models.PositiveSmallIntegerField(default=0, help_text="Examples show in this order.")
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reference_score__gte=0.0) & Q(reference_score__lte=5.0), name="example_score_in_range"
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind=TaskKind.STS, caption_a__isnull=False, caption_b__isnull=False, image_a__isnull=True)
                    & Q(image_b__isnull=True)
                    | Q(kind=TaskKind.SIS, image_a__isnull=False, image_b__isnull=False, caption_a__isnull=True)
                    & Q(caption_b__isnull=True)
                    | Q(kind=TaskKind.SITS, caption_a__isnull=False, image_a__isnull=False, caption_b__isnull=True)
                    & Q(image_b__isnull=True)
                ),
                name="example_items_match_kind",
                violation_error_message="STS needs two captions, SIS two images, SITS one caption and one image.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} example #{self.pk} ({self.reference_score:.1f})"
