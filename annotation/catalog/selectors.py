"""Reads of the catalog: datasets, splits, items, embedding spaces, image files."""

from __future__ import annotations

from pathlib import Path

from django.db.models import Avg, Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery

from annotation.core.errors import NotFound
from annotation.models import (
    Caption,
    Dataset,
    EmbeddingSpace,
    Image,
    ObjectAnnotation,
    Pair,
    RatingStatus,
    Split,
)


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


def split_caption_texts(*, split: Split) -> list[str]:
    """The text of each of the split's captions, in the order of ``split_item_keys``."""
    return list(Caption.objects.filter(image__split=split).order_by("id").values_list("text", flat=True))


def split_image_objects(*, split: Split) -> tuple[dict[str, tuple[int, int]], dict[str, list[tuple[str, float]]]]:
    """(image key -> (width, height) of the images whose size is known, image key ->
    [(category, area in square pixels)] of the images with annotated objects), read in
    one pass each, objects in id order."""
    sizes = {
        key: (width, height)
        for key, width, height in Image.objects.filter(split=split, width__gt=0, height__gt=0)
        .order_by()
        .values_list("key", "width", "height")
    }
    objects: dict[str, list[tuple[str, float]]] = {}
    rows = (
        ObjectAnnotation.objects.filter(image__split=split)
        .order_by("id")
        .values_list("image__key", "category", "area")
        .iterator(chunk_size=5000)
    )
    for key, category, area in rows:
        objects.setdefault(key, []).append((category, area))
    return sizes, objects


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
