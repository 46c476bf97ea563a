"""Reads: querysets with the joins they need."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery

from annotation.errors import NotFound
from annotation.models import Caption, Dataset, EmbeddingSpace, Image, Job, Split


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


def embedding_space_get(*, dataset: Dataset, name: str) -> EmbeddingSpace:
    space = EmbeddingSpace.objects.filter(dataset=dataset, name=name).first()
    if space is None:
        names = ", ".join(embedding_space_list(dataset=dataset).values_list("name", flat=True))
        raise NotFound(f"dataset {dataset.name!r} has no embedding space {name!r}; it has: {names or 'none'}")
    return space
