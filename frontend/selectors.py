"""Reads for the pages."""

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import OuterRef, QuerySet, Subquery

from annotation.catalog.selectors import dataset_list
from annotation.core.errors import NotFound
from annotation.core.roles import ADMIN, RATER, RESEARCHER, has_role
from annotation.models import (
    CampaignSnapshot,
    Caption,
    Dataset,
    ExclusionState,
    Image,
    Pair,
    RaterPause,
    RatingExclusion,
    TaskKind,
)
from annotation.people.selectors import qualification_kinds_by_dataset
from annotation.serving import Item, image_url_of
from annotation.serving.pairs_left import rater_pairs_left
from config.runtime import describe_mode
from frontend.instructions import INSTRUCTIONS, level_name
from frontend.models import WorkedExample


def _caption_item(caption: Caption) -> Item:
    return Item(type="caption", text=caption.text)


def _image_item(dataset: Dataset, image: Image) -> Item:
    url = image_url_of(dataset, image)
    return Item(type="image", url=url, width=image.width, height=image.height)


def worked_example_list(*, dataset: Dataset, kind: str) -> list[dict]:
    """Active examples of one kind, in order, as the template shows them: their items (the
    same shape the rating page gets for a claimed pair) and the name of their reference
    level (never the number)."""
    examples = WorkedExample.objects.filter(dataset=dataset, kind=kind, active=True).select_related(
        "caption_a", "caption_b", "image_a", "image_b"
    )
    shown = []
    for example in examples:
        items = [_caption_item(c) for c in (example.caption_a, example.caption_b) if c is not None]
        items += [_image_item(dataset, i) for i in (example.image_a, example.image_b) if i is not None]
        shown.append(
            {"items": items, "level_name": level_name(example.reference_score), "explanation": example.explanation}
        )
    return shown


@dataclass(frozen=True)
class RaterWork:
    """One dataset and task kind a rater is qualified for. ``pairs_left``: pairs that
    still need ratings and that the rater has neither rated nor skipped (the same count
    as ``rater_progress``, split by kind)."""

    dataset: str
    kind: str
    title: str
    pairs_left: int


def rater_work_list(*, rater) -> list[RaterWork]:
    """Every dataset (by name) with every kind the rater is qualified for (in TaskKind
    order); empty for a user without the rater role. The counts are
    ``annotation.serving.pairs_left.rater_pairs_left``'s, over every dataset at once."""
    if not has_role(rater, RATER):
        return []
    everywhere, per_dataset = qualification_kinds_by_dataset(rater=rater)
    granted = everywhere.union(*per_dataset.values())
    kinds = [kind for kind in TaskKind.values if kind in granted]
    if not kinds:
        return []
    left = rater_pairs_left(rater=rater, kinds=kinds)
    return [
        RaterWork(
            dataset=name,
            kind=kind,
            title=INSTRUCTIONS[kind]["title"],
            pairs_left=left.get((dataset_id, kind), 0),
        )
        for dataset_id, name in Dataset.objects.order_by("name").values_list("id", "name")
        for kind in kinds
        if kind in everywhere or kind in per_dataset.get(dataset_id, ())
    ]


def home_sections(*, user) -> dict:
    """What the home page shows a signed-in user, one section per role they hold:
    ``rater_work`` (RaterWork list, None for a non-rater), ``researcher`` (bool),
    ``admin`` (None, or what ``_admin_section`` gives: only admins see where the data
    lives)."""
    is_rater = has_role(user, RATER)
    is_admin = has_role(user, ADMIN)
    return {
        "rater_work": rater_work_list(rater=user) if is_rater else None,
        "researcher": has_role(user, RESEARCHER) or is_admin,
        "admin": _admin_section(user) if is_admin else None,
        "has_role": is_rater or is_admin or has_role(user, RESEARCHER),
    }


def _admin_section(user) -> dict:
    """The run mode line (with the database path), the folder of API exports, the
    datasets, and whether the Django admin lets this user in: it needs staff status,
    which the admin group alone does not give."""
    return {
        "mode": describe_mode(),
        "export_dir": settings.EXPORT_DIR,
        "datasets": dataset_list(),
        "site_access": user.is_active and user.is_staff,
    }


