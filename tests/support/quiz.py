"""Quizzes built from gold pairs and an attempt through the API, for the quiz tests."""

from annotation.models import GoldPair, QualitySettings
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.quality.quiz import quiz_set
from tests.factories import CaptionFactory, ImageFactory, SplitFactory
from tests.support.queue_support import queue_pairs
from tests.support.rating_support import db_id

# Fifteen SIS questions, the smallest pool for attempts of three (quiz_length 3: five
# times that), so attempt 2 draws 3 of the 12 questions attempt 1 left. Explanations carry
# no number, so any number in an answer's JSON would come from the API itself. The
# references are sums of powers of two: an answer a set distance off is exactly that off.
REFERENCES = [0.0, 0.5, 1.5, 2.0, 3.0, 3.5, 4.5, 5.0, 0.25, 1.25, 1.75, 3.25, 4.25, 4.75, 3.75]


LENGTH = 3
# Five questions: the smallest pool for attempts of one.
FIVE = [1.0, 4.0, 0.5, 3.0, 5.0]


def letters(index: int) -> str:
    """A question's name without a digit: a, b, ... z, ba, bb ..."""
    name = ""
    while True:
        index, rest = divmod(index, 26)
        name = "abcdefghijklmnopqrstuvwxyz"[rest] + name
        if index == 0:
            return name


def make_quiz(dataset, references, tmp_path) -> list[GoldPair]:
    images = [ImageFactory(split=dataset.splits.first(), dataset=dataset) for _ in range(2 * len(references))]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [
        f"{images[2 * i].key},{images[2 * i + 1].key},{ref},the scenes share what question {letters(i)} shows"
        for i, ref in enumerate(references)
    ]
    path = tmp_path / "quiz.csv"
    path.write_text("\n".join(lines) + "\n")
    gold_pairs_upload(dataset=dataset, path=path)
    ids = list(GoldPair.objects.filter(dataset=dataset).values_list("pk", flat=True))
    assert quiz_set(dataset_id=dataset.pk, gold_pair_ids=ids, in_quiz=True) == len(references)
    return list(GoldPair.objects.filter(pk__in=ids))


def sis_quiz_dataset(tmp_path, *, n_pairs: int):
    """A dataset with ``n_pairs`` SIS pairs to rate (two ratings each) and a SIS quiz of the
    fifteen REFERENCES asked LENGTH at a time."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=n_pairs, ratings_per_pair=2)
    make_quiz(split.dataset, REFERENCES, tmp_path)
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=LENGTH)
    return split.dataset


def answer_body(question: str, key: str, score: float) -> dict:
    """The quiz answer API's body for ``question`` (an opaque id), with a rater's usual
    interaction facts."""
    return {
        "gold_pair_id": question,
        "score": score,
        "time_on_item_ms": 3000,
        "time_to_first_move_ms": 500,
        "adjustments": 1,
        "idempotency_key": key,
    }


def api_attempt(client, dataset, *, score_for, start=False, tag="a"):
    """Take a whole attempt through the HTTP API as a rater's browser would; ``score_for``
    picks the score for a question's database id. Returns [(question id, answer JSON)]."""
    base = f"/api/rate/{dataset.name}/quiz/sis/"
    answer = client.post(base, {"start": start}, format="json")
    assert answer.status_code == 200, answer.content
    state = answer.json()
    asked = []
    while state["result"] is None:
        # The API names questions by opaque ids; the tests compare database ids.
        question = db_id("question", state["gold_pair_id"])
        body = answer_body(state["gold_pair_id"], f"{tag}-{len(asked)}", score_for(question))
        stored = client.post(f"{base}answer/", body, format="json")
        assert stored.status_code == 201, stored.content
        asked.append((question, stored.json()))
        state = stored.json()["state"]
    return asked


def make_sts_quiz(dataset, references, tmp_path) -> list[GoldPair]:
    """An STS quiz of caption pairs in ``dataset``, one pair per reference."""
    image = ImageFactory(split=dataset.splits.first(), dataset=dataset)
    captions = [CaptionFactory(image=image) for _ in range(2 * len(references))]
    lines = ["caption1,caption2,gold_score,explanation"]
    lines += [f"{captions[2 * i].key},{captions[2 * i + 1].key},{ref},sts {i}" for i, ref in enumerate(references)]
    path = tmp_path / "sts-quiz.csv"
    path.write_text("\n".join(lines) + "\n")
    gold_pairs_upload(dataset=dataset, path=path)
    ids = list(GoldPair.objects.filter(dataset=dataset, kind="STS").values_list("pk", flat=True))
    quiz_set(dataset_id=dataset.pk, gold_pair_ids=ids, in_quiz=True)
    return list(GoldPair.objects.filter(pk__in=ids))


def second_dataset(tmp_path, references=FIVE):
    """Another dataset with a SIS quiz of its own, attempts of one question."""
    split = SplitFactory()
    (tmp_path / "second").mkdir()
    make_quiz(split.dataset, list(references), tmp_path / "second")
    QualitySettings.objects.create(dataset=split.dataset, quiz_length=1)
    return split.dataset
