"""What the queue's services take and give: the limits of a submission, the input error,
the items and assignments a rater is served, and the clock and lease length they share."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from annotation.core.errors import DomainError
from annotation.core.sql import Statement
from annotation.models import TaskKind

# Stored scores keep 4 decimals: finer than any rater can place a slider, and keyboard
# steps (0.1 + 0.2 ...) no longer leave float noise such as 0.9999999999999998.
SCORE_DECIMALS = 4
# A day on one item is certainly a client clock or counting bug, not a measurement.
MAX_TIME_ON_ITEM_MS = 24 * 3600 * 1000
MAX_ADJUSTMENTS = 100_000
MAX_IDEMPOTENCY_KEY = 64
MAX_FLAG_NOTE = 2000


class QueueInputError(DomainError):
    """A submission or claim with bad values. Nothing was written."""

    code = "queue_invalid"


@dataclass(frozen=True)
class Item:
    """One side of a pair as the rating page shows it. ``type`` is "caption" (``text``)
    or "image" (``url``, ``width``/``height`` in pixels when known)."""

    type: str
    text: str | None = None
    url: str | None = None
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True)
class Assignment:
    """A leased slot and what the rater needs to rate it. ``items`` are in display order:
    STS two captions, SIS two images, SITS the caption then the image, REV the query,
    the truth image, the retrieved image."""

    slot_id: int
    pair_id: int
    dataset: str
    kind: str
    lease_expires_at: datetime
    resumed: bool
    items: tuple[Item, ...]
    # When this claim leased the slot (a claim statement's new lease; None for a lease
    # resumed or renewed, and from the gold claim and the portable path), and the row of
    # the read asked to run along with the claim (``ClaimRead``; None when none ran).
    leased_at: datetime | None = None
    read_row: tuple | None = None


@dataclass(frozen=True)
class ClaimRead:
    """A read to run in the claim's own statement, in its snapshot (before the claim's
    writes), so that a caller who needs it right after a claim spares a statement and its
    round trip: ``statement``, a SELECT of at most one row whose parameters the claim
    statement's share by name and type or add to, and ``values`` for those it adds (the
    claim's own win). It may read the claim's ``claimed`` (the slot leased: id, pair,
    expiry), which the snapshot does not show. The claim answers the row (or NULLs when
    it has none) as the assignment's ``read_row``."""

    statement: Statement
    values: dict
    width: int  # the read's columns


@dataclass(frozen=True)
class SubmitResult:
    rating_id: int
    pair_id: int
    slot_id: int
    created_at: datetime
    replayed: bool
    # The rating filled the last slot of an adaptive pair below its maximum: the rating
    # policy decides next whether the pair closes or gets one more slot.
    adaptive_full: bool = False
    # The kind of the slot a fresh rating was stored for when the rater held it until
    # then (the common case's statement answers it; None where another path stored it).
    held_kind: str | None = None


class GoldTurn:
    """What a claim that may yield to gold answers when it did (``slot_claim``'s
    ``yield_to_gold``): the rater holds a gold lease or drew a gold item, and nothing was
    leased."""

    def __repr__(self) -> str:
        return "GOLD_TURN"


GOLD_TURN = GoldTurn()


def service_now(now: datetime | None) -> datetime:
    """The clock of a service call: ``now`` when the caller gives one (tests do)."""
    return now if now is not None else timezone.now()


def lease_ttl() -> timedelta:
    return timedelta(seconds=settings.LEASE_TTL_SECONDS)


# TaskKind.values builds its list on every read; the claim and submit check twice an item.
_KINDS = frozenset(TaskKind.values)


def check_kind(kind: str | None, kinds: tuple[str, ...] | None = None) -> None:
    """QueueInputError unless ``kind`` is None or one of ``kinds`` (default: every task kind)."""
    allowed = _KINDS if kinds is None else kinds
    if kind is not None and (not isinstance(kind, str) or kind not in allowed):
        raise QueueInputError(f"kind must be one of {', '.join(kinds or TaskKind.values)}, got {kind!r}")


def image_url(*, dataset: str, images_root: str, image_url_prefix: str, key: str, file_path: str) -> str:
    """Where the browser loads an image: below the dataset's URL prefix, or from the
    image view that serves files below ``images_root``."""
    if image_url_prefix:
        return image_url_prefix.rstrip("/") + "/" + file_path.lstrip("/")
    return reverse("image-file", kwargs={"dataset": dataset, "key": key})


def image_url_of(dataset, image) -> str:
    """``image_url`` of an Image row of a Dataset row (admin pages, worked examples)."""
    return image_url(
        dataset=dataset.name,
        images_root=dataset.images_root,
        image_url_prefix=dataset.image_url_prefix,
        key=image.key,
        file_path=image.file_path,
    )


def assignment_of(
    *,
    slot_id: int,
    pair_id: int,
    lease_expires_at: datetime,
    resumed: bool,
    kind: str,
    dataset: str,
    images_root: str,
    image_url_prefix: str,
    caption_texts,
    images,
    leased_at: datetime | None = None,
    read_row: tuple | None = None,
) -> Assignment:
    """The assignment of a leased slot. ``caption_texts``: the pair's (caption_a,
    caption_b) texts; ``images``: its (image_a, image_b) as (key, file_path, width,
    height); a side the pair lacks is None (or a tuple of Nones); ``leased_at`` and
    ``read_row`` as ``Assignment``'s."""

    def image_item(values) -> Item:
        key, file_path, width, height = values
        url = image_url(
            dataset=dataset, images_root=images_root, image_url_prefix=image_url_prefix, key=key, file_path=file_path
        )
        return Item(type="image", url=url, width=width, height=height)

    if kind == TaskKind.STS:
        items = (Item(type="caption", text=caption_texts[0]), Item(type="caption", text=caption_texts[1]))
    elif kind == TaskKind.SIS:
        items = (image_item(images[0]), image_item(images[1]))
    elif kind == TaskKind.REV:  # the query, the truth image, the retrieved image
        items = (Item(type="caption", text=caption_texts[0]), image_item(images[0]), image_item(images[1]))
    else:
        items = (Item(type="caption", text=caption_texts[0]), image_item(images[0]))
    return Assignment(
        slot_id=slot_id,
        pair_id=pair_id,
        dataset=dataset,
        kind=kind,
        lease_expires_at=lease_expires_at,
        resumed=bool(resumed),
        items=items,
        leased_at=leased_at,
        read_row=read_row,
    )