def worked_example_pairs(*, dataset_id: int) -> list[tuple[str, int | None, int | None, int | None, int | None]]:
    """Active worked examples of a dataset as (kind, caption_a, caption_b, image_a,
    image_b) item ids: pairs sampling must never queue, since raters see them solved."""
    return list(
        WorkedExample.objects.filter(dataset_id=dataset_id, active=True).values_list(
            "kind", "caption_a_id", "caption_b_id", "image_a_id", "image_b_id"
        )
    )


def worked_example_queued_pair(*, example: WorkedExample) -> Pair | None:
    """The queued (not retired) pair with the example's items, in either order, if any:
    raters would be served the example as a task."""
    pairs = Pair.objects.filter(dataset_id=example.dataset_id, kind=example.kind, retired_at__isnull=True)
    if example.kind == TaskKind.SITS:
        return pairs.filter(caption_a_id=example.caption_a_id, image_a_id=example.image_a_id).first()
    column = "caption" if example.kind == TaskKind.STS else "image"
    first, second = getattr(example, f"{column}_a_id"), getattr(example, f"{column}_b_id")
    low, high = sorted((first, second))
    return pairs.filter(**{f"{column}_a_id": low, f"{column}_b_id": high}).first()


def pair_items_by_id(*, dataset: Dataset, pair_ids: list[int]) -> dict[int, list[Item]]:
    """The items (captions first, then images, as the rating page shows them) of a few
    pairs of a dataset, keyed by pair id, in one query. Pairs not in the dataset are left
    out."""
    pairs = Pair.objects.filter(dataset=dataset, pk__in=pair_ids).select_related(
        "caption_a", "caption_b", "image_a", "image_b"
    )
    return {
        pair.pk: [_caption_item(c) for c in (pair.caption_a, pair.caption_b) if c is not None]
        + [_image_item(dataset, i) for i in (pair.image_a, pair.image_b) if i is not None]
        for pair in pairs
    }


def campaign_dataset_list() -> QuerySet[Dataset]:
    """Every dataset by name, each with ``snapshot_made_at``: when its newest campaign
    snapshot was made (None before the first), in one query."""
    newest = CampaignSnapshot.objects.filter(dataset=OuterRef("pk")).order_by("-made_at").values("made_at")[:1]
    return Dataset.objects.annotate(snapshot_made_at=Subquery(newest)).order_by("name")


@dataclass(frozen=True)
class RaterStanding:
    """A rater's live standing in a dataset, for the action buttons (the snapshot's
    figures may be minutes old): the active pause and the latest exclusion not undone."""

    pause_id: int | None = None
    exclusion_id: int | None = None
    exclusion_state: str = ""


def rater_standings(*, dataset: Dataset) -> dict[int, RaterStanding]:
    """Per rater id with an active pause or an exclusion not undone in ``dataset``, in
    two queries; raters without either are absent."""
    pauses = dict(RaterPause.objects.filter(dataset=dataset, lifted_at__isnull=True).values_list("rater_id", "id"))
    exclusions: dict[int, tuple[int, str]] = {}
    rows = (
        RatingExclusion.objects.filter(dataset=dataset)
        .exclude(state=ExclusionState.UNDONE)
        .order_by("created_at", "id")
        .values_list("rater_id", "id", "state")
    )
    for rater_id, exclusion_id, state in rows:
        exclusions[rater_id] = (exclusion_id, state)  # the latest wins
    return {
        rater_id: RaterStanding(
            pause_id=pauses.get(rater_id),
            exclusion_id=exclusions.get(rater_id, (None, ""))[0],
            exclusion_state=exclusions.get(rater_id, (None, ""))[1],
        )
        for rater_id in {*pauses, *exclusions}
    }


def campaign_user_get(*, user_id: int):
    """The user of a campaign page's rater id; NotFound naming the id."""
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound(f"no user #{user_id}")
    return user
