"""Quality control: gold pairs and their ratings, per-dataset quality settings,
rater pauses, and exclusions of a rater's ratings.

Gold pairs are served inside the normal queue and must look like any other pair in the
page and the API, ids included: a gold pair's id is drawn from the pairs' id sequence, a
gold lease's from the slots' and a gold rating's from the ratings' (see
``annotation.serving.gold_ids``), so no id range tells a rater which items are gold. Their ratings
live here, never in ``Rating``: they never count toward a pair's N and are exported only in
the audit file ``gold_<split>.csv``.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

from annotation.core import cxc
from annotation.models.items import Caption, Dataset, Image, Split, TaskKind
from annotation.models.pairs import Pair, items_match_kind
from annotation.models.queue import FlagReason

# Defaults of a dataset without a QualitySettings row.
DEFAULT_GOLD_ONE_IN = 20
DEFAULT_PAUSE_WINDOW = 5
DEFAULT_PAUSE_MAX_ERROR = 1.0
DEFAULT_PROMOTE_MAX_SD = 0.5
DEFAULT_QUIZ_MAX_ERROR = 1.0
DEFAULT_QUIZ_LENGTH = 5
MAX_QUIZ_LENGTH = 50
# Rater flags (annotation.quality.flags): the checks on by default, each nullable (off).
DEFAULT_FLAG_LOO_BELOW = 0.3
DEFAULT_FLAG_GOLD_ERROR_ABOVE = 1.0
DEFAULT_FLAG_FAST_SHARE_ABOVE = 0.5
DEFAULT_FLAG_GOLD_SKIP_SHARE_ABOVE = 0.5
# The rater-effects model's noise sd (0-5 scale): CxC-like raters sit near 0.8, one who
# answers at random near 1.7.
DEFAULT_FLAG_NOISE_ABOVE = 1.5


class QualitySettings(models.Model):
    """A dataset's quality-control settings; a dataset without a row uses the defaults."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, related_name="quality_settings")
    gold_one_in = models.PositiveIntegerField(
        default=DEFAULT_GOLD_ONE_IN,
        help_text="On average one in this many of a rater's items is a gold pair; 0 serves no gold pairs.",
    )
    auto_pause = models.BooleanField(
        default=False,
        help_text="Pause a rater whose mean absolute gold error over their last pause_window gold items "
        "exceeds pause_max_error, until an admin lifts the pause.",
    )
    pause_window = models.PositiveSmallIntegerField(
        default=DEFAULT_PAUSE_WINDOW, help_text="K: how many of the rater's latest gold ratings are judged."
    )
    pause_max_error = models.FloatField(
        default=DEFAULT_PAUSE_MAX_ERROR, help_text="Mean absolute error (0-5 scale) above which a rater is paused."
    )
    quiz_max_error = models.FloatField(
        default=DEFAULT_QUIZ_MAX_ERROR,
        help_text="A qualification quiz attempt is passed when the mean absolute error of its answers is strictly "
        "below this (exactly at it fails).",
    )
    quiz_length = models.PositiveSmallIntegerField(
        default=DEFAULT_QUIZ_LENGTH,
        help_text="Questions per quiz attempt, drawn for each rater from the kind's quiz pool; the second attempt "
        "never repeats a question of the first. Each kind's pool needs at least five times this many gold pairs: "
        "a smaller pool runs no quiz (the kind stays closed to raters not yet qualified).",
    )
    flag_loo_below = models.FloatField(
        null=True,
        blank=True,
        default=DEFAULT_FLAG_LOO_BELOW,
        help_text="Flag a rater whose LOO r (correlation with the others' mean on shared complete pairs) is below "
        "this (once they share enough pairs: the raters page states each minimum); empty: no LOO r check. -1 to 1.",
    )
    flag_gold_error_above = models.FloatField(
        null=True,
        blank=True,
        default=DEFAULT_FLAG_GOLD_ERROR_ABOVE,
        help_text="Flag a rater whose mean absolute gold error is above this (once they rated enough gold pairs); "
        "empty: no gold error check. 0 to 5.",
    )
    flag_fast_share_above = models.FloatField(
        null=True,
        blank=True,
        default=DEFAULT_FLAG_FAST_SHARE_ABOVE,
        help_text="Flag a rater whose share of ratings faster than the speed floor is above this (once they gave "
        "enough ratings); empty: no speed check. A share, 0 to 1 (0.5 = 50%).",
    )
    flag_gold_skip_share_above = models.FloatField(
        null=True,
        blank=True,
        default=DEFAULT_FLAG_GOLD_SKIP_SHARE_ABOVE,
        help_text="Flag a rater who skipped or flagged more than this share of the gold pairs served to them (once "
        "they met enough gold pairs); empty: no gold-skip check. A share, 0 to 1.",
    )
    flag_noise_above = models.FloatField(
        null=True,
        blank=True,
        default=DEFAULT_FLAG_NOISE_ABOVE,
        help_text="Flag a rater whose noise sd in the rater-effects model is above this in a task kind (once they "
        "gave enough ratings of it); empty: no noise check. 0 to 5.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(pause_window__gte=1), name="quality_pause_window_positive"),
            models.CheckConstraint(
                condition=Q(pause_max_error__gte=0) & Q(pause_max_error__lte=cxc.SCORE_MAX),
                name="quality_pause_max_error_in_range",
            ),
            models.CheckConstraint(
                condition=Q(quiz_max_error__gt=0) & Q(quiz_max_error__lte=cxc.SCORE_MAX),
                name="quality_quiz_max_error_in_range",
            ),
            models.CheckConstraint(
                condition=Q(quiz_length__gte=1) & Q(quiz_length__lte=MAX_QUIZ_LENGTH),
                name="quality_quiz_length_in_range",
            ),
            models.CheckConstraint(
                condition=Q(flag_loo_below__isnull=True) | Q(flag_loo_below__gte=-1) & Q(flag_loo_below__lte=1),
                name="quality_flag_loo_in_range",
            ),
            models.CheckConstraint(
                condition=Q(flag_gold_error_above__isnull=True)
                | Q(flag_gold_error_above__gte=0) & Q(flag_gold_error_above__lte=cxc.SCORE_MAX),
                name="quality_flag_gold_error_in_range",
            ),
            models.CheckConstraint(
                condition=Q(flag_fast_share_above__isnull=True)
                | Q(flag_fast_share_above__gte=0) & Q(flag_fast_share_above__lte=1),
                name="quality_flag_fast_share_in_range",
            ),
            models.CheckConstraint(
                condition=Q(flag_gold_skip_share_above__isnull=True)
                | Q(flag_gold_skip_share_above__gte=0) & Q(flag_gold_skip_share_above__lte=1),
                name="quality_flag_gold_skip_share_in_range",
            ),
            models.CheckConstraint(
                condition=Q(flag_noise_above__isnull=True)
                | Q(flag_noise_above__gte=0) & Q(flag_noise_above__lte=cxc.SCORE_MAX),
                name="quality_flag_noise_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"gold rate and pauses of {self.dataset}"


class GoldSource(models.TextChoices):
    UPLOAD = "upload", "uploaded"
    PROMOTED = "promoted", "promoted from an agreed pair"


class GoldPair(models.Model):
    """A pair with a reference score. Items as in ``Pair`` (canonical order, ``swapped``
    keeps the uploaded order). ``id`` is taken from the pairs' id sequence."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="gold_pairs")
    split = models.ForeignKey(Split, on_delete=models.PROTECT, related_name="gold_pairs")
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    caption_a = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    caption_b = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    image_a = models.ForeignKey(Image, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    image_b = models.ForeignKey(Image, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    swapped = models.BooleanField(default=False, help_text="Given as (b, a); stored a < b, exported as given.")
    gold_score = models.FloatField(help_text="The reference score, 0-5.")
    explanation = models.TextField(blank=True, help_text="Why the reference score is right (shown in the quiz).")
    source = models.CharField(max_length=10, choices=GoldSource.choices)
    source_pair = models.ForeignKey(
        Pair,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The complete pair this gold pair was promoted from.",
    )
    active = models.BooleanField(default=True, help_text="Served to raters; retired gold pairs keep their ratings.")
    in_quiz = models.BooleanField(
        default=False,
        help_text="Asked in the qualification quiz of its kind, with its reference and explanation shown after "
        "the answer; never served in the queue, where its answer would be known.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=items_match_kind(),
                name="gold_items_match_kind",
                violation_error_message="Gold pair items do not match its kind, or are not in canonical order.",
            ),
            models.CheckConstraint(
                condition=Q(gold_score__gte=cxc.SCORE_MIN) & Q(gold_score__lte=cxc.SCORE_MAX),
                name="gold_score_in_range",
            ),
            models.UniqueConstraint(
                fields=["caption_a", "caption_b"], condition=Q(kind=TaskKind.STS), name="gold_sts_unique"
            ),
            models.UniqueConstraint(
                fields=["image_a", "image_b"], condition=Q(kind=TaskKind.SIS), name="gold_sis_unique"
            ),
            models.UniqueConstraint(
                fields=["caption_a", "image_a"], condition=Q(kind=TaskKind.SITS), name="gold_sits_unique"
            ),
            models.UniqueConstraint(
                fields=["caption_a", "image_a", "image_b"], condition=Q(kind=TaskKind.REV), name="gold_rev_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["dataset", "kind", "id"], condition=Q(active=True), name="gold_active_idx"),
            # Gold's turn in the claim asks whether one exists (the rater's progress reads
            # their number from GoldCounter).
            models.Index(
                fields=["dataset", "kind"], condition=Q(active=True, in_quiz=False), name="gold_serveable_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} gold pair #{self.pk} ({self.gold_score:g})"


class GoldLeaseState(models.TextChoices):
    LEASED = "leased", "leased"
    DONE = "done", "done"
    SKIPPED = "skipped", "skipped"


class GoldLease(models.Model):
    """A gold pair served to one rater: the gold counterpart of a rating slot. Unique per
    gold pair and rater, so a rater never meets the same gold pair twice. ``id`` is taken
    from the slots' id sequence; ``flag_*`` keep a flag the rater raised on it."""

    gold_pair = models.ForeignKey(GoldPair, on_delete=models.CASCADE, related_name="leases")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gold_leases")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=4, choices=TaskKind.choices, help_text="Copied from the gold pair.")
    state = models.CharField(max_length=10, choices=GoldLeaseState.choices, default=GoldLeaseState.LEASED)
    leased_at = models.DateTimeField()
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    flag_id = models.BigIntegerField(
        null=True, blank=True, help_text="Id (from the flags' sequence) answered for the rater's flag."
    )
    flag_reason = models.CharField(max_length=30, choices=FlagReason.choices, blank=True)
    flag_note = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["gold_pair", "rater"], name="gold_lease_once_per_rater"),
            models.UniqueConstraint(
                fields=["rater", "dataset", "kind"],
                condition=Q(state=GoldLeaseState.LEASED),
                name="gold_one_lease_per_rater",
            ),
            models.CheckConstraint(
                condition=Q(state=GoldLeaseState.LEASED, lease_expires_at__isnull=False)
                | ~Q(state=GoldLeaseState.LEASED),
                name="gold_lease_state_consistent",
            ),
        ]
        indexes = [models.Index(fields=["rater", "dataset"], name="gold_lease_rater_idx")]

    def __str__(self) -> str:
        return f"gold lease #{self.pk} of {self.gold_pair_id} to {self.rater_id} ({self.state})"


