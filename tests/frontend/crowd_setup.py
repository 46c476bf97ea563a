"""A crowd campaign on the demo dataset for the participant tests: gold pairs uploaded
and served in the queue (gold on, as in a real study), a link of one or more kinds, and
optionally a ten-question SIS quiz pool asked two at a time (the smallest pool for
attempts of two: five times that)."""

import itertools
import tempfile
from pathlib import Path

from annotation.core.cxc import ITEM_COLUMNS, level_name
from annotation.models import (
    CampaignLink,
    Caption,
    Dataset,
    GoldPair,
    GoldSource,
    Image,
    Pair,
    QualitySettings,
    TaskKind,
)
from annotation.people.crowd.links import campaign_link_create
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.quality.quiz import quiz_set
from annotation.serving.gold_ids import ids_reserve

QUIZ_REFERENCES = (0.0, 2.5, 5.0, 1.0, 4.0, 3.0, 0.5, 4.5, 2.0, 3.5)
QUIZ_LENGTH = 2
# One claim in GOLD_ONE_IN serves a gold pair while the rater has gold pairs left.
GOLD_ONE_IN = 2


def sis_quiz(dataset: Dataset) -> list[GoldPair]:
    """Ten SIS gold pairs in the quiz, on pairs of images no queued pair joins, asked
    QUIZ_LENGTH at a time."""
    keys = _free_pairs(dataset, TaskKind.SIS, len(QUIZ_REFERENCES))
    images = {image.key: image for image in Image.objects.filter(dataset=dataset)}
    ids = ids_reserve(Pair, len(QUIZ_REFERENCES))
    made = []
    for index, (reference, (key_a, key_b)) in enumerate(zip(QUIZ_REFERENCES, keys, strict=True)):
        a, b = sorted((images[key_a], images[key_b]), key=lambda image: image.pk)
        made.append(
            GoldPair.objects.create(
                id=ids[index],
                dataset=dataset,
                split=a.split,
                kind=TaskKind.SIS,
                image_a=a,
                image_b=b,
                gold_score=reference,
                explanation=f"Reference explained: {level_name(reference)} because of what the pictures share.",
                source=GoldSource.UPLOAD,
            )
        )
    quiz_set(dataset_id=dataset.pk, gold_pair_ids=[gold.pk for gold in made], in_quiz=True)
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"quiz_length": QUIZ_LENGTH})
    return made


def queue_gold(dataset: Dataset, *, one_in: int = GOLD_ONE_IN) -> int:
    """Upload three SIS and three STS gold pairs (pairs neither queued nor in the quiz)
    through the gold upload, and serve gold at one claim in ``one_in``."""
    rows = {TaskKind.SIS: _free_pairs(dataset, TaskKind.SIS, 3), TaskKind.STS: _free_pairs(dataset, TaskKind.STS, 3)}
    made = 0
    with tempfile.TemporaryDirectory() as folder:
        for kind, pairs in rows.items():
            path = Path(folder) / f"gold-{kind.lower()}.csv"
            lines = [",".join((*ITEM_COLUMNS[kind], "gold_score", "explanation"))]
            lines += [f"{a},{b},{1.5 * n:.1f},level {n}" for n, (a, b) in enumerate(pairs)]
            path.write_text("\n".join(lines) + "\n")
            made += gold_pairs_upload(dataset=dataset, path=path)
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"gold_one_in": one_in})
    return made


def _free_pairs(dataset: Dataset, kind: str, n: int) -> list[tuple[str, str]]:
    """``n`` pairs of item keys (SIS: images, STS: captions) that no queued pair, gold
    pair or quiz pair of the dataset joins, from the last items on."""
    if kind == TaskKind.SIS:
        items = list(Image.objects.filter(dataset=dataset).order_by("-id").values_list("id", "key"))
        taken = [*Pair.objects.filter(dataset=dataset, kind=kind).values_list("image_a", "image_b")]
        taken += GoldPair.objects.filter(dataset=dataset, kind=kind).values_list("image_a", "image_b")
    else:
        items = list(Caption.objects.filter(dataset=dataset).order_by("-id").values_list("id", "key"))
        taken = [*Pair.objects.filter(dataset=dataset, kind=kind).values_list("caption_a", "caption_b")]
        taken += GoldPair.objects.filter(dataset=dataset, kind=kind).values_list("caption_a", "caption_b")
    taken_sets = {frozenset(pair) for pair in taken}
    free = [
        (key_a, key_b)
        for (id_a, key_a), (id_b, key_b) in itertools.combinations(items, 2)
        if frozenset((id_a, id_b)) not in taken_sets
    ]
    assert len(free) >= n, f"the demo has only {len(free)} {kind} pairs left for gold"
    return free[:n]


def crowd_link(dataset: Dataset, *, kinds: tuple[str, ...], quota: int, return_url: str = "", **extra) -> CampaignLink:
    """A Prolific link for ``kinds`` with gold on (``queue_gold``): the quota counts
    ordinary and gold items alike."""
    queue_gold(dataset)
    return campaign_link_create(
        dataset=dataset,
        name="Prolific pilot",
        kinds=list(kinds),
        quota=quota,
        completion_code="C0DE42",
        return_url=return_url,
        **extra,
    )
