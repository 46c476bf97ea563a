"""Reads of people: a user by name, the kinds a rater is qualified for."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from annotation.catalog.selectors import dataset_get
from annotation.core.errors import NotFound
from annotation.models import (
    Qualification,
)


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
