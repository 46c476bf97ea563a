"""Helpers shared by the rating-queue tests: a controllable clock, queue builders, the
engine fixture of the service tests, and the clients and URLs of the API tests. ``claim``
and ``submit`` go through the rating policy, as every entry point does.

Fixtures here are taken into a test module by assignment (``engine = queue_support.engine``)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from knox.models import AuthToken
from rest_framework.test import APIClient

import annotation.serving.routing as serving_routing
from annotation.models import SamplingMethod, TaskKind
from annotation.rating.policy import rating_submit, slot_claim
from annotation.serving.pairs import PairSpec, pairs_create_bulk
from tests.factories import CaptionFactory, ImageFactory, SamplingBatchFactory, SplitFactory, UserFactory

# The lease length the queue tests run with (settings.LEASE_TTL_SECONDS via the clock fixture).
TTL = 600


class Clock:
    """A clock tests move by hand; installed as django.utils.timezone.now."""

    def __init__(self, start: datetime | None = None):
        self.now = start or datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


METHOD = {
    TaskKind.STS: SamplingMethod.C2C_COCAPTION,
    TaskKind.SIS: SamplingMethod.I2I_CSIM,
    TaskKind.SITS: SamplingMethod.C2I_ORIGINAL,
}


def images_for_pairs(n_pairs: int) -> int:
    """How many images give at least n_pairs unordered image pairs."""
    n = 2
    while n * (n - 1) // 2 < n_pairs:
        n += 1
    return n


def queue_pairs(
    *,
    split=None,
    kind: str = TaskKind.SIS,
    n_pairs: int = 1,
    ratings_per_pair: int = 5,
    priority: int = 0,
    adaptive: tuple[int, float] | None = None,
):
    """Create a sampling batch with ``n_pairs`` pairs of ``kind`` (each with its slots)
    through the same service sampling uses; ``adaptive``: (maximum, half-width) of
    adaptive N, ``ratings_per_pair`` then the minimum. Returns (batch, pairs in id order)."""
    from annotation.models import Pair

    split = split or SplitFactory()
    ratings_max, half_width = adaptive if adaptive is not None else (None, None)
    batch = SamplingBatchFactory(
        split=split,
        dataset=split.dataset,
        ratings_per_pair=ratings_per_pair,
        priority=priority,
        ratings_max=ratings_max,
        adaptive_half_width=half_width,
    )
    specs: list[PairSpec] = []
    if kind == TaskKind.SIS:
        images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(images_for_pairs(n_pairs))]
        for a, b in itertools.islice(itertools.combinations(images, 2), n_pairs):
            specs.append(PairSpec(kind, METHOD[kind], image_a=a.id, image_b=b.id))
    elif kind == TaskKind.STS:
        image = ImageFactory(split=split, dataset=split.dataset)
        captions = [CaptionFactory(image=image) for _ in range(images_for_pairs(n_pairs))]
        for a, b in itertools.islice(itertools.combinations(captions, 2), n_pairs):
            specs.append(PairSpec(kind, METHOD[kind], caption_a=a.id, caption_b=b.id))
    else:
        for _ in range(n_pairs):
            caption = CaptionFactory(image=ImageFactory(split=split, dataset=split.dataset))
            specs.append(PairSpec(kind, METHOD[kind], caption_a=caption.id, image_a=caption.image_id))
    pairs_create_bulk(batch=batch, specs=specs)
    return batch, list(Pair.objects.filter(batch=batch).order_by("id"))


def submit_kwargs(key: str, score: float = 3.0) -> dict:
    """A well-formed submission (the interaction facts of a quick, decided rater)."""
    return {
        "score": score,
        "time_on_item_ms": 4000,
        "time_to_first_move_ms": 800,
        "adjustments": 2,
        "idempotency_key": key,
    }


def bulk_sis_pairs(*, batch, n_pairs: int, images_per_side: int | None = None) -> None:
    """Queue ``n_pairs`` SIS pairs of ``batch`` with their open slots in two SQL
    statements (the factories would take minutes for large queues). Creates the images."""
    from django.db import connection

    from annotation.models import Image

    n_images = images_per_side or images_for_pairs(n_pairs)
    start = Image.objects.count()
    Image.objects.bulk_create(
        [
            Image(
                dataset_id=batch.dataset_id,
                split_id=batch.split_id,
                key=f"bulk_{batch.id}_{start + i:09d}.jpg",
                file_path=f"bulk/{batch.id}/{start + i:09d}.jpg",
            )
            for i in range(n_images)
        ],
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH imgs AS (SELECT id FROM annotation_image WHERE key LIKE %(prefix)s),
            combos AS (
                SELECT a.id AS a, b.id AS b FROM imgs a JOIN imgs b ON a.id < b.id ORDER BY a.id, b.id LIMIT %(n)s
            ),
            new_pairs AS (
                INSERT INTO annotation_pair (dataset_id, split_id, batch_id, kind, sampling_method, image_a_id,
                                             image_b_id, ratings_required, priority, ratings_done, created_at)
                SELECT %(dataset)s, %(split)s, %(batch)s, 'SIS', 'i2i_csim', a, b, %(per_pair)s, %(priority)s, 0, now()
                FROM combos
                RETURNING id
            )
            INSERT INTO annotation_ratingslot (pair_id, dataset_id, index, state, kind, priority, pair_done,
                                               pair_complete)
            SELECT p.id, %(dataset)s, g, 'open', 'SIS', %(priority)s, 0, false
            FROM new_pairs p CROSS JOIN generate_series(0, %(per_pair)s - 1) g
            """,
            {
                "prefix": f"bulk\\_{batch.id}\\_%",
                "n": n_pairs,
                "dataset": batch.dataset_id,
                "split": batch.split_id,
                "batch": batch.id,
                "per_pair": batch.ratings_per_pair,
                "priority": batch.priority,
            },
        )
        cursor.execute("ANALYZE annotation_pair")
        cursor.execute("ANALYZE annotation_ratingslot")


