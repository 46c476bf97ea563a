"""Pairs, their rating slots and ratings.

Invariants live in the database (unique and check constraints), not in ``save()``:
- a pair is stored once, unordered (canonical order a < b), per kind;
- a pair has ``ratings_required`` slots; a rating fills exactly one slot, so a pair can
  never collect more ratings than slots; one rater rates a pair at most once.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotation.core import cxc
from annotation.models.items import Caption, Dataset, Image, SamplingMethod, Split, TaskKind


def items_match_kind() -> Q:
    """The items a pair of each kind has (the others NULL), in canonical order: STS two
    captions, SIS two images (lower id first), SITS a caption and an image; REV (a
    retrieval failure's review) the query, the image it should have found (image_a) and
    the one retrieved (image_b): ordered, never the same image. Gold pairs share the rule."""
    return (
        Q(
            kind=TaskKind.STS,
            caption_a__isnull=False,
            caption_b__isnull=False,
            image_a__isnull=True,
            image_b__isnull=True,
            caption_a__lt=F("caption_b"),
        )
        | Q(
            kind=TaskKind.SIS,
            image_a__isnull=False,
            image_b__isnull=False,
            caption_a__isnull=True,
            caption_b__isnull=True,
            image_a__lt=F("image_b"),
        )
        | Q(
            kind=TaskKind.SITS,
            caption_a__isnull=False,
            image_a__isnull=False,
            caption_b__isnull=True,
            image_b__isnull=True,
        )
        | (
            Q(
                kind=TaskKind.REV,
                caption_a__isnull=False,
                image_a__isnull=False,
                image_b__isnull=False,
                caption_b__isnull=True,
            )
            & ~Q(image_a=F("image_b"))
        )
    )


class Pair(models.Model):
    """One unordered pair to rate. STS: caption_a < caption_b; SIS: image_a < image_b;
    SITS: caption_a with image_a. Unused item columns are NULL (checked). ``swapped``
    keeps the order the pair came in, for the exports."""

    # Every index and foreign key here is written or checked for each of a batch's tens
    # of thousands of pairs. So no index repeats the leading column of another
    # (pair_dataset_split_kind_idx serves lookups by dataset, pair_batch_method_idx those
    # by batch), and ``dataset``, the split's dataset copied for those lookups, has no
    # constraint of its own: the split's foreign key already keeps a dataset behind every
    # pair, and a second check at commit would prove only that some dataset exists.
    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="pairs", db_index=False, db_constraint=False
    )
    split = models.ForeignKey(Split, on_delete=models.PROTECT, related_name="pairs")
    batch = models.ForeignKey("sampling.SamplingBatch", on_delete=models.PROTECT, related_name="pairs", db_index=False)
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    sampling_method = models.CharField(max_length=20, choices=SamplingMethod.choices)
    caption_a = models.ForeignKey(
        Caption, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    caption_b = models.ForeignKey(
        Caption, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    image_a = models.ForeignKey(
        Image, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    image_b = models.ForeignKey(
        Image, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    swapped = models.BooleanField(
        default=False,
        db_default=False,
        help_text="The pair was sampled or uploaded as (b, a); stored a < b for uniqueness, exported as given.",
    )
    ratings_required = models.PositiveSmallIntegerField(default=5, help_text="Number of slots: distinct raters wanted.")
    ratings_max = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Adaptive N (copied from the batch): ratings_required grows one at a time up to this while "
        "the pair's interval is wider than the batch's target. Null: exactly ratings_required.",
    )
    priority = models.IntegerField(default=0, help_text="Copied from the batch; higher is rated first.")
    ratings_done = models.PositiveSmallIntegerField(
        default=0, help_text="Ratings stored so far; maintained by the rating service in the same transaction."
    )
    retired_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Taken out of the queue by an admin (e.g. a flagged broken image): its unrated slots are gone.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=items_match_kind(),
                name="pair_items_match_kind",
                violation_error_message="Pair items do not match its kind, or are not in canonical order.",
            ),
            models.CheckConstraint(
                condition=Q(ratings_required__gte=1) & Q(ratings_done__lte=F("ratings_required")),
                name="pair_ratings_within_required",
            ),
            models.CheckConstraint(
                condition=Q(ratings_max__isnull=True) | Q(ratings_required__lte=F("ratings_max")),
                name="pair_required_within_max",
                violation_error_message="An adaptive pair asks for more ratings than its maximum.",
            ),
            models.UniqueConstraint(
                fields=["caption_a", "caption_b"], condition=Q(kind=TaskKind.STS), name="pair_sts_unique"
            ),
            models.UniqueConstraint(
                fields=["image_a", "image_b"], condition=Q(kind=TaskKind.SIS), name="pair_sis_unique"
            ),
            models.UniqueConstraint(
                fields=["caption_a", "image_a"], condition=Q(kind=TaskKind.SITS), name="pair_sits_unique"
            ),
            models.UniqueConstraint(
                fields=["caption_a", "image_a", "image_b"], condition=Q(kind=TaskKind.REV), name="pair_rev_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["dataset", "split", "kind"], name="pair_dataset_split_kind_idx"),
            models.Index(fields=["batch", "sampling_method"], name="pair_batch_method_idx"),
            # Lookups by item. Partial: each pair fills two of the four item columns, and
            # the NULLs would only make every insert write two index entries for nothing.
            *(
                models.Index(fields=[column], condition=Q(**{f"{column}__isnull": False}), name=f"pair_{column}_idx")
                for column in ("caption_a", "caption_b", "image_a", "image_b")
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} pair #{self.pk} ({self.sampling_method})"


class SlotState(models.TextChoices):
    OPEN = "open", "open"
    LEASED = "leased", "leased"
    DONE = "done", "done"


class RatingSlot(models.Model):
    """One of a pair's ``ratings_required`` places for a rating.

    A leased slot whose ``lease_expires_at`` has passed is claimable again: correctness
    needs no cron job. ``rater`` is the current holder (leased) or the author (done).

    ``dataset``, ``kind``, ``priority``, ``pair_done`` and ``pair_complete`` are copies of
    the pair's values so that the claim reads one partial index in queue order
    (``slot_claim_idx``) without joining the pair; the rating service keeps them in step
    in the same transaction that stores a rating. ``pair_done`` is kept on open slots
    only, the ones the claim orders by it: a leased or done slot keeps the count it had
    when it was claimed or rated (until a completion, an exclusion or its undoing writes
    every slot of the pair), and a slot that opens again (a skip, a flag, an expired
    lease released) takes the pair's count then. ``pair_complete`` is set on every slot
    when the pair completes. A pair's slots are leased within a few claims of each
    other, so updating the open ones alone spares most of the sibling updates a rating
    made: never HOT updates, since ``pair_done`` is in ``slot_claim_idx``.
    """

    pair = models.ForeignKey(
        Pair,
        on_delete=models.CASCADE,
        related_name="slots",
        db_index=False,  # slot_index_unique_per_pair leads with the pair
    )
    dataset = models.ForeignKey(
        Dataset,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,  # slot_claim_idx and slot_rater_active_idx cover lookups by dataset
        # A copy like ``kind``: the pair's foreign key keeps a dataset behind every slot,
        # and a constraint here, checked for five slots a pair at commit, cost a 65k-pair
        # batch more than a second while proving only that some dataset exists.
        db_constraint=False,
        help_text="Copied from the pair for the claim index.",
    )
    index = models.PositiveSmallIntegerField(
        help_text="0 .. ratings_required-1, then one more for each top-up slot an exclusion opened."
    )
    state = models.CharField(max_length=10, choices=SlotState.choices, default=SlotState.OPEN)
    kind = models.CharField(
        max_length=4, choices=TaskKind.choices, help_text="Copied from the pair for the claim index."
    )
    priority = models.IntegerField(default=0, help_text="Copied from the pair for the claim index.")
    pair_done = models.PositiveSmallIntegerField(
        default=0, help_text="The pair's ratings_done, copied for the claim order (closest to completion first)."
    )
    pair_complete = models.BooleanField(
        default=False, help_text="The pair has all its ratings; copied for the per-rater progress count."
    )
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="rating_slots",
        db_index=False,  # slot_one_per_rater_per_pair leads with the rater
    )
    previous_rater = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # only read with the slot itself; an index would be written on every insert
        help_text="Holder whose lease expired before the slot was released or re-claimed: "
        "a late submission from them is accepted while the slot is still free.",
    )
    leased_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "index"], name="slot_index_unique_per_pair"),
            # Also the index of a rater's slots, so it leads with the rater: a lookup of the
            # rater's slots (the claim's held lease, the progress) ranges over theirs alone
            # even when the statistics still say no slot has a rater, as they do after a batch
            # is queued (with the pair first, such plans read every rated slot's entry), and a
            # slot update writes one index fewer. Partial: open slots (all of a new batch)
            # have no rater, and NULL raters never collide anyway.
            models.UniqueConstraint(
                fields=["rater", "pair"], condition=Q(rater__isnull=False), name="slot_one_per_rater_per_pair"
            ),
            # A rater holds at most one lease per dataset and kind: a repeated claim (page
            # reload, double click) gets the held slot back instead of stranding a second.
            models.UniqueConstraint(
                fields=["rater", "dataset", "kind"],
                condition=Q(state=SlotState.LEASED),
                name="slot_one_lease_per_rater",
            ),
            models.CheckConstraint(
                condition=(
                    Q(state=SlotState.OPEN, rater__isnull=True, lease_expires_at__isnull=True)
                    | Q(state=SlotState.LEASED, rater__isnull=False, lease_expires_at__isnull=False)
                    | Q(state=SlotState.DONE, rater__isnull=False)
                ),
                name="slot_state_consistent",
            ),
        ]
        indexes = [
            # The claim: open slots of one dataset and kind in queue order. Partial, so it
            # holds only what can be claimed and a claim reads its first entries.
            models.Index(
                fields=["dataset", "kind", "-priority", "-pair_done", "pair", "index"],
                condition=Q(state=SlotState.OPEN),
                name="slot_claim_idx",
            ),
            # Expired leases, found by range scan on the expiry time (claim and tidy-up).
            models.Index(
                fields=["lease_expires_at"], condition=Q(state=SlotState.LEASED), name="slot_lease_expiry_idx"
            ),
            # A rater's rated slots on pairs still being rated (progress: pairs left for
            # them, with every rated item). The state is in the condition, so the index
            # holds just what progress counts and it counts from the index alone: with
            # the state left to the table, PostgreSQL estimated this index no cheaper than
            # slot_one_per_rater_per_pair and counted through that one, reading the table
            # row of every slot the rater ever rated (213 rated: 131 pages, 0.2 ms of a
            # 0.6 ms progress, growing with each rating).
            models.Index(
                fields=["rater", "dataset", "kind"],
                condition=Q(rater__isnull=False, pair_complete=False, state=SlotState.DONE),
                name="slot_rater_active_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"slot {self.index} of pair {self.pair_id} ({self.state})"


class RatingStatus(models.TextChoices):
    """Only valid ratings count toward a pair's N, its score and the exports. An excluded
    rating was removed by an admin's exclusion; a superseded one was restored by undoing
    an exclusion after top-up ratings had already given its pair N valid ratings."""

    VALID = "valid", "valid"
    EXCLUDED = "excluded", "excluded"
    SUPERSEDED = "superseded", "superseded"


class Rating(models.Model):
    """One rater's judgment of one pair. ``slot`` is one-to-one, so a pair can never
    hold more ratings than it has slots; (pair, rater) is unique. A pair's valid ratings
    number at most ``ratings_required`` (its ``ratings_done``)."""

    # Every submit inserts a rating, and each index is written with it: no index of its
    # own where a composite one leads with the column (a tenth less WAL per rating).
    pair = models.ForeignKey(
        Pair,
        on_delete=models.PROTECT,
        related_name="ratings",
        db_index=False,  # rating_one_per_rater_per_pair leads with the pair
    )
    slot = models.OneToOneField(RatingSlot, on_delete=models.PROTECT, related_name="rating")
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="ratings",
        db_index=False,  # rating_rater_time_idx and rating_idempotency_key_unique lead with the rater
    )
    score = models.FloatField(help_text="Continuous 0-5.")
    time_on_item_ms = models.PositiveIntegerField(help_text="From the pair being shown to submit.")
    time_to_first_move_ms = models.PositiveIntegerField(null=True, blank=True)
    adjustments = models.PositiveIntegerField(default=0, help_text="How many times the rater moved the slider.")
    idempotency_key = models.CharField(max_length=64, help_text="Client-chosen; a repeated submit stores one rating.")
    created_at = models.DateTimeField(auto_now_add=True)
    # Database defaults too: the queue's SQL inserts ratings without naming these columns.
    below_speed_floor = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Given faster than the kind's speed floor (stored and marked, still counted).",
    )
    status = models.CharField(
        max_length=10, choices=RatingStatus.choices, default=RatingStatus.VALID, db_default=RatingStatus.VALID
    )
    exclusion = models.ForeignKey(
        "annotation.RatingExclusion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ratings",
        db_index=False,  # rating_exclusion_idx, partial: nearly every rating has none
        help_text="The exclusion that excluded this rating (or whose undo superseded it).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "rater"], name="rating_one_per_rater_per_pair"),
            models.UniqueConstraint(fields=["rater", "idempotency_key"], name="rating_idempotency_key_unique"),
            # NaN fails both comparisons in PostgreSQL and SQLite, so it is refused too.
            models.CheckConstraint(
                condition=Q(score__gte=cxc.SCORE_MIN) & Q(score__lte=cxc.SCORE_MAX), name="rating_score_in_range"
            ),
            models.CheckConstraint(condition=~Q(idempotency_key=""), name="rating_idempotency_key_not_empty"),
            models.CheckConstraint(
                condition=Q(time_to_first_move_ms__isnull=True) | Q(time_to_first_move_ms__lte=F("time_on_item_ms")),
                name="rating_first_move_within_time_on_item",
            ),
            models.CheckConstraint(
                condition=Q(status=RatingStatus.VALID) | Q(exclusion__isnull=False),
                name="rating_invalid_has_exclusion",
            ),
        ]
        indexes = [
            models.Index(fields=["rater", "created_at"], name="rating_rater_time_idx"),
            models.Index(fields=["exclusion"], condition=Q(exclusion__isnull=False), name="rating_exclusion_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.score:.2f} by {self.rater_id} on pair {self.pair_id}"
