"""A crowd campaign on the demo dataset for the participant tests and bench-join: a link
for SIS pairs, and optionally a six-question SIS quiz pool (attempts of three at the
default quiz length of five, so the second attempt asks the other three)."""

from annotation.crowd import campaign_link_create
from annotation.cxc import level_name
from annotation.gold.ids import ids_reserve
from annotation.models import CampaignLink, Dataset, GoldPair, GoldSource, Image, Pair, QualitySettings, TaskKind
from annotation.quiz import quiz_set

QUIZ_REFERENCES = (0.0, 2.5, 5.0, 1.0, 4.0, 3.0)


def sis_quiz(dataset: Dataset) -> list[GoldPair]:
    """Six SIS gold pairs in the quiz, on images the queued demo pairs start from last."""
    images = list(Image.objects.filter(dataset=dataset).order_by("-id")[: 2 * len(QUIZ_REFERENCES)])
    ids = ids_reserve(Pair, len(QUIZ_REFERENCES))
    made = []
    for index, reference in enumerate(QUIZ_REFERENCES):
        a, b = sorted((images[2 * index], images[2 * index + 1]), key=lambda image: image.pk)
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
    return made


def sis_link(dataset: Dataset, *, quota: int, return_url: str = "", **extra) -> CampaignLink:
    """A Prolific link for SIS pairs; no gold pairs served in the queue, so the quota
    counts ordinary pairs only."""
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"gold_one_in": 0})
    return campaign_link_create(
        dataset=dataset,
        name="Prolific pilot",
        kinds=["SIS"],
        quota=quota,
        completion_code="C0DE42",
        return_url=return_url,
        **extra,
    )
