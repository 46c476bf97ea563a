"""Writes for datasets, items, embedding spaces, pairs and background jobs.

Every service is keyword-only and atomic: on bad input it raises a DomainError naming
the problem and leaves the database (and the data folder) as it was.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from annotation.errors import DatasetImportError, NotFound
from annotation.karpathy import KarpathyError, parse_karpathy
from annotation.models import (
    Caption,
    Dataset,
    EmbeddingSpace,
    Image,
    Job,
    JobStatus,
    Modality,
    Pair,
    RatingSlot,
    SlotState,
    Split,
)
from annotation.queue import queue_counters_add
from sampling.embeddings import (
    EmbeddingError,
    check_rows_match_ids,
    load_vectors,
    read_ids,
    write_ids,
    write_normalized,
)

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
BULK_BATCH = 5_000


def _no_progress(done: int, total: int, message: str) -> None:
    pass


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
    progress: Progress = _no_progress,
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
        records = parse_karpathy(path, splits=list(splits) if splits else None, key_prefix=key_prefix)
    except KarpathyError as exc:
        raise DatasetImportError(str(exc)) from exc

    sizes: dict[str, tuple[int, int]] = {}
    if images_root:
        root = Path(images_root).resolve()
        if not root.is_dir():
            raise DatasetImportError(f"images root {root} is not a folder")
        sizes = _read_image_sizes(root, records, progress)
        images_root = str(root)

    total = len(records) + sum(len(r.captions) for r in records)
    with transaction.atomic():
        dataset = Dataset.objects.filter(name=name).first()
        if dataset is None:
            dataset = Dataset.objects.create(
                name=name, description=description, images_root=images_root, image_url_prefix=image_url_prefix
            )
        elif (dataset.images_root, dataset.image_url_prefix) != (images_root, image_url_prefix):
            raise DatasetImportError(
                f"dataset {name!r} exists with another image source "
                f"({dataset.images_root or dataset.image_url_prefix}); import into a new dataset"
            )
        split_names = sorted({r.split for r in records})
        existing = set(Split.objects.filter(dataset=dataset, name__in=split_names).values_list("name", flat=True))
        if existing:
            raise DatasetImportError(f"dataset {name!r} already has split(s) {', '.join(sorted(existing))}")
        known_keys = _existing_keys(dataset, Image, [r.key for r in records])
        if known_keys:
            raise DatasetImportError(f"dataset {name!r} already has image {sorted(known_keys)[0]!r} in another split")
        caption_keys = [c.key for r in records for c in r.captions]
        known_keys = _existing_keys(dataset, Caption, caption_keys)
        if known_keys:
            raise DatasetImportError(f"dataset {name!r} already has caption {sorted(known_keys)[0]!r}")

        split_ids = {s: Split.objects.create(dataset=dataset, name=s).id for s in split_names}
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
    counts = {s: sum(1 for r in records if r.split == s) for s in split_names}
    logger.info("imported %s: %s", name, counts)
    return KarpathyImportSummary(
        dataset_id=dataset.id,
        splits=counts,
        images=len(records),
        captions=len(caption_keys),
    )


def _existing_keys(dataset: Dataset, model, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), BULK_BATCH):
        found.update(
            model.objects.filter(dataset=dataset, key__in=keys[start : start + BULK_BATCH]).values_list(
                "key", flat=True
            )
        )
    return found


def _read_image_sizes(root: Path, records, progress: Progress) -> dict[str, tuple[int, int]]:
    """Check every file exists and read its size from the header (no full decode)."""
    missing = [r.file_path for r in records if not (root / r.file_path).is_file()]
    if missing:
        shown = ", ".join(missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise DatasetImportError(f"{len(missing)} image file(s) missing below {root}: {shown}{more}")
    sizes = {}
    for position, record in enumerate(records):
        try:
            with PILImage.open(root / record.file_path) as img:
                sizes[record.key] = img.size
        except (UnidentifiedImageError, OSError) as exc:
            raise DatasetImportError(f"{root / record.file_path}: not a readable image ({exc})") from exc
        if position % 1000 == 0:
            progress(position, len(records), "checking image files")
    return sizes


def embedding_space_import(
    *,
    dataset_name: str,
    space_name: str,
    modality: str,
    vectors_path: str | Path,
    ids_path: str | Path,
    model_name: str = "",
    progress: Progress = _no_progress,
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


# --- pairs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PairSpec:
    """One pair to queue, by item ids. Order does not matter; it is made canonical."""

    kind: str
    sampling_method: str
    caption_a: int | None = None
    caption_b: int | None = None
    image_a: int | None = None
    image_b: int | None = None

    def canonical(self) -> PairSpec:
        if self.caption_a is not None and self.caption_b is not None and self.caption_a > self.caption_b:
            return PairSpec(self.kind, self.sampling_method, self.caption_b, self.caption_a, None, None)
        if self.image_a is not None and self.image_b is not None and self.image_a > self.image_b:
            return PairSpec(self.kind, self.sampling_method, None, None, self.image_b, self.image_a)
        return self

    def identity(self) -> tuple:
        return (self.kind, self.caption_a, self.caption_b, self.image_a, self.image_b)


def pairs_create_bulk(*, batch, specs: Iterable[PairSpec]) -> dict[str, int]:
    """Queue pairs for a sampling batch, each with ``batch.ratings_per_pair`` open slots.

    Pairs already queued in the dataset (by any batch) and repeats within ``specs`` are
    left out. Must run inside the caller's transaction so a batch is all or nothing.
    Returns the number of pairs created per sampling method.
    """
    specs = [spec.canonical() for spec in specs]
    seen: set[tuple] = set()
    unique: list[PairSpec] = []
    for spec in specs:
        ident = spec.identity()
        if ident not in seen:
            seen.add(ident)
            unique.append(spec)
    existing = _existing_pair_identities(batch.dataset_id, unique)
    fresh = [spec for spec in unique if spec.identity() not in existing]
    if connection.vendor == "postgresql":
        _insert_pairs_postgres(batch=batch, specs=fresh)
    else:
        _insert_pairs_orm(batch=batch, specs=fresh)
    created: dict[str, int] = {}
    for spec in fresh:
        created[spec.sampling_method] = created.get(spec.sampling_method, 0) + 1
    per_kind: dict[str, int] = {}
    for spec in fresh:
        per_kind[spec.kind] = per_kind.get(spec.kind, 0) + 1
    queue_counters_add(dataset_id=batch.dataset_id, pairs_per_kind=per_kind)
    return created


def pairs_set_priority(*, pair_ids: Sequence[int], priority: int) -> None:
    """Give pairs and their slots (whose copy the claim orders by) a new priority, in the
    caller's transaction. Every pair is updated, and so locked, before any slot: a
    submission locks its pair before its slots, so the two never wait in a cycle."""
    Pair.objects.filter(id__in=pair_ids).update(priority=priority)
    RatingSlot.objects.filter(pair_id__in=pair_ids).update(priority=priority)


def _insert_pairs_postgres(*, batch, specs: list[PairSpec]) -> None:
    """Pairs in one INSERT from arrays, their slots generated inside the database.

    At CxC scale (65k pairs, 325k slots) building model objects cost about 25x the FAISS
    search that chose the pairs. The arrays go over as array literals: a Python list
    becomes ``ARRAY[...]``, one parsed expression per element, which alone took a second.
    The slots are made from the new pairs in the same statement, so no ids travel back.
    """
    if not specs:
        return
    kinds, methods, caption_a, caption_b, image_a, image_b = zip(
        *((s.kind, s.sampling_method, s.caption_a, s.caption_b, s.image_a, s.image_b) for s in specs), strict=True
    )
    pair_table, slot_table = Pair._meta.db_table, RatingSlot._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH pairs AS (
                INSERT INTO {pair_table} (dataset_id, split_id, batch_id, kind, sampling_method, caption_a_id,
                    caption_b_id, image_a_id, image_b_id, ratings_required, priority, ratings_done, created_at)
                SELECT %s, %s, %s, t.kind, t.method, t.ca, t.cb, t.ia, t.ib, %s, %s, 0, %s
                FROM unnest(%s::varchar[], %s::varchar[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[])
                    WITH ORDINALITY AS t(kind, method, ca, cb, ia, ib, position)
                ORDER BY t.position
                RETURNING id, kind
            )
            INSERT INTO {slot_table} (pair_id, dataset_id, index, state, kind, priority, pair_done, pair_complete)
            SELECT p.id, %s, g.i, %s, p.kind, %s, 0, false
            FROM pairs p CROSS JOIN generate_series(0, %s - 1) AS g(i)
            """,
            [
                batch.dataset_id,
                batch.split_id,
                batch.id,
                batch.ratings_per_pair,
                batch.priority,
                timezone.now(),
                *(_array_literal(column) for column in (kinds, methods, caption_a, caption_b, image_a, image_b)),
                batch.dataset_id,
                SlotState.OPEN,
                batch.priority,
                batch.ratings_per_pair,
            ],
        )


