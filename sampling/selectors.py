"""Reads for sampling: batches, what a split can give, and a split as arrays for the methods."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.db.models import Avg, Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from annotation.core.errors import NotFound
from annotation.models import METHOD_KIND, Caption, EmbeddingSpace, Image, Pair, RatingStatus, Split, TaskKind
from annotation.serving.pairs import PairSpec, gold_pair_identities
from frontend.selectors import worked_example_pairs
from sampling.embeddings import open_space
from sampling.errors import SamplingInputError
from sampling.methods import strategies
from sampling.models import SamplingBatch

# Keys per query when resolving item keys to ids; stays under SQL parameter limits.
KEY_CHUNK = 5_000


def sampling_batch_list() -> QuerySet[SamplingBatch]:
    return SamplingBatch.objects.select_related("dataset", "split").order_by("-id")


def sampling_batch_get(*, batch_id: int) -> SamplingBatch:
    batch = sampling_batch_list().filter(pk=batch_id).first()
    if batch is None:
        raise NotFound(f"no sampling batch #{batch_id}")
    return batch


def split_get(*, dataset_name: str, split_name: str) -> Split:
    split = Split.objects.select_related("dataset").filter(dataset__name=dataset_name, name=split_name).first()
    if split is None:
        if not Split.objects.filter(dataset__name=dataset_name).exists():
            raise NotFound(f"no dataset named {dataset_name!r} (or it has no splits)")
        names = ", ".join(
            Split.objects.filter(dataset__name=dataset_name).order_by("name").values_list("name", flat=True)
        )
        raise NotFound(f"dataset {dataset_name!r} has no split {split_name!r}; it has: {names}")
    return split


# --- a split as arrays -----------------------------------------------------------------


@dataclass(frozen=True)
class SplitItems:
    """A split's items in id order: row r of the arrays is image_ids[r] / caption_ids[r].

    caption_image: int64 (n_captions,) row of each caption's image.
    """

    image_ids: np.ndarray
    image_keys: list[str]
    caption_ids: np.ndarray
    caption_keys: list[str]
    caption_image: np.ndarray

    @property
    def n_images(self) -> int:
        return len(self.image_ids)

    def image_rows(self, ids: Iterable[int]) -> np.ndarray:
        return _rows_of(self.image_ids, ids)

    def caption_rows(self, ids: Iterable[int]) -> np.ndarray:
        return _rows_of(self.caption_ids, ids)

    def pair_specs(self, method: str, rows: np.ndarray) -> list[PairSpec]:
        """Pairs of rows int64 (m, 2) of one method as specs by item id, in that order:
        (image, image) for SIS, (caption, caption) for STS, (caption, image) for SITS."""
        kind = METHOD_KIND[method]
        first_ids, second_ids = {
            TaskKind.SIS: (self.image_ids, self.image_ids),
            TaskKind.STS: (self.caption_ids, self.caption_ids),
            TaskKind.SITS: (self.caption_ids, self.image_ids),
        }[kind]
        pairs = zip(first_ids[rows[:, 0]].tolist(), second_ids[rows[:, 1]].tolist(), strict=True)
        if kind == TaskKind.SIS:
            return [PairSpec(kind, method, image_a=a, image_b=b) for a, b in pairs]
        if kind == TaskKind.STS:
            return [PairSpec(kind, method, caption_a=a, caption_b=b) for a, b in pairs]
        return [PairSpec(kind, method, caption_a=c, image_a=i) for c, i in pairs]


def _rows_of(sorted_ids: np.ndarray, ids: Iterable[int]) -> np.ndarray:
    """Row of each id in ``sorted_ids``; -1 for an id that is not there."""
    ids = np.fromiter(ids, dtype=np.int64)
    if len(sorted_ids) == 0:
        return np.full(len(ids), -1, dtype=np.int64)
    rows = np.searchsorted(sorted_ids, ids)
    rows = np.minimum(rows, len(sorted_ids) - 1)
    return np.where(sorted_ids[rows] == ids, rows, -1)


def split_items_save(items: SplitItems, path: Path) -> None:
    """Store a split's items as arrays (``.npz``), for a later process to read the same
    rows back (a chord's merge reads the rows its shards searched)."""
    with path.open("wb") as stream:
        np.savez(
            stream,
            image_ids=items.image_ids,
            image_keys=np.array(items.image_keys, dtype=str),
            caption_ids=items.caption_ids,
            caption_keys=np.array(items.caption_keys, dtype=str),
            caption_image=items.caption_image,
        )


def split_items_load(path: Path) -> SplitItems:
    with np.load(path, allow_pickle=False) as stored:
        return SplitItems(
            image_ids=stored["image_ids"],
            image_keys=stored["image_keys"].tolist(),
            caption_ids=stored["caption_ids"],
            caption_keys=stored["caption_keys"].tolist(),
            caption_image=stored["caption_image"],
        )


def split_items(*, split: Split) -> SplitItems:
    images = list(Image.objects.filter(split=split).order_by("id").values_list("id", "key"))
    captions = list(Caption.objects.filter(image__split=split).order_by("id").values_list("id", "key", "image_id"))
    image_ids = np.array([row[0] for row in images], dtype=np.int64)
    caption_ids = np.array([row[0] for row in captions], dtype=np.int64)
    caption_image = _rows_of(image_ids, (row[2] for row in captions))
    return SplitItems(
        image_ids=image_ids,
        image_keys=[row[1] for row in images],
        caption_ids=caption_ids,
        caption_keys=[row[1] for row in captions],
        caption_image=caption_image,
    )


def space_vectors(*, space: EmbeddingSpace, keys: Sequence[str]) -> np.ndarray:
    """The space's vectors for ``keys``, in that order: float32 (len(keys), d), L2-normalized.

    Raises SamplingInputError if the stored files are unreadable or a key has no vector.
    """
    vectors, rows = _open_rows(space, keys)
    if len(rows) == len(vectors) and (rows == np.arange(len(rows))).all():
        # The split is the space, row for row: its file, memory mapped, not a copy (a
        # chord's workers then map that same file).
        return vectors
    return np.asarray(vectors[rows], dtype=np.float32)


def space_check_covers(*, space: EmbeddingSpace, keys: Sequence[str]) -> None:
    """Raise SamplingInputError unless the space has a vector for every key."""
    _open_rows(space, keys)


def _open_rows(space: EmbeddingSpace, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    try:
        vectors, ids = open_space(space.vectors_path, space.ids_path)
    except (OSError, ValueError) as exc:
        raise SamplingInputError(f"embedding space {space.name!r}: its stored files cannot be read ({exc})") from exc
    if len(ids) == len(keys) and ids == list(keys):
        # The split is the space row for row (a dict of 2,000,000 keys takes seconds).
        return vectors, np.arange(len(ids), dtype=np.int64)
    position = {key: row for row, key in enumerate(ids)}
    rows = np.fromiter((position.get(key, -1) for key in keys), dtype=np.int64, count=len(keys))
    missing = np.flatnonzero(rows < 0)
    if len(missing):
        raise SamplingInputError(
            f"embedding space {space.name!r} has no vector for {len(missing)} of the {len(keys)} "
            f"{space.modality}s of the split (e.g. {keys[int(missing[0])]!r}); import embeddings for the whole split"
        )
    return vectors, rows


def queued_pairs(*, split: Split, items: SplitItems) -> dict[str, np.ndarray]:
    """Pairs already in the split, the dataset's worked examples (raters see those
    solved) and its active gold pairs (a rater would meet a gold pair again), which are
    never queued, as rows, per sampling method's orientation."""
    sis = Pair.objects.filter(split=split, kind=TaskKind.SIS).values_list("image_a_id", "image_b_id")
    sts = Pair.objects.filter(split=split, kind=TaskKind.STS).values_list("caption_a_id", "caption_b_id")
    sits = Pair.objects.filter(split=split, kind=TaskKind.SITS).values_list("caption_a_id", "image_a_id")
    examples = [*worked_example_pairs(dataset_id=split.dataset_id), *gold_pair_identities(split.dataset_id)]
    taken = {
        TaskKind.SIS: [*sis.iterator(chunk_size=KEY_CHUNK), *_canonical(examples, TaskKind.SIS, 3, 4)],
        TaskKind.STS: [*sts.iterator(chunk_size=KEY_CHUNK), *_canonical(examples, TaskKind.STS, 1, 2)],
        TaskKind.SITS: [*sits.iterator(chunk_size=KEY_CHUNK), *((e[1], e[3]) for e in examples if e[0] == "SITS")],
    }
    as_rows = {
        TaskKind.SIS: _pair_rows(taken[TaskKind.SIS], items.image_rows, items.image_rows),
        TaskKind.STS: _pair_rows(taken[TaskKind.STS], items.caption_rows, items.caption_rows),
        TaskKind.SITS: _pair_rows(taken[TaskKind.SITS], items.caption_rows, items.image_rows),
    }
    return {str(method): as_rows[kind] for method, kind in METHOD_KIND.items()}


def _canonical(examples, kind: str, first: int, second: int) -> list[tuple[int, int]]:
    """The examples of ``kind`` as (lower id, higher id), as pairs are stored."""
    return [tuple(sorted((e[first], e[second]))) for e in examples if e[0] == kind]


def _pair_rows(pairs, rows_a, rows_b) -> np.ndarray:
    pairs = list(pairs)
    if not pairs:
        return strategies.EMPTY_PAIRS
    out = np.stack([rows_a(p[0] for p in pairs), rows_b(p[1] for p in pairs)], axis=1)
    return out[(out >= 0).all(axis=1)]


def pivots(*, split: Split, items: SplitItems) -> strategies.Pivots:
    """The split's fully rated SIS and STS pairs with the mean of their valid ratings,
    in pair id order, each in its given order (the order a pair list named it in)."""
    rated = (
        Pair.objects.filter(
            split=split,
            kind__in=[TaskKind.SIS, TaskKind.STS],
            ratings_done__gte=F("ratings_required"),
            retired_at__isnull=True,
        )
        .annotate(score=Avg("ratings__score", filter=Q(ratings__status=RatingStatus.VALID)))
        .order_by("id")
        .values_list("kind", "image_a_id", "image_b_id", "caption_a_id", "caption_b_id", "swapped", "score")
    )
    sis, sts = [], []
    for kind, image_a, image_b, caption_a, caption_b, swapped, score in rated:
        a, b = (image_a, image_b) if kind == TaskKind.SIS else (caption_a, caption_b)
        (sis if kind == TaskKind.SIS else sts).append((b, a, score) if swapped else (a, b, score))
    sis_rows = _pair_rows(((a, b) for a, b, _ in sis), items.image_rows, items.image_rows)
    sts_rows = _pair_rows(((a, b) for a, b, _ in sts), items.caption_rows, items.caption_rows)
    if len(sis_rows) != len(sis) or len(sts_rows) != len(sts):
        raise SamplingInputError(f"split {split}: some rated pairs join items of another split")
    return strategies.Pivots(
        sis=sis_rows,
        sis_scores=np.array([score for _, _, score in sis], dtype=np.float64),
        sts=sts_rows,
        sts_scores=np.array([score for _, _, score in sts], dtype=np.float64),
    )


# --- what a split can give -------------------------------------------------------------


@dataclass(frozen=True)
class SpaceInfo:
    name: str
    modality: str
    model_name: str
    dimension: int
    count: int


@dataclass(frozen=True)
class PivotCounts:
    """Rated intramodal pairs of one kind: ``ready`` have all their ratings."""

    ready: int
    total: int


@dataclass
class SplitSummary:
    """What an admin needs to configure a batch for one split."""

    dataset: str
    split: str
    images: int
    captions: int
    spaces: list[SpaceInfo] = field(default_factory=list)
    pivots: dict[str, PivotCounts] = field(default_factory=dict)
    cocaption_pairs: int = 0
    cocaption_cycle_pairs: int = 0
    queued: dict[str, int] = field(default_factory=dict)

    @property
    def ready_pivots(self) -> int:
        return sum(counts.ready for counts in self.pivots.values())

    def spaces_of(self, modality: str) -> list[SpaceInfo]:
        return [space for space in self.spaces if space.modality == modality]

    def capacity(
        self, method: str, *, k: int, n_spaces: int, cocaption: str = strategies.COCAPTION_CYCLE
    ) -> tuple[int, bool]:
        """(pairs the method can give at most, whether that number is exact).

        kNN methods can only be bounded before the search: n * k per space, at most all
        pairs; neighbour lists overlap, so the search usually gives fewer.
        """
        all_pairs = self.images * (self.images - 1) // 2
        if method in (strategies.I2I_CSIM, strategies.C2C_ISIM):
            return min(all_pairs, self.images * k * n_spaces), False
        if method == strategies.C2C_COCAPTION and cocaption == strategies.COCAPTION_CYCLE:
            # Queued co-caption pairs may or may not lie on the cycles drawn.
            return self.cocaption_cycle_pairs, not self.queued.get("cocaption", 0)
        if method == strategies.C2C_COCAPTION:
            return self.cocaption_pairs - self.queued.get("cocaption", 0), True
        if method == strategies.C2I_ORIGINAL:
            return self.captions - self.queued.get("original", 0), True
        # Each pivot gives at most one caption-image pair.
        return self.ready_pivots, False


def split_summary(*, split: Split) -> SplitSummary:
    sizes = Image.objects.filter(split=split).annotate(n=Count("captions")).values_list("n", flat=True)
    sizes = list(sizes)
    pairs = Pair.objects.filter(split=split)
    pivot_counts = {}
    for kind in (TaskKind.SIS, TaskKind.STS):
        of_kind = pairs.filter(kind=kind)
        pivot_counts[str(kind)] = PivotCounts(
            ready=of_kind.filter(ratings_done__gte=F("ratings_required")).count(), total=of_kind.count()
        )
    return SplitSummary(
        dataset=split.dataset.name,
        split=split.name,
        images=len(sizes),
        captions=sum(sizes),
        spaces=[
            SpaceInfo(s.name, s.modality, s.model_name, s.dimension, s.count)
            for s in EmbeddingSpace.objects.filter(dataset=split.dataset_id).order_by("modality", "name")
        ],
        pivots=pivot_counts,
        cocaption_pairs=sum(math.comb(n, 2) for n in sizes),
        cocaption_cycle_pairs=sum(n if n >= 3 else math.comb(n, 2) for n in sizes),
        queued=_taken_counts(split, pairs),
    )


def _taken_counts(split: Split, pairs) -> dict[str, int]:
    """Co-caption and original pairs no batch can queue again: queued ones, and worked
    examples (sampling treats those as taken; see queued_pairs)."""
    examples = worked_example_pairs(dataset_id=split.dataset_id)
    caption_ids = {e[1] for e in examples} | {e[2] for e in examples}
    image_of = dict(Caption.objects.filter(id__in=caption_ids, image__split=split).values_list("id", "image_id"))
    return {
        "cocaption": pairs.filter(kind=TaskKind.STS, caption_a__image_id=F("caption_b__image_id")).count()
        + sum(
            1 for e in examples if e[0] == TaskKind.STS and e[1] in image_of and image_of[e[1]] == image_of.get(e[2])
        ),
        "original": pairs.filter(kind=TaskKind.SITS, caption_a__image_id=F("image_a_id")).count()
        + sum(1 for e in examples if e[0] == TaskKind.SITS and e[1] in image_of and image_of[e[1]] == e[3]),
    }


def split_summaries() -> list[SplitSummary]:
    return [
        split_summary(split=split)
        for split in Split.objects.select_related("dataset").order_by("dataset__name", "name")
    ]


def sampling_batches_with_rating_counts(queryset: QuerySet[SamplingBatch]) -> QuerySet[SamplingBatch]:
    """Batches with how far raters are: ``pairs_total``, ``pairs_complete`` (all their
    ratings), ``ratings_given`` and ``ratings_wanted`` (slots). One grouped join over the
    batches' pairs (pair_batch_method_idx)."""
    return queryset.select_related("dataset", "split").annotate(
        pairs_total=Count("pairs"),
        pairs_complete=Count("pairs", filter=Q(pairs__ratings_done__gte=F("pairs__ratings_required"))),
        ratings_given=Coalesce(Sum("pairs__ratings_done"), 0),
        ratings_wanted=Coalesce(Sum("pairs__ratings_required"), 0),
    )
