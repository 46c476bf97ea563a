"""Builders for sampling tests: a split with items and real stored embedding spaces."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from annotation.catalog.services import embedding_space_import
from annotation.models import Caption, Dataset, Image, Pair, Split
from tests.factories import DatasetFactory, SplitFactory


@dataclass
class BuiltSplit:
    dataset: Dataset
    split: Split
    images: list[Image]
    captions: list[Caption]

    def image_key(self, row: int) -> str:
        return self.images[row].key

    def caption_key(self, row: int) -> str:
        return self.captions[row].key


def unit_circle(degrees) -> np.ndarray:
    radians = np.deg2rad(np.asarray(degrees, dtype=np.float64))
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


def build_split(
    folder: Path,
    *,
    n_images: int,
    captions_per_image: int,
    image_spaces: dict[str, np.ndarray] | None = None,
    caption_spaces: dict[str, np.ndarray] | None = None,
    dataset: Dataset | None = None,
    split_name: str = "val",
    first_id: int = 1,
) -> BuiltSplit:
    """Images ``COCO_val2014_<n>.jpg`` with captions ``COCO_val2014:sentid:<n>`` in row order
    (caption row r belongs to image row r // captions_per_image), and the given spaces
    imported through the real embedding import (rows in item order)."""
    dataset = dataset or DatasetFactory()
    split = SplitFactory(dataset=dataset, name=split_name)
    images = Image.objects.bulk_create(
        [
            Image(
                dataset=dataset,
                split=split,
                key=f"COCO_val2014_{first_id + i:012d}.jpg",
                file_path=f"val2014/COCO_val2014_{first_id + i:012d}.jpg",
                cocoid=first_id + i,
            )
            for i in range(n_images)
        ]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                image=images[row // captions_per_image],
                key=f"COCO_val2014:sentid:{first_id * 10 + row}",
                sentid=first_id * 10 + row,
                text=f"caption {row} of image {row // captions_per_image}",
            )
            for row in range(n_images * captions_per_image)
        ]
    )
    folder.mkdir(parents=True, exist_ok=True)
    for modality, spaces, items in (("image", image_spaces, images), ("caption", caption_spaces, captions)):
        for name, vectors in (spaces or {}).items():
            vectors_path = folder / f"{dataset.name}-{name}.npy"
            ids_path = folder / f"{dataset.name}-{name}.txt"
            np.save(vectors_path, np.asarray(vectors, dtype=np.float32))
            ids_path.write_text("".join(f"{item.key}\n" for item in items[: len(vectors)]), encoding="utf-8")
            embedding_space_import(
                dataset_name=dataset.name,
                space_name=name,
                modality=modality,
                vectors_path=vectors_path,
                ids_path=ids_path,
            )
    return BuiltSplit(dataset=dataset, split=split, images=list(images), captions=list(captions))


def random_unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def pair_keys(batch) -> set[tuple[str, str, str, str]]:
    """(kind, method, key a, key b) of every pair the batch queued; SITS as (caption, image)."""
    keys = set()
    pairs = Pair.objects.filter(batch=batch).select_related("caption_a", "caption_b", "image_a", "image_b")
    for pair in pairs:
        if pair.kind == "SIS":
            keys.add((pair.kind, pair.sampling_method, pair.image_a.key, pair.image_b.key))
        elif pair.kind == "STS":
            keys.add((pair.kind, pair.sampling_method, pair.caption_a.key, pair.caption_b.key))
        else:
            keys.add((pair.kind, pair.sampling_method, pair.caption_a.key, pair.image_a.key))
    return keys


@pytest.fixture
def make_split(tmp_path):
    def make(**kwargs) -> BuiltSplit:
        return build_split(tmp_path / "vectors", **kwargs)

    return make


# Four images on the unit circle, 0 near 3 and 1 near 2, with two captions each whose
# captions cluster the other way (images 0 with 1, 2 with 3): searching through one
# modality or the other picks different pairs, and every pair can be checked by hand.
SMALL_IMAGES = unit_circle([0, 90, 100, 10])
SMALL_CAPTIONS = unit_circle([0, 10, 20, 30, 170, 180, 190, 200])


@pytest.fixture
def small(make_split):
    return make_split(
        n_images=4, captions_per_image=2, image_spaces={"img": SMALL_IMAGES}, caption_spaces={"txt": SMALL_CAPTIONS}
    )
