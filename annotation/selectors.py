"""Reads: querysets with the joins they need."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, tzinfo
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db.models import Avg, Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from annotation.errors import NotFound
from annotation.models import (
    Caption,
    Dataset,
    EmbeddingSpace,
    GoldLease,
    GoldLeaseState,
    GoldPurpose,
    GoldRating,
    Image,
    Job,
    Pair,
    PairSkip,
    Qualification,
    QualitySettings,
    QueueCounter,
    Rating,
    RatingSlot,
    RatingStatus,
    SlotState,
    Split,
)
from annotation.progress_sql import progress_after_claim, progress_claim_read, progress_row
from annotation.rating.queue.shapes import Assignment, ClaimRead
from annotation.sql import use_postgres_sql


def dataset_get(*, name: str) -> Dataset:
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        raise NotFound(f"no dataset named {name!r}")
    return dataset


def dataset_list() -> QuerySet[Dataset]:
    return Dataset.objects.annotate(image_count=_count_of(Image), caption_count=_count_of(Caption)).order_by("name")


def _count_of(model) -> Subquery:
    # A subquery per count: joining both item tables at once would multiply rows.
    counts = model.objects.filter(dataset=OuterRef("pk")).order_by().values("dataset").annotate(n=Count("id"))
    return Subquery(counts.values("n"), output_field=IntegerField())


def embedding_space_list(*, dataset: Dataset) -> QuerySet[EmbeddingSpace]:
    return EmbeddingSpace.objects.filter(dataset=dataset).order_by("name")


def job_get(*, job_id: int) -> Job:
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"no job #{job_id}")
    return job


def export_job_list(*, dataset_name: str | None = None) -> QuerySet[Job]:
    """Export jobs, newest first; only those of ``dataset_name`` when given."""
    jobs = Job.objects.filter(kind=Job.Kind.EXPORT_DATASET).order_by("-created_at", "-id")
    if dataset_name:
        jobs = jobs.filter(params__dataset=dataset_name)
    return jobs


def export_job_get(*, job_id: int) -> Job:
    """The export job ``job_id``; NotFound for a missing id or a job of another kind."""
    job = Job.objects.filter(pk=job_id, kind=Job.Kind.EXPORT_DATASET).first()
    if job is None:
        raise NotFound(f"no export job #{job_id}")
    return job


def split_get(*, dataset: Dataset, name: str) -> Split:
    split = Split.objects.filter(dataset=dataset, name=name).first()
    if split is None:
        names = ", ".join(Split.objects.filter(dataset=dataset).order_by("name").values_list("name", flat=True))
        raise NotFound(f"dataset {dataset.name!r} has no split {name!r}; it has: {names or 'none'}")
    return split


def split_item_keys(*, split: Split) -> tuple[list[str], list[tuple[str, str]]]:
    """The split's image keys, and (caption key, image key) of each of its captions
    (the original image-caption pairs), both in id order."""
    image_keys = list(Image.objects.filter(split=split).order_by("id").values_list("key", flat=True))
    caption_pairs = list(Caption.objects.filter(image__split=split).order_by("id").values_list("key", "image__key"))
    return image_keys, caption_pairs


# Item keys of each kind's pairs, in the CxC files' column order (SITS: caption, image).
PAIR_ITEM_KEYS = {
    "STS": ("caption_a__key", "caption_b__key"),
    "SIS": ("image_a__key", "image_b__key"),
    "SITS": ("caption_a__key", "image_a__key"),
}


def split_rated_pairs(*, split: Split) -> dict[str, tuple[list[str], list[str], list[float]]]:
    """The split's own ratings, as the exports count them: per kind, (first keys, second
    keys, mean scores) of every pair with all its valid ratings and not retired, in pair
    id order. Kinds without such a pair are left out."""
    out: dict[str, tuple[list[str], list[str], list[float]]] = {}
    for kind, (first, second) in PAIR_ITEM_KEYS.items():
        rows = list(
            Pair.objects.filter(split=split, kind=kind, ratings_done=F("ratings_required"), retired_at__isnull=True)
            .order_by("id")
            .annotate(mean=Avg("ratings__score", filter=Q(ratings__status=RatingStatus.VALID)))
            .values_list(first, second, "mean")
        )
        if rows:
            out[kind] = ([r[0] for r in rows], [r[1] for r in rows], [float(r[2]) for r in rows])
    return out


def embedding_space_get(*, dataset: Dataset, name: str) -> EmbeddingSpace:
    space = EmbeddingSpace.objects.filter(dataset=dataset, name=name).first()
    if space is None:
        names = ", ".join(embedding_space_list(dataset=dataset).values_list("name", flat=True))
        raise NotFound(f"dataset {dataset.name!r} has no embedding space {name!r}; it has: {names or 'none'}")
    return space


# --- the rater's own work ----------------------------------------------------------------


@dataclass(frozen=True)
class RaterProgress:
    """What the rating page shows. ``pairs_left``: pairs of the rater's kinds that still
    need ratings and that the rater has neither rated nor skipped (the held one counts);
    ``pairs_left_by_kind`` splits it by kind, one entry per qualified kind."""

    dataset: str
    kinds: list[str]
    ratings_today: int
    pairs_left: int
    pairs_left_by_kind: dict[str, int]
    day_starts_at: datetime
    held_slot_id: int | None
    held_until: datetime | None


def rater_pairs_left(*, rater, kinds: list[str], dataset_id: int | None = None) -> dict[tuple[int, str], int]:
    """(dataset id, kind) -> pairs left for the rater, for ``kinds`` (and one dataset if
    given); pairs with nothing left are absent.

    Gold pairs count as any other, so the figure moves alike whichever pair a rater
    rates or skips: the ordinary pairs that still need ratings and that the rater has
    neither rated nor skipped (a held one counts), plus their held gold lease, plus,
    while ordinary pairs are left (gold follows the ordinary pace) and the dataset serves
    gold, the gold pairs the queue may still serve them (``gold_unmet``). Claiming
    either moves a pair into "held" and leaves the figure; rating or skipping either
    takes one off. Five grouped reads whatever the queue size."""
    from annotation.quality.gold.serving import gold_unmet  # gold serving imports the queue, which reads this

    left = _ordinary_left(rater=rater, kinds=kinds, dataset_id=dataset_id)
    unmet = _count_by(gold_unmet(rater=rater, dataset_id=dataset_id, kinds=kinds), ("dataset_id", "kind"), Count("id"))
    gold_off = _datasets_without_gold({dataset for dataset, _ in unmet})
    for key, n in unmet.items():
        if left.get(key, 0) > 0 and key[0] not in gold_off:
            left[key] += n
    for key, n in _held_gold(rater=rater, kinds=kinds, dataset_id=dataset_id).items():
        left[key] = left.get(key, 0) + n
    return {key: n for key, n in left.items() if n > 0}


def rater_kinds_with_pairs_left(*, rater, kinds: list[str], dataset_id: int) -> set[str]:
    """The kinds of ``kinds`` with a pair left for the rater in the dataset
    (``rater_pairs_left`` above zero), in four grouped reads: gold pairs left count only
    while ordinary pairs are left, so they never decide it."""
    left = _ordinary_left(rater=rater, kinds=kinds, dataset_id=dataset_id)
    for key, n in _held_gold(rater=rater, kinds=kinds, dataset_id=dataset_id).items():
        left[key] = left.get(key, 0) + n
    return {kind for (_, kind), n in left.items() if n > 0}


def _ordinary_left(*, rater, kinds: list[str], dataset_id: int | None) -> dict[tuple[int, str], int]:
    """(dataset id, kind) -> ordinary pairs that still need ratings and that the rater has
    neither rated nor skipped (a held one counts); may be zero or less."""
    counters = QueueCounter.objects.filter(kind__in=kinds)
    rated = RatingSlot.objects.filter(rater=rater, kind__in=kinds, pair_complete=False, state=SlotState.DONE)
    skipped = PairSkip.objects.filter(
        rater=rater,
        pair__kind__in=kinds,
        pair__ratings_done__lt=F("pair__ratings_required"),
        pair__retired_at__isnull=True,
    )
    if dataset_id is not None:
        counters = counters.filter(dataset_id=dataset_id)
        rated = rated.filter(dataset_id=dataset_id)
        skipped = skipped.filter(pair__dataset_id=dataset_id)
    left = _count_by(counters, ("dataset_id", "kind"), Sum("pairs_open"))
    not_for_rater = (
        _count_by(rated, ("dataset_id", "kind"), Count("id")),
        _count_by(skipped, ("pair__dataset_id", "pair__kind"), Count("id")),
    )
    for counts in not_for_rater:
        for key, n in counts.items():
            left[key] = left.get(key, 0) - n
    return left


def _held_gold(*, rater, kinds: list[str], dataset_id: int | None) -> dict[tuple[int, str], int]:
    """(dataset id, kind) -> the rater's held leases of active gold pairs."""
    held = GoldLease.objects.filter(rater=rater, kind__in=kinds, state=GoldLeaseState.LEASED, gold_pair__active=True)
    if dataset_id is not None:
        held = held.filter(dataset_id=dataset_id)
    return _count_by(held, ("dataset_id", "kind"), Count("id"))