class GoldPurpose(models.TextChoices):
    QUEUE = "queue", "served in the queue"
    QUIZ = "quiz", "qualification quiz"


class GoldRating(models.Model):
    """A rater's score on a gold pair; never part of the dataset's ratings. ``id`` is
    taken from the ratings' id sequence."""

    gold_pair = models.ForeignKey(GoldPair, on_delete=models.CASCADE, related_name="ratings")
    lease = models.OneToOneField(
        GoldLease, null=True, blank=True, on_delete=models.CASCADE, related_name="rating", help_text="Queue ratings."
    )
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gold_ratings")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+", db_index=False)
    purpose = models.CharField(max_length=10, choices=GoldPurpose.choices, default=GoldPurpose.QUEUE)
    attempt = models.PositiveSmallIntegerField(default=1, help_text="Quiz attempt (1 or 2); 1 for queue ratings.")
    score = models.FloatField(help_text="Continuous 0-5.")
    gold_score = models.FloatField(help_text="The reference score when this rating was given.")
    time_on_item_ms = models.PositiveIntegerField()
    time_to_first_move_ms = models.PositiveIntegerField(null=True, blank=True)
    adjustments = models.PositiveIntegerField(default=0)
    idempotency_key = models.CharField(max_length=64)
    below_speed_floor = models.BooleanField(default=False, help_text="Faster than the kind's speed floor.")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["gold_pair", "rater", "purpose", "attempt"], name="gold_rating_once_per_attempt"
            ),
            models.UniqueConstraint(fields=["rater", "idempotency_key"], name="gold_rating_idempotency_unique"),
            models.CheckConstraint(
                condition=Q(score__gte=cxc.SCORE_MIN) & Q(score__lte=cxc.SCORE_MAX), name="gold_rating_score_in_range"
            ),
            models.CheckConstraint(
                condition=Q(time_to_first_move_ms__isnull=True) | Q(time_to_first_move_ms__lte=F("time_on_item_ms")),
                name="gold_rating_first_move_within_time",
            ),
        ]
        indexes = [models.Index(fields=["rater", "dataset", "-created_at"], name="gold_rating_rater_idx")]

    def __str__(self) -> str:
        return f"{self.score:.2f} (gold {self.gold_score:g}) by {self.rater_id} on gold pair {self.gold_pair_id}"


