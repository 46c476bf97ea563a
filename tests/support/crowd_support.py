"""Helpers of the crowd tests: a dataset with SIS and STS pairs queued and gold pairs of
both kinds uploaded, served at one in ``gold_one_in`` (gold on, as in a real study), and a
participant's HTTP client driving the rating API as a browser or a script would."""

from __future__ import annotations

import hashlib
import itertools

from django.test import Client

from annotation.core.cxc import ITEM_COLUMNS
from annotation.models import GoldPurpose, GoldRating, QualitySettings, Rating, TaskKind
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.quality.quiz import quiz_answer, quiz_set, quiz_state
from tests.factories import CaptionFactory, ImageFactory, SplitFactory
from tests.support.queue_support import queue_pairs

SIS_PAIRS, STS_PAIRS, GOLD_PER_KIND = 8, 6, 5


def crowd_dataset(tmp_path, *, gold_one_in: int = 2):
    """A dataset with SIS_PAIRS SIS and STS_PAIRS STS pairs (3 ratings each) and
    GOLD_PER_KIND uploaded gold pairs of each kind on items of their own."""
    split = SplitFactory()
    queue_pairs(split=split, kind=TaskKind.SIS, n_pairs=SIS_PAIRS, ratings_per_pair=3)
    queue_pairs(split=split, kind=TaskKind.STS, n_pairs=STS_PAIRS, ratings_per_pair=3)
    for kind in (TaskKind.SIS, TaskKind.STS):
        gold_upload(split, kind, GOLD_PER_KIND, tmp_path)
    QualitySettings.objects.update_or_create(dataset=split.dataset, defaults={"gold_one_in": gold_one_in})
    return split.dataset


def gold_upload(split, kind: str, n: int, tmp_path) -> None:
    """``n`` gold pairs of ``kind`` (SIS or STS) through the upload service."""
    if kind == TaskKind.SIS:
        images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(n + 1)]
        keys = [image.key for image in images]
    else:
        image = ImageFactory(split=split, dataset=split.dataset)
        keys = [CaptionFactory(image=image).key for _ in range(n + 1)]
    lines = [",".join((*ITEM_COLUMNS[kind], "gold_score", "explanation"))]
    lines += [f"{a},{b},{index * 1.2:.1f},level {index}" for index, (a, b) in enumerate(itertools.pairwise(keys))]
    path = tmp_path / f"gold-{kind.lower()}.csv"
    path.write_text("\n".join(lines) + "\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == n


def sts_quiz(dataset) -> list[int]:
    """Make the dataset's STS gold pairs (GOLD_PER_KIND, the smallest pool for attempts
    of one question) its STS quiz, asked one question at a time: STS is then quiz-gated."""
    ids = list(dataset.gold_pairs.filter(kind=TaskKind.STS).values_list("id", flat=True))
    quiz_set(dataset_id=dataset.pk, gold_pair_ids=ids, in_quiz=True)
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"quiz_length": 1})
    return ids


def quiz_fail_every_attempt(user, dataset, kind: str, *, attempts: int | None = None, near: bool = False) -> None:
    """Answer every question of every attempt (or of the first ``attempts``) far from
    its reference score (``near``: at it, which passes the open attempt and ends there)."""
    state = quiz_state(rater=user, dataset=dataset.name, kind=kind)
    for step in range(100):
        if state.result is not None:
            if near:
                assert state.qualified
                return
            if state.attempt >= (attempts or state.attempts_allowed):
                assert not state.qualified
                return
            state = quiz_state(rater=user, dataset=dataset.name, kind=kind, start=True)
            continue
        reference = dataset.gold_pairs.get(pk=state.gold_pair_id).gold_score
        quiz_answer(
            rater=user,
            dataset=dataset.name,
            kind=kind,
            gold_pair_id=state.gold_pair_id,
            score=reference if near else (5.0 if reference < 2.5 else 0.0),
            time_on_item_ms=3000,
            time_to_first_move_ms=500,
            adjustments=1,
            idempotency_key=f"fail-{step}",
        )
        state = quiz_state(rater=user, dataset=dataset.name, kind=kind)
    raise AssertionError("the quiz never ended")


def items_rated(user, dataset) -> int:
    """Ratings and queue gold ratings of ``user`` in ``dataset``: a participant's items."""
    gold = GoldRating.objects.filter(rater=user, dataset=dataset, purpose=GoldPurpose.QUEUE).count()
    return Rating.objects.filter(rater=user, pair__dataset=dataset).count() + gold


def platform_id(name: str, id_param: str = "PROLIFIC_PID") -> str:
    """The participant id of a test's readable ``name`` on the platform of ``id_param``
    (the same name, the same id): 24 hexadecimal characters for Prolific, a worker id
    for MTurk, the name itself for a link of its own pattern."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    if id_param == "PROLIFIC_PID":
        return digest[:24]
    if id_param == "workerId":
        return "A" + digest[:13].upper()
    return name


def address_of(name: str) -> str:
    """A client address of the participant ``name``'s own (people join from their homes)."""
    digest = hashlib.sha256(f"address {name}".encode()).digest()
    return f"10.{digest[0]}.{digest[1]}.{digest[2]}"


class ParticipantClient:
    """A browser (or script) of one participant: joins through the link, then claims,
    rates and skips through the rating API with the session the link gave it.
    ``external_id`` is a readable name, made the platform's id (``platform_id``) unless the
    link has its own pattern; each participant joins from an address of their own."""

    def __init__(self, link, external_id: str):
        self.link = link
        self.external_id = external_id if link.id_pattern else platform_id(external_id, link.id_param)
        self.http = Client(REMOTE_ADDR=address_of(external_id))
        self.dataset = link.dataset.name
        self.keys = itertools.count()

    def join(self, **query):
        query = {self.link.id_param: self.external_id, **query}
        text = "&".join(f"{name}={value}" for name, value in query.items())
        return self.http.get(f"/join/{self.link.token}/?{text}")

    def claim(self, kind: str) -> dict | None:
        response = self._post("claim/", {"kind": kind})
        assert response.status_code in (200, 204), response.content
        return response.json() if response.status_code == 200 else None

    def submit(self, slot: dict, score: float = 2.5):
        body = {
            "score": score,
            "time_on_item_ms": 4000,
            "time_to_first_move_ms": 600,
            "adjustments": 2,
            "idempotency_key": f"{self.external_id}-{next(self.keys)}",
        }
        return self._post(f"slots/{slot['slot_id']}/submit/", body)

    def skip(self, slot: dict):
        return self._post(f"slots/{slot['slot_id']}/skip/", None)

    def rate_all(self, kind: str, *, limit: int = 100) -> int:
        """Claim and rate ``kind`` until nothing is served (or ``limit``); returns the
        number rated."""
        for done in range(limit):
            slot = self.claim(kind)
            if slot is None:
                return done
            assert self.submit(slot).status_code == 201
        return limit

    def skip_all(self, kind: str, *, limit: int = 100) -> int:
        for done in range(limit):
            slot = self.claim(kind)
            if slot is None:
                return done
            assert self.skip(slot).status_code == 200
        return limit

    def done_page(self):
        return self.http.get(f"/join/{self.link.token}/done/")

    def _post(self, path: str, body):
        return self.http.post(f"/api/rate/{self.dataset}/{path}", body, content_type="application/json")
