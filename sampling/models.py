"""Sampling batches: which methods, budgets and spaces produced which pairs."""

from django.db import models
from django.db.models import F, Q

from annotation.models import BackgroundRun, Dataset, Split, upload_state_constraints


class SamplingBatch(BackgroundRun):
    """A run of one or more sampling methods over a split (or an uploaded pair list).

    ``methods`` maps method name -> budget (null budget: as many as the method gives);
    for an uploaded list, method name -> pairs in the file. The same configuration,
    seed and queued pairs give the same pairs. Created, started and run only through
    ``sampling.services``; progress is written there too.
    """

    class Source(models.TextChoices):
        SAMPLED = "sampled", "sampled by the methods"
        UPLOADED = "uploaded", "uploaded pair list"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="sampling_batches")
    split = models.ForeignKey(Split, on_delete=models.PROTECT, related_name="sampling_batches")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.SAMPLED)
    methods = models.JSONField(default=dict, help_text='Method name -> budget, e.g. {"i2i_csim": 1000}.')
    k = models.PositiveSmallIntegerField(default=5, help_text="Neighbours per item.")
    spaces = models.JSONField(default=list, blank=True, help_text="Embedding space names to use; empty: all.")
    ratings_per_pair = models.PositiveSmallIntegerField(
        default=5, help_text="Distinct raters per pair; with adaptive N, the minimum each pair gets."
    )
    ratings_max = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Adaptive N: at most this many ratings per pair (null: exactly ratings_per_pair, as CxC).",
    )
    adaptive_half_width = models.FloatField(
        null=True,
        blank=True,
        help_text="Adaptive N: the precision target, half a pair's 95% interval (0-5 scale); with a budget, the "
        "target that meets it, solved anew at each refit of the rater model.",
    )
    adaptive_budget = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Adaptive N: the ratings the batch's pairs may take in all (null: the precision target rules).",
    )
    seed = models.BigIntegerField(default=0)
    priority = models.IntegerField(default=0, help_text="Higher batches are rated first.")
    pairs_per_method = models.JSONField(default=dict, blank=True, help_text="Filled when the batch succeeds.")
    stats = models.JSONField(
        default=dict,
        blank=True,
        help_text="Filled by the run: search and write seconds, index used, pairs skipped as already queued.",
    )
    cocaption_pairs = models.CharField(
        max_length=10,
        choices=[("cycle", "cycle: each caption in two pairs, as CxC"), ("all", "all: every pair of a group")],
        default="cycle",
        db_default="cycle",
        help_text="Which co-caption pairs c2c_cocaption draws from.",
    )
    audit = models.JSONField(
        default=dict,
        blank=True,
        help_text='model_topk: the models audited ({"models": [{"name", "image_space", "caption_space"}], '
        '"directions": [...], "queries": n or null}).',
    )
    upload_path = models.CharField(max_length=1000, blank=True, help_text="Stored pair list, for uploaded batches.")
    upload_repeats = models.CharField(
        max_length=10,
        choices=[("merge", "merge: queue a repeated pair once"), ("refuse", "refuse the list")],
        default="merge",
        db_default="merge",
        help_text="Uploaded batches: what a pair named twice in the list (in either order) gets.",
    )

    class Meta:
        verbose_name_plural = "sampling batches"
        constraints = [
            models.CheckConstraint(condition=Q(k__gte=1), name="batch_k_positive"),
            models.CheckConstraint(condition=Q(ratings_per_pair__gte=1), name="batch_ratings_per_pair_positive"),
            models.CheckConstraint(
                condition=(Q(ratings_max__isnull=True) & Q(adaptive_half_width__isnull=True))
                | (Q(ratings_max__gt=F("ratings_per_pair")) & Q(adaptive_half_width__gt=0)),
                name="batch_adaptive_rule_whole",
                violation_error_message="Adaptive N needs a maximum above the minimum and a positive half-width.",
            ),
            models.CheckConstraint(
                condition=Q(adaptive_budget__isnull=True) | (Q(ratings_max__isnull=False) & Q(adaptive_budget__gt=0)),
                name="batch_adaptive_budget_adaptive",
                violation_error_message="A budget of ratings needs adaptive N and at least one rating.",
            ),
            # numpy seeds must be non-negative.
            models.CheckConstraint(condition=Q(seed__gte=0), name="batch_seed_nonnegative"),
            models.CheckConstraint(
                condition=Q(progress_done__gte=0) & Q(progress_total__gte=0), name="batch_progress_nonnegative"
            ),
            *upload_state_constraints("batch"),
        ]
        indexes = [models.Index(fields=["status"], name="batch_status_idx")]

    def input_paths(self) -> list[str]:
        return [self.upload_path] if self.upload_path else []

    def __str__(self) -> str:
        return f"batch #{self.pk} {self.dataset.name}/{self.split.name} ({self.status})"


class AuditRetrieval(models.Model):
    """One retrieval behind a pair of a model_topk batch: which audited model retrieved it,
    in which direction (the query's modality first), at which rank. A pair several models
    (or both directions) retrieved is queued once and has one row per retrieval."""

    class Direction(models.TextChoices):
        C2I = "c2i", "caption -> image"
        I2C = "i2c", "image -> caption"
        C2C = "c2c", "caption -> caption"
        I2I = "i2i", "image -> image"

    pair = models.ForeignKey("annotation.Pair", on_delete=models.CASCADE, related_name="audit_retrievals")
    batch = models.ForeignKey(SamplingBatch, on_delete=models.CASCADE, related_name="audit_retrievals", db_index=False)
    model_name = models.CharField(max_length=100)
    direction = models.CharField(max_length=3, choices=Direction.choices)
    rank = models.PositiveIntegerField(help_text="1 = the model's best item for the query.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "model_name", "direction"], name="audit_retrieval_once"),
            models.CheckConstraint(condition=Q(rank__gte=1), name="audit_retrieval_rank_positive"),
        ]
        indexes = [models.Index(fields=["batch", "model_name"], name="audit_batch_model_idx")]

    def __str__(self) -> str:
        return f"{self.model_name} {self.direction} rank {self.rank} -> pair #{self.pair_id}"


class SamplingShard(models.Model):
    """One shard of a batch's search run as a Celery chord (``sampling.runs.chord``): a
    range of rows of one searched space, in one stage (IVF, IVF-PQ: assign, then search). Its
    attempts count deliveries, a worker that died included; the batch's progress counts
    the finished ones."""

    class Stage(models.TextChoices):
        ASSIGN = "assign", "assign rows to cells"
        SEARCH = "search", "search the probed cells"

    batch = models.ForeignKey(SamplingBatch, on_delete=models.CASCADE, related_name="shards")
    space = models.CharField(max_length=100, help_text="The searched embedding space.")
    stage = models.CharField(max_length=10, choices=Stage.choices)
    number = models.PositiveIntegerField()
    row_start = models.PositiveBigIntegerField()
    row_stop = models.PositiveBigIntegerField()
    attempts = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True, help_text="host:pid of the last process that took it.")
    queued_at = models.DateTimeField(null=True, blank=True, help_text="When its stage's chord was queued.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="Time of the attempt that finished it.")
    peak_rss_mib = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Peak resident memory of the attempt that finished it, mapped vector pages included (Linux).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "space", "stage", "number"], name="shard_once"),
            models.CheckConstraint(condition=Q(row_stop__gt=F("row_start")), name="shard_rows_nonempty"),
        ]

    def __str__(self) -> str:
        return f"batch #{self.batch_id} {self.space} {self.stage} shard {self.number}"
