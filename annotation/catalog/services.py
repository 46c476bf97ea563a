"""Writes for datasets, items and embedding spaces (their imports; the job row they run in
is ``annotation.runs.jobs``').

Every service is keyword-only and atomic: on bad input it raises a DomainError naming
the problem and leaves the database (and the data folder) as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from annotation.catalog.image_files import read_image_sizes
from annotation.catalog.karpathy import FieldLimits, KarpathyError, parse_karpathy
from annotation.core.errors import DatasetImportError, NotFound
from annotation.core.progress import Progress, no_progress
from annotation.models import (
    Caption,
    Dataset,
    EmbeddingSpace,
    Image,
    Modality,
    Split,
)
from sampling.embeddings import (
    EmbeddingError,
    check_rows_match_ids,
    load_vectors,
    read_ids,
    write_ids,
    write_normalized,
)

logger = logging.getLogger(__name__)

BULK_BATCH = 5_000


@dataclass(frozen=True)
class KarpathyImportSummary:
    dataset_id: int
    splits: dict[str, int]
    images: int
    captions: int


def dataset_import_karpathy(
    *,
    path: str | Path,
    name: str,
    images_root: str = "",
    image_url_prefix: str = "",
    splits: Sequence[str] | None = None,
    key_prefix: str | None = None,
    description: str = "",
    progress: Progress = no_progress,
) -> KarpathyImportSummary:
    """Import images and captions of the given splits from Karpathy JSON.

    A new dataset is created, or new splits are added to an existing one (an existing
    split is refused). With ``images_root`` every image file must exist below it, and
    its size is recorded; with ``image_url_prefix`` files are not checked.
    """
    if not images_root and not image_url_prefix:
        raise DatasetImportError("give the images: an images root folder or an image URL prefix")
    if images_root and image_url_prefix:
        raise DatasetImportError("give either an images root folder or an image URL prefix, not both")
    progress(0, 0, "reading JSON")
    try:
        records = parse_karpathy(
            path, splits=list(splits) if splits else None, key_prefix=key_prefix, limits=karpathy_limits()
        )
    except KarpathyError as exc:
        raise DatasetImportError(str(exc)) from exc

    sizes: dict[str, tuple[int, int]] = {}
    if images_root:
        root = Path(images_root).resolve()
        if not root.is_dir():
            raise DatasetImportError(f"images root {root} is not a folder")
        sizes = read_image_sizes(root, records, progress)
        images_root = str(root)

    with transaction.atomic():
        dataset = _dataset_for_import(
            name=name, description=description, images_root=images_root, image_url_prefix=image_url_prefix
        )
        split_names = sorted({r.split for r in records})
        _check_items_are_new(dataset, split_names, records)
        split_ids = {s: Split.objects.create(dataset=dataset, name=s).id for s in split_names}
        _write_items(dataset, split_ids, records, sizes, progress)
    counts = {s: sum(1 for r in records if r.split == s) for s in split_names}
    logger.info("imported %s: %s", name, counts)
    return KarpathyImportSummary(
        dataset_id=dataset.id,
        splits=counts,
        images=len(records),
        captions=sum(len(r.captions) for r in records),
    )


def karpathy_limits() -> FieldLimits:
    """The longest values a Karpathy import stores: the settings' caption and file name
    limits, and what the key and split name columns hold."""
    return FieldLimits(
        caption_chars=settings.UPLOAD_MAX_CAPTION_CHARS,
        filename_chars=settings.UPLOAD_MAX_FILENAME_CHARS,
        key_chars=min(Image._meta.get_field("key").max_length, Caption._meta.get_field("key").max_length),
        split_chars=Split._meta.get_field("name").max_length,
    )


def _dataset_for_import(*, name: str, description: str, images_root: str, image_url_prefix: str) -> Dataset:
    """The dataset to add splits to: a new one, or an existing one with the same image source."""
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        return Dataset.objects.create(
            name=name, description=description, images_root=images_root, image_url_prefix=image_url_prefix
        )
    if (dataset.images_root, dataset.image_url_prefix) != (images_root, image_url_prefix):
        raise DatasetImportError(
            f"dataset {name!r} exists with another image source "
            f"({dataset.images_root or dataset.image_url_prefix}); import into a new dataset"
        )
    return dataset


def _check_items_are_new(dataset: Dataset, split_names: list[str], records) -> None:
    """Refuse splits, images or captions the dataset already has."""
    name = dataset.name
    existing = set(Split.objects.filter(dataset=dataset, name__in=split_names).values_list("name", flat=True))
    if existing:
        raise DatasetImportError(f"dataset {name!r} already has split(s) {', '.join(sorted(existing))}")
    known_keys = _existing_keys(dataset, Image, [r.key for r in records])
    if known_keys:
        raise DatasetImportError(f"dataset {name!r} already has image {sorted(known_keys)[0]!r} in another split")
    known_keys = _existing_keys(dataset, Caption, [c.key for r in records for c in r.captions])
    if known_keys:
        raise DatasetImportError(f"dataset {name!r} already has caption {sorted(known_keys)[0]!r}")


def _write_items(dataset: Dataset, split_ids: dict[str, int], records, sizes, progress: Progress) -> None:
    """Images and their captions in chunks of BULK_BATCH images (inside the caller's transaction)."""
    total = len(records) + sum(len(r.captions) for r in records)
    done = 0
    for start in range(0, len(records), BULK_BATCH):
        chunk = records[start : start + BULK_BATCH]
        images = Image.objects.bulk_create(
            [
                Image(
                    dataset=dataset,
                    split_id=split_ids[r.split],
                    key=r.key,
                    file_path=r.file_path,
                    cocoid=r.cocoid,
                    width=sizes.get(r.key, (None, None))[0],
                    height=sizes.get(r.key, (None, None))[1],
                )
                for r in chunk
            ]
        )
        captions = [
            Caption(dataset=dataset, image_id=image.id, key=c.key, sentid=c.sentid, text=c.text)
            for image, r in zip(images, chunk, strict=True)
            for c in r.captions
        ]
        Caption.objects.bulk_create(captions, batch_size=BULK_BATCH)
        done += len(chunk) + len(captions)
        progress(done, total, "writing images and captions")


def _existing_keys(dataset: Dataset, model, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), BULK_BATCH):
        found.update(
            model.objects.filter(dataset=dataset, key__in=keys[start : start + BULK_BATCH]).values_list(
                "key", flat=True
            )
        )
    return found


