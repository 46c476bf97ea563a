"""A batch queued after the gold upload never queues a pair equal to an active gold pair
(in either order): a rater who rated it as gold would meet it again as an ordinary pair,
and could tell the two apart. Such pairs are left out and counted, as already queued
pairs of an uploaded list are."""

from __future__ import annotations

import itertools

import pytest

from annotation.models import GoldPair, Pair, TaskKind
from annotation.quality.gold.upload import gold_pairs_upload
from tests.support import queue_support

pytestmark = pytest.mark.django_db
engine = queue_support.engine


def _gold(small, tmp_path, rows: list[tuple[int, int]]) -> None:
    path = tmp_path / "gold.csv"
    lines = ["image1,image2,gold_score"] + [f"{small.image_key(a)},{small.image_key(b)},2.0" for a, b in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert gold_pairs_upload(dataset=small.dataset, path=path) == len(rows)


def _queued_equal_to_gold(dataset) -> int:
    gold = set(
        GoldPair.objects.filter(dataset=dataset, kind=TaskKind.SIS, active=True).values_list("image_a", "image_b")
    )
    pairs = Pair.objects.filter(dataset=dataset, kind=TaskKind.SIS).values_list("image_a", "image_b")
    return sum(1 for a, b in pairs if (a, b) in gold or (b, a) in gold)


def test_an_uploaded_list_leaves_out_and_counts_pairs_equal_to_gold(
    engine, admin_api, small, tmp_path, django_capture_on_commit_callbacks
):
    _gold(small, tmp_path, [(0, 1)])
    path = tmp_path / "sis_val.csv"
    path.write_text(
        "image1,image2,sampling_method\n"
        f"{small.image_key(1)},{small.image_key(0)},i2i_csim\n"
        f"{small.image_key(0)},{small.image_key(2)},i2i_csim\n",
        encoding="utf-8",
    )
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/sampling/batches/upload/",
            {"dataset": small.dataset.name, "split": "val", "file": handle},
            format="multipart",
        )
    assert response.status_code == 201, response.json()
    batch = admin_api.get(f"/api/sampling/batches/{response.json()['id']}/").json()
    assert batch["status"] == "succeeded", batch
    assert batch["pairs_per_method"] == {"i2i_csim": 1}
    assert (batch["stats"]["gold_pairs_left_out"], batch["stats"]["already_queued"]) == (1, 0)
    assert _queued_equal_to_gold(small.dataset) == 0


def test_a_sampled_batch_never_queues_a_pair_equal_to_gold(
    engine, admin_api, small, tmp_path, django_capture_on_commit_callbacks
):
    # Every image pair of the split is gold: similarity sampling has nothing left to queue.
    _gold(small, tmp_path, list(itertools.combinations(range(4), 2)))
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/sampling/batches/",
            {
                "dataset": small.dataset.name,
                "split": "val",
                "methods": {"i2i_csim": None, "c2c_cocaption": 3},
                "k": 1,
                "seed": 4,
            },
            format="json",
        )
    assert response.status_code == 201, response.json()
    batch = admin_api.get(f"/api/sampling/batches/{response.json()['id']}/").json()
    assert batch["status"] == "succeeded", batch
    assert batch["pairs_per_method"] == {"i2i_csim": 0, "c2c_cocaption": 3}
    assert _queued_equal_to_gold(small.dataset) == 0