def _array_literal(values: Sequence[int | str | None]) -> str:
    """A PostgreSQL array literal of ids and choice values (``{1,NULL,3}``)."""
    return "{" + ",".join("NULL" if value is None else _array_element(value) for value in values) + "}"


def _array_element(value: int | str) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        raise TypeError(f"an id must be an integer, not {value!r}")
    return str(operator.index(value))  # Python or numpy integers; anything else is refused


def _insert_pairs_orm(*, batch, specs: list[PairSpec]) -> None:
    """The portable path (SQLite): model objects in chunks."""
    for start in range(0, len(specs), BULK_BATCH):
        chunk = specs[start : start + BULK_BATCH]
        pairs = Pair.objects.bulk_create(
            [
                Pair(
                    dataset_id=batch.dataset_id,
                    split_id=batch.split_id,
                    batch=batch,
                    kind=spec.kind,
                    sampling_method=spec.sampling_method,
                    caption_a_id=spec.caption_a,
                    caption_b_id=spec.caption_b,
                    image_a_id=spec.image_a,
                    image_b_id=spec.image_b,
                    ratings_required=batch.ratings_per_pair,
                    priority=batch.priority,
                )
                for spec in chunk
            ]
        )
        RatingSlot.objects.bulk_create(
            [
                RatingSlot(
                    pair_id=pair.id, dataset_id=pair.dataset_id, index=index, kind=pair.kind, priority=pair.priority
                )
                for pair in pairs
                for index in range(batch.ratings_per_pair)
            ],
            batch_size=BULK_BATCH,
        )


