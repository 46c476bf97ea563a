"""The crowd's review of retrieval failures: which failures of an explained evaluation
were queued (``ReviewQueue``, ``ReviewItem``: each failure a pair of kind REV, rated
through the queue like any pair) and the marks a rater ticked with each review's score
(``ReviewMarks``), stored in the transaction that stores the rating."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.pairs import Pair, Rating
from annotation.models.quality import GoldRating
from annotation.models.runs import Job

# The marks, one bit each (annotation.evaluation.review.marks names them): six
# misreadings, bits 1 to 32, then "a fair alternative", 64, which stands alone.
FAIR_ALTERNATIVE_BIT = 64
MISREADING_ALL = FAIR_ALTERNATIVE_BIT - 1


class ReviewQueue(models.Model):
    """The failures of one explained evaluation job queued for review, once: queuing them
    again finds this row. ``batch`` is the sampling batch their pairs belong to."""

    job = models.OneToOneField(Job, on_delete=models.PROTECT, related_name="review_queue")
    batch = models.OneToOneField("sampling.SamplingBatch", on_delete=models.PROTECT, related_name="review_queue")
    ratings_per_pair = models.PositiveSmallIntegerField(help_text="Distinct raters per failure.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(ratings_per_pair__gte=1), name="review_queue_raters_positive")
        ]

    def __str__(self) -> str:
        return f"review of evaluation job #{self.job_id}"


class ReviewItem(models.Model):
    """One failure of one model, queued: its pair (query, truth image, retrieved image).
    Two models failing a query the same way share the pair, one review."""

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="items")
    model = models.CharField(max_length=200, help_text="The evaluated model's name, as in the failures file.")
    pair = models.ForeignKey(Pair, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue", "model", "pair"], name="review_item_unique"),
        ]
        indexes = [models.Index(fields=["pair"], name="review_item_pair_idx")]

    def __str__(self) -> str:
        return f"{self.model}: pair {self.pair_id}"


class ReviewMarks(models.Model):
    """The marks of one review: of a rating of a REV pair, or of a gold rating of a REV
    gold pair (exactly one). ``marks``: a bit per mark of MARKS; "a fair alternative"
    stands alone (checked here, and by the API with a 400)."""

    rating = models.OneToOneField(Rating, null=True, blank=True, on_delete=models.CASCADE, related_name="review_marks")
    gold_rating = models.OneToOneField(
        GoldRating, null=True, blank=True, on_delete=models.CASCADE, related_name="review_marks"
    )
    marks = models.PositiveSmallIntegerField(
        help_text="Bits: object class 1, object colour 2, object count 4, action 8, size 16, details 32; "
        "a fair alternative 64, alone."
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(rating__isnull=False, gold_rating__isnull=True)
                | Q(rating__isnull=True, gold_rating__isnull=False),
                name="review_marks_of_one_rating",
            ),
            models.CheckConstraint(
                condition=Q(marks__gte=0) & (Q(marks__lte=MISREADING_ALL) | Q(marks=FAIR_ALTERNATIVE_BIT)),
                name="review_marks_fair_alternative_alone",
                violation_error_message="A fair alternative misreads nothing: it is ticked alone.",
            ),
        ]

    def __str__(self) -> str:
        return f"marks {self.marks:#09b} of rating {self.rating_id or self.gold_rating_id}"