class RaterPause(models.Model):
    """A rater may claim nothing in the dataset until an admin lifts the pause. At most
    one active pause per rater and dataset; lifted pauses stay as the record."""

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pauses")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="rater_pauses")
    reason = models.TextField(help_text="Why, e.g. 'gold error 1.62 over the last 5 gold items (limit 1.00)'.")
    automatic = models.BooleanField(default=False, help_text="Set by the gold-error rule, not by an admin.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lift_note = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rater", "dataset"], condition=Q(lifted_at__isnull=True), name="pause_one_active"
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="pause_reason_not_empty"),
        ]

    def __str__(self) -> str:
        state = "lifted" if self.lifted_at else "active"
        return f"pause of {self.rater_id} in {self.dataset_id} ({state})"


class ExclusionState(models.TextChoices):
    APPLYING = "applying", "applying"
    APPLIED = "applied", "applied"
    UNDOING = "undoing", "undoing"
    UNDONE = "undone", "undone"


class ExclusionPause(models.TextChoices):
    """What an exclusion did to the rater's standing in the dataset."""

    PAUSED = "paused", "paused"
    ALREADY_PAUSED = "already_paused", "already paused"
    KEPT_ACTIVE = "kept_active", "kept active"


# Stands in for an open window end in the one-exclusion constraint: NULLs never clash in
# a unique index, and two "all ratings" exclusions of one rater must.
_NO_WINDOW = Value("1970-01-01T00:00:00+00:00", output_field=models.DateTimeField())