def embedding_space_import(
    *,
    dataset_name: str,
    space_name: str,
    modality: str,
    vectors_path: str | Path,
    ids_path: str | Path,
    model_name: str = "",
    progress: Progress = no_progress,
) -> EmbeddingSpace:
    """Validate vectors and ids and store them as an L2-normalized float32 space.

    Checks: a 2-D float array, as many rows as ids, no duplicate or blank id, every id
    an item of that modality in the dataset, all values finite, no zero row.
    """
    if modality not in Modality.values:
        raise DatasetImportError(f"modality must be one of {', '.join(Modality.values)}, got {modality!r}")
    dataset = Dataset.objects.filter(name=dataset_name).first()
    if dataset is None:
        raise NotFound(f"no dataset named {dataset_name!r}")
    if EmbeddingSpace.objects.filter(dataset=dataset, name=space_name).exists():
        raise DatasetImportError(f"dataset {dataset_name!r} already has an embedding space named {space_name!r}")
    progress(0, 0, "reading vectors and ids")
    try:
        vectors = load_vectors(vectors_path)
        ids = read_ids(ids_path)
        check_rows_match_ids(vectors, ids, str(vectors_path), str(ids_path))
    except EmbeddingError as exc:
        raise DatasetImportError(str(exc)) from exc

    item_model = Image if modality == Modality.IMAGE else Caption
    known = _existing_keys(dataset, item_model, ids)
    if len(known) != len(ids):
        unknown = [key for key in ids if key not in known]
        shown = ", ".join(repr(k) for k in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise DatasetImportError(
            f"{ids_path}: {len(unknown)} id(s) are not {modality}s of dataset {dataset_name!r}: {shown}{more}"
        )

    folder = Path(settings.DATA_DIR) / "embeddings" / dataset.name
    vectors_out = folder / f"{space_name}.npy"
    ids_out = folder / f"{space_name}.ids.txt"
    progress(0, len(ids), "normalizing vectors")
    try:
        with transaction.atomic():
            space = EmbeddingSpace.objects.create(
                dataset=dataset,
                name=space_name,
                modality=modality,
                model_name=model_name,
                dimension=int(vectors.shape[1]),
                count=int(vectors.shape[0]),
                vectors_path=str(vectors_out),
                ids_path=str(ids_out),
            )
            write_normalized(vectors, ids, vectors_out)
            write_ids(ids, ids_out)
    except EmbeddingError as exc:
        _remove(vectors_out, ids_out)
        raise DatasetImportError(f"{vectors_path}: {exc}") from exc
    except BaseException:
        _remove(vectors_out, ids_out)
        raise
    progress(len(ids), len(ids), "done")
    return space


def _remove(*paths: Path) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
        if path.parent.is_dir() and not any(path.parent.iterdir()):
            path.parent.rmdir()
