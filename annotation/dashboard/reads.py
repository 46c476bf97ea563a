"""The reads a campaign snapshot is computed from: a dataset's pairs and ratings as numpy
columns (fetched in blocks, never as model instances: 1.3M ratings make about 64 MiB of
columns), and the few small things beside them (leases, flags, skips, names, floors)."""

from __future__ import annotations

from datetime import datetime
from itertools import islice

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    BigIntegerField,
    Case,
    Count,
    Exists,
    F,
    FloatField,
    Func,
    Max,
    OuterRef,
    Q,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast

from annotation.core.cxc import KINDS
from annotation.dashboard.pgcopy import copy_columns
from annotation.dashboard.snapshot import CampaignInputs
from annotation.dashboard.tables import PairTable, RatingTable
from annotation.models import (
    DEFAULT_SPEED_FLOORS,
    Dataset,
    Flag,
    GoldLease,
    GoldLeaseState,
    GoldPurpose,
    GoldRating,
    Pair,
    PairSkip,
    RaterEstimate,
    RaterPause,
    Rating,
    RatingSlot,
    RatingStatus,
    SamplingMethod,
    SlotState,
    SpeedFloor,
)
from sampling.models import SamplingBatch

# Rows per round trip of the server-side cursor, and per block turned into arrays.
FETCH_ROWS = 50_000


