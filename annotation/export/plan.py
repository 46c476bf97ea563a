"""Planning an export: the checked request (dataset, splits, formats), the destination
rules, and the reads the export makes (complete pair counts, pairs left out, sampling
batches, and the rating rows streamed from a server-side cursor)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Case, Count, F, Q, QuerySet, Sum, When

from annotation.catalog.selectors import PAIR_ITEM_KEYS
from annotation.core.cxc import KINDS
from annotation.core.errors import NotFound
from annotation.export.formats import FORMATS, MANIFEST, ExportError, ExportFormatError, file_stem, parse_formats
from annotation.models import Dataset, Pair, Rating, RatingStatus, Split
from sampling.models import SamplingBatch

# Rows fetched per round trip from the server-side cursor.
FETCH_ROWS = 10_000
# The same item keys, reached from a rating.
_ITEM_KEYS = {kind: tuple(f"pair__{column}" for column in columns) for kind, columns in PAIR_ITEM_KEYS.items()}


@dataclass(frozen=True)
class ExportPlan:
    dataset: Dataset
    splits: list[Split]
    formats: list[str]


def export_plan(
    *, dataset_name: str, splits: Sequence[str] | None = None, formats: Sequence[str] | str = FORMATS
) -> ExportPlan:
    """Check an export request: the dataset, its splits (default: every split that has
    pairs) and the formats. Raises NotFound / ExportError naming the problem."""
    dataset = Dataset.objects.filter(name=dataset_name).first()
    if dataset is None:
        raise NotFound(f"no dataset named {dataset_name!r}")
    try:
        chosen_formats = parse_formats(formats if isinstance(formats, str) else list(formats))
    except ExportFormatError as exc:
        raise ExportError(str(exc)) from exc
    available = {split.name: split for split in Split.objects.filter(dataset=dataset).order_by("name")}
    if splits:
        names = list(dict.fromkeys(name.strip() for name in splits if name.strip()))
        unknown = [name for name in names if name not in available]
        if unknown:
            raise ExportError(
                f"dataset {dataset_name!r} has no split {unknown[0]!r}; its splits: {', '.join(available) or 'none'}"
            )
    else:
        with_pairs = set(Pair.objects.filter(dataset=dataset).values_list("split__name", flat=True).distinct())
        names = [name for name in available if name in with_pairs]
        if not names:
            raise ExportError(f"dataset {dataset_name!r} has no pairs to export")
    for name in names:
        try:
            file_stem("STS", name)
        except ExportFormatError as exc:
            raise ExportError(str(exc)) from exc
    return ExportPlan(dataset=dataset, splits=[available[name] for name in names], formats=chosen_formats)


def destination_check(out: Path, overwrite: bool) -> None:
    """Raise ExportError unless ``out`` is missing, an empty folder, or (with
    ``overwrite``) a folder holding an earlier export."""
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise ExportError(f"{out} is not empty; choose a new folder, or overwrite to replace an earlier export")
        if not (out / MANIFEST).is_file():
            raise ExportError(f"{out} is not empty and holds no earlier export ({MANIFEST}); it is left alone")


def complete_pair_counts(plan: ExportPlan) -> dict[tuple[int, str], int]:
    """``{(split id, task): complete pairs}`` over the plan's splits (retired pairs are
    never exported, even with all their ratings)."""
    rows = (
        Pair.objects.filter(
            dataset=plan.dataset,
            split__in=plan.splits,
            kind__in=KINDS,
            ratings_done=F("ratings_required"),
            retired_at__isnull=True,
        )
        .order_by()
        .values("split_id", "kind")
        .annotate(n=Count("id"))
    )
    return {(row["split_id"], row["kind"]): row["n"] for row in rows}


def incomplete_counts(plan: ExportPlan) -> dict:
    """Pairs left out because some of their ratings are still missing, per split, task
    and method, with the ratings they hold so far (retired pairs: see retired_counts)."""
    rows = (
        Pair.objects.filter(
            dataset=plan.dataset,
            split__in=plan.splits,
            kind__in=KINDS,
            ratings_done__lt=F("ratings_required"),
            retired_at__isnull=True,
        )
        .order_by()
        .values("split__name", "kind", "sampling_method")
        .annotate(pairs=Count("id"), ratings=Sum("ratings_done"))
    )
    out: dict = {split.name: {} for split in plan.splits}
    for row in sorted(rows, key=lambda r: (r["split__name"], r["kind"], r["sampling_method"])):
        task = out[row["split__name"]].setdefault(row["kind"], {})
        task[row["sampling_method"]] = {"pairs": row["pairs"], "ratings": row["ratings"] or 0}
    return out


def retired_counts(plan: ExportPlan) -> dict:
    """Pairs left out because an admin retired them, per split and task."""
    rows = (
        Pair.objects.filter(dataset=plan.dataset, split__in=plan.splits, kind__in=KINDS, retired_at__isnull=False)
        .order_by()
        .values("split__name", "kind")
        .annotate(pairs=Count("id"))
    )
    out: dict = {split.name: {} for split in plan.splits}
    for row in rows:
        out[row["split__name"]][row["kind"]] = row["pairs"]
    return out


def sampling_batches(plan: ExportPlan) -> QuerySet[SamplingBatch]:
    """The sampling batches of the plan's splits, with their split; not those of failures
    queued for review (the export is the CxC tasks')."""
    batches = SamplingBatch.objects.filter(dataset=plan.dataset, split__in=plan.splits, review_queue__isnull=True)
    return batches.select_related("split")


def rating_rows(dataset: Dataset, split: Split, task: str) -> Iterator[tuple]:
    """Valid ratings of the complete pairs of one split and task, ordered by pair, as tuples
    (pair id, ratings required, batch id, method, item1 key, item2 key, rater id, score,
    time on item ms), from a server-side cursor on PostgreSQL. The items come in the
    order the pair was sampled or uploaded in (stored lower id first, ``swapped``)."""
    first, second = _ITEM_KEYS[task]
    swapped = Q(pair__swapped=True)
    return (
        Rating.objects.filter(
            status=RatingStatus.VALID,
            pair__dataset=dataset,
            pair__split=split,
            pair__kind=task,
            pair__ratings_done=F("pair__ratings_required"),
            pair__retired_at__isnull=True,
        )
        .order_by("pair_id", "id")
        .annotate(
            item1=Case(When(swapped, then=F(second)), default=F(first)),
            item2=Case(When(swapped, then=F(first)), default=F(second)),
        )
        .values_list(
            "pair_id",
            "pair__ratings_required",
            "pair__batch_id",
            "pair__sampling_method",
            "item1",
            "item2",
            "rater_id",
            "score",
            "time_on_item_ms",
        )
        .iterator(chunk_size=FETCH_ROWS)
    )