def _datasets_without_gold(dataset_ids: set[int]) -> set[int]:
    """Of ``dataset_ids``, those whose queue serves no gold (gold_one_in 0)."""
    if not dataset_ids:
        return set()
    return set(
        QualitySettings.objects.filter(dataset_id__in=dataset_ids, gold_one_in=0).values_list("dataset_id", flat=True)
    )


def _count_by(queryset: QuerySet, fields: tuple[str, str], total) -> dict[tuple, int]:
    rows = queryset.order_by().values(*fields).annotate(n=total).values_list(*fields, "n")
    return {(first, second): n for first, second, n in rows}


@dataclass(frozen=True)
class ProgressAsk:
    """A progress asked for before a claim: the day it counts from, and the read the claim
    may run for it in its own statement (``queue.ClaimRead``; None when there is none)."""

    day_start: datetime
    claim_read: ClaimRead | None


def rater_progress_ask(*, rater, dataset: str, tz: tzinfo | None = None, now: datetime | None = None) -> ProgressAsk:
    """What a caller who claims for ``rater`` and then answers their progress hands the
    claim (``claim_read``) and then ``rater_progress`` (``ask``): on PostgreSQL, once this
    process knows the dataset's id, the claim reads the progress itself, which spares a
    statement and its round trip per rated item."""
    day_start = _day_start(tz, now)
    read = progress_claim_read(rater_id=rater.pk, dataset=dataset, day_start=day_start) if use_postgres_sql() else None
    return ProgressAsk(day_start=day_start, claim_read=read)