# --- the service tests -------------------------------------------------------------------


@pytest.fixture(
    params=[
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("postgres-stepwise", marks=pytest.mark.postgres),
        "portable",
    ]
)
def engine(request, monkeypatch, settings):
    """postgres: the single-statement paths; postgres-stepwise: submissions always take
    the lock-then-write path the single statement falls back to; portable: the ORM
    paths of the embedded SQLite mode."""
    if request.param == "portable":
        settings.SQL_PATHS = "portable"
    elif request.param == "postgres-stepwise":
        monkeypatch.setattr(serving_routing, "_submit_fast", lambda **values: None)
    return request.param


def rater(kinds=("STS", "SIS", "SITS")):
    return UserFactory(roles=["rater"], qualified_for=list(kinds))


def claim(user, dataset, **kwargs):
    return slot_claim(rater=user, dataset=dataset.name, **kwargs)


def submit(user, dataset, slot_id, key, score=3.0, **values):
    """``submit_kwargs(key, score)`` through the policy; ``values`` replace its facts."""
    return rating_submit(rater=user, dataset=dataset.name, slot_id=slot_id, **{**submit_kwargs(key, score), **values})


# --- the API tests -----------------------------------------------------------------------


@pytest.fixture
def split():
    """A split with three SIS pairs queued."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    return split


# How client_for signs its clients in: "forced" (DRF's force_authenticate, so DRF's views
# answer every request) or "token" (a real API token, so a plain claim or submit takes the
# token fast path of annotation/apis/rating_cycle.py). A module that uses the ``auth_way``
# fixture runs each of its tests both ways: the same assertions hold both paths.
_AUTH_WAY = {"way": "forced"}


@pytest.fixture(params=["token", "forced"])
def auth_way(request):
    _AUTH_WAY["way"] = request.param
    yield request.param
    _AUTH_WAY["way"] = "forced"


def client_for(user) -> APIClient:
    client = APIClient()
    if _AUTH_WAY["way"] == "token":
        key = AuthToken.objects.create(user)[1]
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    else:
        client.force_authenticate(user)
    return client


def rater_client(kinds=("STS", "SIS", "SITS")):
    user = UserFactory(roles=["rater"], qualified_for=list(kinds))
    return user, client_for(user)


def rate_url(dataset, action, slot_id=None):
    if slot_id is None:
        return f"/api/rate/{dataset.name}/{action}/"
    return f"/api/rate/{dataset.name}/slots/{slot_id}/{action}/"


def api_claim(client, dataset, **body):
    return client.post(rate_url(dataset, "claim"), body, format="json")
