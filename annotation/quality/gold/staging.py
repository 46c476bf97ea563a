"""A gold CSV uploaded for a preview, saved or dropped a step later (the admin's "Upload
gold CSV"). The file waits in the upload area (``annotation.catalog.uploads``), never in memory;
the preview hands the browser a signed token naming it, the dataset and the admin, and
saving or cancelling removes it. A preview left alone expires after STAGE_MAX_AGE, and its
folder goes with the upload prune's unreferenced folders (a day after it was made)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.core import signing

from annotation.catalog.uploads import FOLDER_NAME, PAIR_LIST, upload_discard, upload_store, uploads_root
from annotation.models import Dataset
from annotation.quality.gold.gold_file import (
    LISTED_ROWS,
    GoldFile,
    GoldInputError,
    gold_file_check,
    gold_rows_items,
)
from annotation.quality.gold.upload import gold_pairs_upload

SALT = "annotation.gold-upload"
# Shorter than the prune's grace for unreferenced folders, so a token that still holds
# finds its file unless it was saved or cancelled.
STAGE_MAX_AGE = timedelta(hours=6)
# Rows of a preview whose captions and images are loaded (the page lists these).
PREVIEW_ROWS = LISTED_ROWS


@dataclass
class GoldPreview:
    """A checked upload. ``token`` names the waiting file; None when a row has a problem
    (the file is gone then: there is nothing to save)."""

    dataset: Dataset
    file: GoldFile
    token: str | None


def gold_upload_preview(*, uploaded_file, dataset: Dataset, user) -> GoldPreview:
    """Store and check an uploaded gold CSV (read as a stream where it is stored). Raises
    GoldInputError for a problem with the whole file and UploadTooLarge over the
    pair-list limit, keeping nothing."""
    path = upload_store(uploaded_file, kind=PAIR_LIST, suffix_hint=".csv")
    try:
        checked = gold_file_check(dataset=dataset, path=Path(path))
    except BaseException:
        upload_discard(path)
        raise
    gold_rows_items(checked.rows[:PREVIEW_ROWS])
    if checked.problems:
        upload_discard(path)
        return GoldPreview(dataset=dataset, file=checked, token=None)
    folder, name = Path(path).parent.name, Path(path).name
    token = signing.dumps({"folder": folder, "name": name, "dataset": dataset.pk, "user": user.pk}, salt=SALT)
    return GoldPreview(dataset=dataset, file=checked, token=token)


def gold_upload_save(*, token: str, user) -> tuple[Dataset, int]:
    """Add the previewed file's gold pairs (all or none, checked again: the dataset may
    have changed since) and remove the file. Returns the dataset and how many were added."""
    dataset, path = _staged(token, user)
    try:
        created = gold_pairs_upload(dataset=dataset, path=path, created_by=user)
    finally:
        upload_discard(path)
    return dataset, created


def gold_upload_cancel(*, token: str, user) -> None:
    """Remove the previewed file without saving anything."""
    upload_discard(_staged(token, user)[1])


def _staged(token: str, user) -> tuple[Dataset, Path]:
    try:
        staged = signing.loads(token, salt=SALT, max_age=STAGE_MAX_AGE)
    except signing.SignatureExpired:
        raise GoldInputError(
            f"the preview is older than {STAGE_MAX_AGE.total_seconds() / 3600:g} hours; upload the file again"
        ) from None
    except signing.BadSignature:
        raise GoldInputError("the preview's token is not one this server made; upload the file again") from None
    if staged["user"] != user.pk:
        raise GoldInputError("this preview belongs to another admin; upload the file yourself")
    if not FOLDER_NAME.match(staged["folder"]):
        raise GoldInputError("the preview's token names no upload; upload the file again")
    path = uploads_root() / staged["folder"] / Path(staged["name"]).name
    if not path.is_file():
        raise GoldInputError("the previewed file is gone (saved or cancelled already); upload it again")
    dataset = Dataset.objects.filter(pk=staged["dataset"]).first()
    if dataset is None:
        raise GoldInputError("the preview's dataset was deleted")
    return dataset, path