def _day_start(tz: tzinfo | None, now: datetime | None) -> datetime:
    now = now if now is not None else timezone.now()
    tz = tz or timezone.get_default_timezone()
    return datetime.combine(now.astimezone(tz).date(), time.min, tzinfo=tz)


def rater_progress(
    *,
    rater,
    dataset: str,
    tz: tzinfo | None = None,
    now: datetime | None = None,
    ask: ProgressAsk | None = None,
    claimed: Assignment | None = None,
) -> RaterProgress:
    """Progress of one rater on one dataset, in indexed reads whose cost does not grow
    with the queue (it grows with the rater's own unfinished pairs): open pairs from the
    per-kind counters, minus the rater's own unfinished pairs (partial index on their
    slots) and skips. On PostgreSQL one prepared statement (``annotation.progress_sql``),
    which sums today's ratings from the rater's quarter-hour tally, else the ORM's reads
    below, which count them by the (rater, created_at) index. "Today" starts at midnight
    in ``tz`` (default: the server's time zone).

    With ``ask`` (``rater_progress_ask``'s, before ``claimed``, the claim it was handed to),
    "today" is the ask's and the progress is the one the claim read, when it read one."""
    day_start = ask.day_start if ask is not None else _day_start(tz, now)
    if use_postgres_sql():
        row = None
        if ask is not None and claimed is not None and claimed.read_row is not None:
            row = progress_after_claim(
                claimed.read_row,
                slot_id=claimed.slot_id,
                lease_expires_at=claimed.lease_expires_at,
                resumed=claimed.resumed,
                leased_at=claimed.leased_at,
            )
        return _rater_progress_postgres(rater=rater, dataset=dataset, day_start=day_start, row=row)
    ds = dataset_get(name=dataset)
    kinds = Qualification.objects.granted_kinds(rater=rater, dataset_id=ds.id)
    # Gold ratings count like any other: nothing on the page tells a gold pair apart.
    ratings_today = (
        Rating.objects.filter(rater=rater, created_at__gte=day_start, pair__dataset=ds).count()
        + GoldRating.objects.filter(
            rater=rater, created_at__gte=day_start, dataset=ds, purpose=GoldPurpose.QUEUE
        ).count()
    )
    left = rater_pairs_left(rater=rater, kinds=kinds, dataset_id=ds.id)
    pairs_left_by_kind = {kind: left.get((ds.id, kind), 0) for kind in kinds}
    held = _oldest_lease(rater=rater, dataset=ds)
    return RaterProgress(
        dataset=ds.name,
        kinds=kinds,
        ratings_today=ratings_today,
        pairs_left=sum(pairs_left_by_kind.values()),
        pairs_left_by_kind=pairs_left_by_kind,
        day_starts_at=day_start,
        held_slot_id=held["id"] if held else None,
        held_until=held["lease_expires_at"] if held else None,
    )


def _rater_progress_postgres(*, rater, dataset: str, day_start: datetime, row: tuple | None) -> RaterProgress:
    """``rater_progress`` in one statement (``annotation.progress_sql``), or from ``row``
    when a claim read it."""
    if row is None:
        row = progress_row(rater_id=rater.pk, dataset=dataset, day_start=day_start)
    if row is None:
        raise NotFound(f"no dataset named {dataset!r}")
    _, ratings_today, kinds, left, held_id, held_until = row
    pairs_left_by_kind = {kind: max(int(n), 0) for kind, n in sorted(zip(kinds, left, strict=True))}
    return RaterProgress(
        dataset=dataset,
        kinds=sorted(kinds),
        ratings_today=int(ratings_today),
        pairs_left=sum(pairs_left_by_kind.values()),
        pairs_left_by_kind=pairs_left_by_kind,
        day_starts_at=day_start,
        held_slot_id=held_id,
        held_until=held_until,
    )