class EpochSeconds(Func):
    """A timestamp as float seconds since the Unix epoch, computed by the database so
    that a million ratings never become Python datetimes."""

    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):
        # date_part gives float8 directly; EXTRACT gives numeric, twice as slow to produce and cast.
        return self.as_sql(compiler, connection, template="date_part('epoch', %(expressions)s)", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # SQLite keeps UTC datetimes as text; julianday() reads them as a float of days
        # (day 2440587.5 is 1970-01-01), some microseconds off: rounded to milliseconds.
        template = "(ROUND((julianday(%(expressions)s) - 2440587.5) * 86400000.0) / 1000.0)"
        return self.as_sql(compiler, connection, template=template, **extra)


def _numeric_columns(queryset, dtypes: str) -> list[np.ndarray]:
    """The columns of a ``values_list`` queryset of numbers, never NULL: int64 for each
    ``"i"`` of ``dtypes``, float64 for each ``"f"``. PostgreSQL streams them through a
    binary COPY (:mod:`annotation.dashboard.pgcopy`); SQLite (the embedded mode, small
    datasets) through the cursor, a block of tuples at a time."""
    if connection.vendor == "postgresql":
        sql, params = queryset.query.sql_with_params()
        with connection.cursor() as cursor:
            return copy_columns(cursor, cursor.mogrify(sql, params).decode(), dtypes)
    rows = queryset.iterator(chunk_size=FETCH_ROWS)
    parts = []
    while block := list(islice(rows, FETCH_ROWS)):
        parts.append(np.array(block, dtype=np.float64))
    table = np.concatenate(parts) if parts else np.zeros((0, len(dtypes)))
    return [table[:, i].astype(np.int64 if code == "i" else np.float64) for i, code in enumerate(dtypes)]


def _int8(name) -> Cast:
    # COPY's binary rows are read as fixed 8-byte columns (annotation.dashboard.pgcopy).
    return Cast(name, BigIntegerField())


def rating_table(dataset: Dataset) -> RatingTable:
    """Every valid rating of the dataset (excluded and superseded ones count nowhere),
    ordered by pair id then rating id."""
    queryset = (
        Rating.objects.filter(pair__dataset=dataset, pair__kind__in=KINDS, status=RatingStatus.VALID)
        .order_by()
        .values_list(
            _int8("pair_id"),
            _int8("id"),
            _int8("rater_id"),
            Cast("score", FloatField()),
            _int8("time_on_item_ms"),
            EpochSeconds("created_at"),
        )
    )
    pair, rating_id, rater, score, time_ms, at = _numeric_columns(queryset, "iiifif")
    # Sorting here, not in the database: numpy orders 1.3M rows in a fraction of the time.
    order = np.lexsort((rating_id, pair))
    del rating_id
    # One column at a time, so only one extra column is alive at once.
    pair = pair[order]
    rater = rater[order]
    score = score[order]
    time_ms = time_ms[order]
    at = at[order]
    return RatingTable(pair=pair, rater=rater, score=score, time_ms=time_ms, at=at)


def pair_table(dataset: Dataset) -> PairTable:
    """Every pair of the dataset of a CxC task (not the failures queued for review),
    sorted by id."""
    methods = list(SamplingMethod.values)
    queryset = (
        Pair.objects.filter(dataset=dataset, kind__in=KINDS)
        .order_by()
        .values_list(
            _int8("id"),
            _code("kind", KINDS),
            _int8("batch_id"),
            _code("sampling_method", methods),
            _int8("ratings_done"),
            _int8("ratings_required"),
            _int8(Case(When(retired_at__isnull=False, then=Value(1)), default=Value(0))),
        )
    )
    columns = _numeric_columns(queryset, "iiiiiii")
    order = np.argsort(columns[0], kind="stable")
    pair_id, kind, batch, method, done, required, retired = (column[order] for column in columns)
    if (kind < 0).any() or (method < 0).any():
        raise ValueError(f"dataset {dataset.name!r} has pairs of a kind or sampling method this code does not know")
    return PairTable(
        id=pair_id,
        kind=kind,
        batch=batch,
        method=method,
        done=done,
        required=required,
        retired=retired > 0,
        methods=methods,
    )


def _code(field: str, names) -> Cast:
    """The position of a text column's value in ``names`` (-1: none of them)."""
    whens = [When(**{field: name}, then=Value(code)) for code, name in enumerate(names)]
    return _int8(Case(*whens, default=Value(-1)))


def speed_floors(dataset: Dataset) -> dict[str, float]:
    """Seconds per kind: the dataset's own floors, the documented defaults elsewhere."""
    floors = {kind: float(DEFAULT_SPEED_FLOORS[kind]) for kind in KINDS}
    floors.update(SpeedFloor.objects.filter(dataset=dataset).values_list("kind", "seconds"))
    return floors


def _per_rater(queryset) -> tuple[dict[int, int], dict[int, float]]:
    rows = queryset.order_by().values("rater_id").annotate(n=Count("id"), last=Max("created_at"))
    counts = {row["rater_id"]: row["n"] for row in rows}
    latest = {row["rater_id"]: row["last"].timestamp() for row in rows}
    return counts, latest


def _per_rater_leases(leases) -> tuple[dict[int, int], dict[int, float]]:
    """Gold leases per rater and the latest (epoch s). A gold lease records when it was
    leased, not when it was passed on: within the lease's minutes."""
    rows = leases.order_by().values("rater_id").annotate(n=Count("id"), last=Max("leased_at"))
    return {row["rater_id"]: row["n"] for row in rows}, {row["rater_id"]: row["last"].timestamp() for row in rows}


def _add_per_rater(counts: dict[int, int], latest: dict[int, float], leases) -> None:
    """Add gold leases per rater to ``counts`` and ``latest`` (``_per_rater_leases``)."""
    more, more_latest = _per_rater_leases(leases)
    for rater, n in more.items():
        counts[rater] = counts.get(rater, 0) + n
        latest[rater] = max(latest.get(rater, 0.0), more_latest[rater])


ESTIMATE_FIELDS = ("ratings", "bias", "bias_low", "bias_high", "noise_sd", "noise_low", "noise_high")


def quality_inputs(dataset: Dataset) -> dict:
    """The quality-control columns of CampaignInputs: queue gold ratings as rater ids and
    differences from the reference, excluded and superseded counts, active pauses and the
    latest rater-effects estimates per rater."""
    gold = GoldRating.objects.filter(dataset=dataset, purpose=GoldPurpose.QUEUE)
    gold_rows = np.array(list(gold.values_list("rater_id", "score", "gold_score")), dtype=np.float64).reshape(-1, 3)
    invalid: dict[int, dict[str, int]] = {}
    for rater, status, n in (
        Rating.objects.filter(pair__dataset=dataset)
        .exclude(status=RatingStatus.VALID)
        .order_by()
        .values_list("rater_id", "status")
        .annotate(n=Count("id"))
    ):
        invalid.setdefault(rater, {})[status] = n
    paused = {
        pause.rater_id: {
            "pause_id": pause.id,
            "reason": pause.reason,
            "automatic": pause.automatic,
            "since": pause.created_at.isoformat(),
        }
        for pause in RaterPause.objects.filter(dataset=dataset, lifted_at__isnull=True)
    }
    rater_model: dict[int, dict[str, dict]] = {}
    estimates = RaterEstimate.objects.filter(fit__dataset=dataset).values_list(
        "rater_id", "fit__kind", "ratings", "bias", "bias_low", "bias_high", "noise_sd", "noise_low", "noise_high"
    )
    for rater, kind, *values in estimates:
        rater_model.setdefault(rater, {})[kind] = dict(zip(ESTIMATE_FIELDS, values, strict=True))
    closed = Pair.objects.filter(
        dataset=dataset, ratings_max__isnull=False, retired_at__isnull=True, ratings_done=F("ratings_required")
    ).aggregate(pairs=Count("id"), ratings=Sum("ratings_done"))
    return {
        "adaptive_closed_pairs": closed["pairs"],
        "adaptive_closed_ratings": closed["ratings"] or 0,
        "rater_model": rater_model,
        "gold_rater": gold_rows[:, 0].astype(np.int64),
        "gold_difference": gold_rows[:, 1] - gold_rows[:, 2],
        "invalid": invalid,
        "paused": paused,
    }


def campaign_inputs(dataset: Dataset, *, now: datetime) -> CampaignInputs:
    """Everything a snapshot of ``dataset`` at ``now`` is computed from. Call inside one
    transaction that sees a single state of the database (see the refresh service)."""
    ratings = rating_table(dataset)
    pairs = pair_table(dataset)
    held = np.array(
        RatingSlot.objects.filter(
            dataset=dataset, kind__in=KINDS, state=SlotState.LEASED, lease_expires_at__gt=now
        ).values_list("pair_id", flat=True),
        dtype=np.int64,
    )
    flagged = np.array(
        Flag.objects.filter(pair__dataset=dataset, pair__kind__in=KINDS, resolved=False)
        .values_list("pair_id", flat=True)
        .distinct(),
        dtype=np.int64,
    )
    # A flag also passes on the pair (a PairSkip row); skips count only the plain ones.
    flagged_by_rater = Flag.objects.filter(pair=OuterRef("pair"), rater=OuterRef("rater"))
    skips, last_skip = _per_rater(PairSkip.objects.filter(pair__dataset=dataset).exclude(Exists(flagged_by_rater)))
    flags, last_flag = _per_rater(Flag.objects.filter(pair__dataset=dataset))
    # Gold pairs passed on count as any other: a rater who skips every gold pair shows it.
    gold_passed = GoldLease.objects.filter(dataset=dataset, state=GoldLeaseState.SKIPPED)
    _add_per_rater(skips, last_skip, gold_passed.filter(flag_id__isnull=True))
    _add_per_rater(flags, last_flag, GoldLease.objects.filter(dataset=dataset, flag_id__isnull=False))
    gold_passed_per_rater, _ = _per_rater_leases(gold_passed)
    last_passed = {rater: max(last_skip.get(rater, 0.0), last_flag.get(rater, 0.0)) for rater in {*skips, *flags}}
    quality = quality_inputs(dataset)
    rater_ids = {
        *np.unique(ratings.rater).tolist(),
        *skips,
        *flags,
        *quality["gold_rater"].tolist(),
        *quality["paused"],
    }
    # With each user, a crowd participant's largest quota among the dataset's links.
    quota = Max("participations__link__quota", filter=Q(participations__link__dataset=dataset))
    users = get_user_model().objects.filter(pk__in=rater_ids).annotate(quota=quota)
    usernames, quotas = {}, {}
    for pk, username, most in users.values_list("pk", "username", "quota"):
        usernames[pk] = username
        if most is not None:
            quotas[pk] = most
    batches = SamplingBatch.objects.filter(dataset=dataset).select_related("split").order_by("id")
    return CampaignInputs(
        pairs=pairs,
        ratings=ratings,
        held_pairs=held,
        flagged_pairs=flagged,
        leases_held=int(held.shape[0]),
        batch_names={batch.id: f"#{batch.id} {batch.split.name} ({batch.source})" for batch in batches},
        usernames=usernames,
        skips=skips,
        flags=flags,
        last_passed=last_passed,
        speed_floors=speed_floors(dataset),
        now_s=now.timestamp(),
        gold_passed=gold_passed_per_rater,
        quotas=quotas,
        **quality,
    )


def repeatable_read() -> None:
    """Make the transaction just begun read one state of the database throughout (the
    ratings and the pairs' counts must agree). Call first thing in an outermost atomic
    block; inside an outer transaction (a test's) its isolation is already fixed and
    stays. SQLite's transactions already read one state."""
    # An outermost atomic block has made no savepoint; a nested one (in a test) has.
    if connection.vendor == "postgresql" and connection.in_atomic_block and not connection.savepoint_ids:
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