def _existing_pair_identities(dataset_id: int, specs: list[PairSpec]) -> set[tuple]:
    """Identities of pairs among ``specs`` that the dataset already has."""
    found: set[tuple] = set()
    if not specs:
        return found
    # Pairs only ever join items of their own dataset, so narrowing by the smallest
    # item id involved keeps this one indexed query per item column.
    fields = ("kind", "caption_a_id", "caption_b_id", "image_a_id", "image_b_id")
    caption_ids = {s.caption_a for s in specs if s.caption_a is not None}
    image_ids = {s.image_a for s in specs if s.image_a is not None}
    queryset = Pair.objects.filter(dataset_id=dataset_id)
    for column, ids in (("caption_a_id__in", caption_ids), ("image_a_id__in", image_ids)):
        id_list = sorted(ids)
        for start in range(0, len(id_list), BULK_BATCH):
            found.update(queryset.filter(**{column: id_list[start : start + BULK_BATCH]}).values_list(*fields))
    return found


# --- background jobs -------------------------------------------------------------------


def job_create(*, kind: str, params: dict, created_by=None) -> Job:
    return Job.objects.create(kind=kind, params=params, created_by=created_by)


def job_progress(job_id: int) -> Progress:
    """A progress callback that writes to the job row (outside any import transaction)."""

    def report(done: int, total: int, message: str) -> None:
        Job.objects.filter(pk=job_id).update(progress_done=done, progress_total=total, result={"message": message})

    return report


def job_claim(*, job_id: int, runner: str) -> bool:
    """Move a pending job to running for ``runner``; False if it is not pending."""
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.PENDING).update(
            status=JobStatus.RUNNING, runner=runner, started_at=timezone.now(), finished_at=None, error=""
        )
    )


def job_fail_if_running(*, job_id: int, error: str) -> bool:
    """Mark a running job failed (its runner died); False if it is no longer running."""
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(
            status=JobStatus.FAILED, error=error, finished_at=timezone.now()
        )
    )


def job_finish(*, job: Job, result: dict | None = None, error: str = "") -> None:
    job.refresh_from_db(fields=["progress_done", "progress_total"])
    job.status = JobStatus.FAILED if error else JobStatus.SUCCEEDED
    job.error = error
    job.result = result or {}
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "result", "finished_at"])
