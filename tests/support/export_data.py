"""Rated datasets for the export tests, built through the real services: pairs by
``pairs_create_bulk``, ratings by the rating service."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rest_framework.test import APIClient

from annotation.catalog.services import dataset_import_karpathy
from annotation.models import Caption, Image, Pair, SamplingMethod, TaskKind
from annotation.serving.pairs import PairSpec, pairs_create_bulk
from tests.factories import SamplingBatchFactory, SplitFactory, UserFactory, make_items
from tests.support.rating_support import rate_pair


@dataclass
class RatedDataset:
    dataset: object
    split: object
    raters: list
    complete: list[Pair]
    incomplete: list[Pair]


def _specs(images: list[Image], captions_of: dict[int, list[Caption]]) -> list[PairSpec]:
    """Pairs of every CxC method over the given images (each with at least four captions)."""
    specs = []
    n = len(images)
    for i, image in enumerate(images):
        own = captions_of[image.id]
        following = images[(i + 1) % n]
        after_next = images[(i + 2) % n]
        if i % 2 == 0:
            specs.append(PairSpec(TaskKind.STS, SamplingMethod.C2C_COCAPTION, own[0].id, own[1].id))
        else:
            specs.append(PairSpec(TaskKind.STS, SamplingMethod.C2C_ISIM, own[0].id, captions_of[following.id][2].id))
        specs.append(PairSpec(TaskKind.SIS, SamplingMethod.I2I_CSIM, image_a=image.id, image_b=following.id))
        if i % 2 == 0:
            specs.append(PairSpec(TaskKind.SITS, SamplingMethod.C2I_ORIGINAL, caption_a=own[3].id, image_a=image.id))
        else:
            specs.append(
                PairSpec(TaskKind.SITS, SamplingMethod.C2I_INTRASIM, caption_a=own[3].id, image_a=after_next.id)
            )
    return specs


def make_raters(n: int) -> list:
    # No password: hashing one per rater would dominate the tests' time.
    return [UserFactory(roles=["rater"], password=None) for _ in range(n)]


def build_rated(
    *,
    dataset,
    split,
    images: list[Image],
    raters: list | None = None,
    n_raters: int = 8,
    incomplete_every: int = 7,
    seed: int = 0,
) -> RatedDataset:
    """Queue pairs of all five methods over ``images`` in one batch and rate them with
    five of ``n_raters`` raters each (random continuous scores, per-rater bias); every
    ``incomplete_every``-th pair keeps only three ratings."""
    rng = np.random.default_rng(seed)
    captions_of: dict[int, list[Caption]] = {}
    for caption in Caption.objects.filter(image__in=images).order_by("image_id", "id"):
        captions_of.setdefault(caption.image_id, []).append(caption)
    batch = SamplingBatchFactory(
        dataset=dataset,
        split=split,
        methods={method: None for method in SamplingMethod.values if method != SamplingMethod.UPLOADED},
        ratings_per_pair=5,
    )
    pairs_create_bulk(batch=batch, specs=_specs(images, captions_of))
    raters = raters if raters is not None else make_raters(n_raters)
    n_raters = len(raters)
    bias = rng.normal(0.0, 0.4, size=n_raters)
    complete, incomplete = [], []
    for position, pair in enumerate(Pair.objects.filter(batch=batch).order_by("id")):
        chosen = rng.choice(n_raters, size=5, replace=False)
        truth = rng.uniform(0.5, 4.5)
        scores = np.clip(truth + bias[chosen] + rng.normal(0.0, 0.5, size=5), 0.0, 5.0)
        times = rng.integers(3_000, 60_000, size=5)
        if position % incomplete_every == incomplete_every - 1:
            rate_pair(pair, scores[:3], raters=[raters[i] for i in chosen[:3]], times_ms=times[:3])
            incomplete.append(pair)
        else:
            rate_pair(pair, scores, raters=[raters[i] for i in chosen], times_ms=times)
            complete.append(pair)
    return RatedDataset(dataset=dataset, split=split, raters=raters, complete=complete, incomplete=incomplete)


def rated_factory_dataset(*, n_images: int = 12, seed: int = 0, split=None, raters=None) -> RatedDataset:
    """A small rated dataset made with the factories (COCO-style keys)."""
    split = split or SplitFactory()
    images, _ = make_items(split=split, n_images=n_images, captions_per_image=5)
    return build_rated(dataset=split.dataset, split=split, images=images, seed=seed, raters=raters)


def rated_coco_mini(coco_mini, *, n_images: int = 40, seed: int = 0) -> RatedDataset:
    """The real coco_mini photos and captions, imported with CxC keys, rated."""
    summary = dataset_import_karpathy(
        path=coco_mini / "dataset.json",
        name="coco-mini",
        image_url_prefix="https://images.example.org/",
        key_prefix="COCO_val2014",
    )
    images = list(Image.objects.filter(dataset_id=summary.dataset_id).order_by("id")[:n_images])
    return build_rated(dataset=images[0].dataset, split=images[0].split, images=images, seed=seed)


def client_for(*roles):
    client = APIClient()
    client.force_authenticate(UserFactory(roles=list(roles), password=None))
    return client


def start_export(client, payload, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post("/api/exports/", payload, format="json")