def _oldest_lease(*, rater, dataset) -> dict | None:
    """The rater's oldest held lease in the dataset, ordinary or gold alike: by lease time,
    a tie by id (both kinds draw ids from one sequence), so which table holds it never
    decides which one progress names."""
    fields = ("leased_at", "id", "lease_expires_at")
    leases = [
        RatingSlot.objects.filter(rater=rater, dataset=dataset, state=SlotState.LEASED)
        .order_by(F("leased_at").asc(nulls_first=True), "id")
        .values(*fields)
        .first(),
        GoldLease.objects.filter(rater=rater, dataset=dataset, state=GoldLeaseState.LEASED, gold_pair__active=True)
        .order_by(F("leased_at").asc(nulls_first=True), "id")
        .values(*fields)
        .first(),
    ]
    held = [lease for lease in leases if lease is not None]
    # A lease without a time (none the claim writes) counts as the oldest.
    return (
        min(held, key=lambda lease: (lease["leased_at"] is not None, lease["leased_at"] or 0, lease["id"]))
        if held
        else None
    )


def rater_rating_list(*, rater, dataset: str, before_id: int | None = None, limit: int = 50) -> list[dict]:
    """The rater's own ratings on a dataset, newest first (``before_id`` pages back), gold
    ratings among them like any other (their ids come from the same sequence): dicts of
    id, pair_id, kind, score, time_on_item_ms, time_to_first_move_ms, adjustments,
    created_at."""
    ds = dataset_get(name=dataset)
    fields = ("id", "score", "time_on_item_ms", "time_to_first_move_ms", "adjustments", "created_at")
    ratings = Rating.objects.filter(rater=rater, pair__dataset=ds)
    gold = GoldRating.objects.filter(rater=rater, dataset=ds, purpose=GoldPurpose.QUEUE)
    if before_id is not None:
        ratings, gold = ratings.filter(id__lt=before_id), gold.filter(id__lt=before_id)
    rows = [
        *ratings.order_by("-id").values(*fields, "pair_id", kind=F("pair__kind"))[:limit],
        *gold.order_by("-id").values(*fields, kind=F("gold_pair__kind"), pair_id=F("gold_pair_id"))[:limit],
    ]
    return sorted(rows, key=lambda row: -row["id"])[:limit]


def image_file_get(*, dataset: str, key: str) -> Path:
    """The file of an image of a dataset that keeps its images below ``images_root``.

    Raises NotFound for an unknown dataset or image, a dataset served from a URL prefix,
    a path that leaves the root, or a missing file.
    """
    ds = dataset_get(name=dataset)
    if not ds.images_root:
        raise NotFound(f"dataset {dataset!r} serves its images from {ds.image_url_prefix}, not from this server")
    file_path = Image.objects.filter(dataset=ds, key=key).values_list("file_path", flat=True).first()
    if file_path is None:
        raise NotFound(f"dataset {dataset!r} has no image {key!r}")
    root = Path(ds.images_root).resolve()
    path = (root / file_path).resolve()
    if not path.is_relative_to(root):
        raise NotFound(f"image {key!r} points outside the dataset's images root")
    if not path.is_file():
        raise NotFound(f"image file of {key!r} is missing below {root}")
    return path


def user_get(*, username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user


def qualification_kinds(*, rater, dataset_id: int) -> list[str]:
    """The task kinds ``rater`` may rate in the dataset (its own grants and the global
    ones), sorted."""
    return Qualification.objects.granted_kinds(rater=rater, dataset_id=dataset_id)


def qualification_kinds_by_dataset(*, rater) -> tuple[set[str], dict[int, set[str]]]:
    """In one read: the kinds granted to ``rater`` in every dataset, and dataset id ->
    the kinds granted in that dataset alone."""
    everywhere: set[str] = set()
    per_dataset: dict[int, set[str]] = {}
    for dataset_id, kind in Qualification.objects.filter(rater=rater).values_list("dataset_id", "kind"):
        (everywhere if dataset_id is None else per_dataset.setdefault(dataset_id, set())).add(kind)
    return everywhere, per_dataset


def user_qualification_kinds(*, username: str, dataset: str | None = None) -> list[str]:
    """The task kinds granted to the named user, sorted: with ``dataset``, those granted
    in that dataset alone; without, those granted in every dataset. Raises NotFound for
    an unknown username or dataset."""
    rater = user_get(username=username)
    rows = Qualification.objects.filter(rater=rater)
    rows = rows.filter(dataset__isnull=True) if dataset is None else rows.filter(dataset=dataset_get(name=dataset))
    return sorted(rows.values_list("kind", flat=True))
