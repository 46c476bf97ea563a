"""Reads: querysets with the joins they need."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery

from annotation.errors import NotFound
from annotation.models import Caption, Dataset, EmbeddingSpace, Image, Job


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