class RatingExclusion(models.Model):
    """An admin's decision to exclude a rater's ratings in a dataset (all of them, or
    those created in [window_start, window_end)). Excluded ratings stay stored, marked
    with this row; each affected pair gets a new open slot per rating it lost. Applying
    and undoing run in chunks of pairs and are resumable: the state says which is under
    way, and each chunk only touches ratings not yet handled."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="exclusions")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="exclusions")
    window_start = models.DateTimeField(null=True, blank=True, help_text="Ratings from this time (empty: all).")
    window_end = models.DateTimeField(null=True, blank=True, help_text="Ratings before this time (empty: until now).")
    # A rating's id is drawn once its submission holds the pair's lock: a rating drawn
    # after this id (its time read before the exclusion, its pair lock after a chunk had
    # passed) is outside the exclusion instead of missed by it. Ratings up to it are seen
    # by the chunks, or, still being written in a pair no chunk visits, by the run's last
    # pass (chunks.wait_for_submissions_in_flight).
    ratings_through = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="The last rating id drawn when the exclusion was made; ratings with higher ids came after it "
        "(empty: made before exclusions kept it).",
    )
    reason = models.TextField()
    state = models.CharField(max_length=10, choices=ExclusionState.choices, default=ExclusionState.APPLYING)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField()
    applied_at = models.DateTimeField(null=True, blank=True)
    ratings_excluded = models.PositiveIntegerField(default=0)
    slots_reopened = models.PositiveIntegerField(default=0)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    undone_at = models.DateTimeField(null=True, blank=True)
    undo_reason = models.TextField(blank=True)
    ratings_restored = models.PositiveIntegerField(default=0)
    ratings_superseded = models.PositiveIntegerField(default=0)
    pause = models.CharField(
        max_length=14,
        choices=ExclusionPause.choices,
        blank=True,
        help_text="Whether the exclusion paused the rater in the dataset (empty: made before exclusions paused).",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="exclusion_reason_not_empty"),
            # Three admins (or one double click) excluding the same ratings at once make
            # one exclusion: the others are refused naming it.
            models.UniqueConstraint(
                F("rater"),
                F("dataset"),
                Coalesce("window_start", _NO_WINDOW),
                Coalesce("window_end", _NO_WINDOW),
                condition=~Q(state="undone"),
                name="exclusion_one_per_window",
            ),
            models.CheckConstraint(
                condition=Q(window_start__isnull=True)
                | Q(window_end__isnull=True)
                | Q(window_start__lt=F("window_end")),
                name="exclusion_window_ordered",
            ),
        ]
        indexes = [models.Index(fields=["dataset", "-created_at"], name="exclusion_dataset_idx")]

    def __str__(self) -> str:
        return f"exclusion #{self.pk} of {self.rater_id} in {self.dataset_id} ({self.state})"
