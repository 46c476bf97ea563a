"""What the rating queue keeps beside slots: flags, skips, open-pair counters, qualifications."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.items import Dataset, TaskKind
from annotation.models.pairs import Pair


class FlagReason(models.TextChoices):
    BROKEN_IMAGE = "broken_image", "broken image"
    UNREADABLE_CAPTION = "unreadable_caption", "unreadable caption"
    INAPPROPRIATE = "inappropriate", "inappropriate content"
    OTHER = "other", "other"


class Flag(models.Model):
    """A rater's report that a pair cannot be rated as shown; admins review and resolve it."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="flags")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="flags")
    reason = models.CharField(max_length=30, choices=FlagReason.choices)
    note = models.TextField(blank=True)
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pair", "rater", "reason"], name="flag_once_per_rater_reason")]
        indexes = [models.Index(fields=["created_at"], condition=Q(resolved=False), name="flag_unresolved_idx")]

    def __str__(self) -> str:
        return f"{self.reason} on pair {self.pair_id}"


class PairSkip(models.Model):
    """A rater passed on a pair (skip or flag): the claim never serves it to them again."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="skips")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pair_skips")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pair", "rater"], name="skip_once_per_rater")]

    def __str__(self) -> str:
        return f"{self.rater_id} skipped pair {self.pair_id}"


class QueueCounter(models.Model):
    """Pairs of a dataset and kind that still need ratings. Kept in step by the services
    that create pairs and complete them, so progress never counts over the queue."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    pairs_open = models.BigIntegerField(default=0, help_text="Pairs with ratings_done < ratings_required.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="queue_counter_unique"),
            models.CheckConstraint(condition=Q(pairs_open__gte=0), name="queue_counter_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.kind}: {self.pairs_open} open"


class QualificationQuerySet(models.QuerySet):
    def in_dataset(self, dataset_id: int | None):
        """Grants that hold in the dataset: its own rows and the global ones (no dataset)."""
        return self.filter(Q(dataset_id=dataset_id) | Q(dataset__isnull=True))

    def granted_kinds(self, *, rater, dataset_id: int | None) -> list[str]:
        """The kinds ``rater`` may rate in the dataset, sorted; without a dataset, the
        kinds granted for every dataset."""
        rows = self.filter(rater=rater)
        rows = rows.in_dataset(dataset_id) if dataset_id is not None else rows.filter(dataset__isnull=True)
        return sorted(set(rows.values_list("kind", flat=True)))


class Qualification(models.Model):
    """A rater may be served tasks of this kind in this dataset. Quizzes and campaign links
    grant a kind in their dataset only; a row without a dataset is an admin's grant of the
    kind in every dataset."""

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualifications")
    dataset = models.ForeignKey(
        Dataset,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="The dataset this grant holds in; empty: every dataset.",
    )
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    granted_at = models.DateTimeField(auto_now_add=True)

    objects = QualificationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rater", "dataset", "kind"],
                condition=Q(dataset__isnull=False),
                name="qualification_unique_in_dataset",
            ),
            models.UniqueConstraint(
                fields=["rater", "kind"], condition=Q(dataset__isnull=True), name="qualification_unique_global"
            ),
        ]

    def __str__(self) -> str:
        where = f"in dataset {self.dataset_id}" if self.dataset_id is not None else "in every dataset"
        return f"{self.rater} may rate {self.kind} {where}"


class RaterTally(models.Model):
    """Ratings a rater stored in a dataset per quarter hour (UTC), gold ratings of the queue
    included: what the rating page's "rated today" sums. Counting the ratings themselves
    grew with every rating of the day (a rater with a thousand cost the progress 1.4 ms
    of PostgreSQL per item); summing a day's quarters reads at most 96 rows. Every
    time zone's midnight falls on a quarter hour, and the progress statement counts
    ratings exactly before the first whole quarter otherwise.

    PostgreSQL keeps it: triggers on the rating and gold rating tables (migration 0027)
    count every insert, delete and change of rater, pair, time or purpose, whatever code
    writes the row. Elsewhere (SQLite) it stays empty and progress counts the ratings."""

    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,  # rater_tally_unique leads with the rater
    )
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    quarter = models.DateTimeField(help_text="Start of the quarter hour (UTC) the ratings were stored in.")
    ratings = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rater", "dataset", "quarter"], name="rater_tally_unique"),
            models.CheckConstraint(condition=Q(ratings__gte=0), name="rater_tally_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"rater {self.rater_id} in {self.dataset_id} from {self.quarter:%Y-%m-%d %H:%M}: {self.ratings}"


class GoldCounter(models.Model):
    """Gold pairs of a dataset and kind the queue may serve (active, outside the quiz):
    what the rating page's "pairs left" adds for gold with every rated item. Counting them
    there read every such gold pair each time (2,000: 0.1 ms of PostgreSQL per item,
    growing with the pool); reading this is one row.

    PostgreSQL keeps it: triggers on the gold pair table (migration 0033) count every
    insert, delete, truncate and change of dataset, kind, active or in_quiz, whatever code
    writes the rows, once per statement. Elsewhere (SQLite) it stays empty and progress
    counts the gold pairs."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    pairs_serveable = models.IntegerField(help_text="Active gold pairs of the kind outside the quiz.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="gold_counter_unique"),
            models.CheckConstraint(condition=Q(pairs_serveable__gte=0), name="gold_counter_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.kind}: {self.pairs_serveable} gold pairs serveable"


class RaterGoldMet(models.Model):
    """Gold pairs of a dataset and kind a rater holds or held a lease of, counted while
    the pair is serveable (active, outside the quiz): what the rating page's "pairs left"
    takes off ``GoldCounter`` for the gold the rater met in the queue. Testing each leased
    pair there cost a probe per pair the rater ever met, with every rated item (357 met:
    2.3 ms of PostgreSQL per progress against 0.7 at 7, on a machine where the cycle takes
    6); reading this is one row.

    PostgreSQL keeps it: triggers on the gold lease table (insert, delete, truncate, a
    lease moved to another pair or rater) and on the gold pair table (insert, delete, a
    change of dataset, kind, active or in_quiz) (migration 0034), once per statement.
    Elsewhere (SQLite) it stays empty: the portable progress tests every leased pair.
    Deleting a rater or a dataset while an admin retires one of its gold pairs can meet
    that retirement in a deadlock, which PostgreSQL ends by rolling one of the two back
    (Django deletes these rows before the leases; both are admin actions)."""

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    leased_serveable = models.IntegerField(help_text="Serveable gold pairs of the kind the rater has a lease of.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rater", "dataset", "kind"], name="rater_gold_met_unique"),
            models.CheckConstraint(condition=Q(leased_serveable__gte=0), name="rater_gold_met_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"rater {self.rater_id} in {self.dataset_id}/{self.kind}: {self.leased_serveable} gold pairs met"
