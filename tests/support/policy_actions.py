"""The rating policy through the API: a two-kind dataset, joining it as a participant, claiming,
submitting and rating n items, gold SIS pairs."""

from django.test import Client

from annotation.models import QualitySettings
from annotation.people.crowd.links import campaign_link_create
from annotation.quality.gold.upload import gold_pairs_upload
from tests.factories import ImageFactory, SplitFactory
from tests.support.queue_support import queue_pairs

PID = "64f0a1b2c3d4e5f607182930"


SUBMISSION = {"score": 2.5, "time_on_item_ms": 4000, "time_to_first_move_ms": 500, "adjustments": 1}


def two_kind_dataset(*, gold_one_in: int = 0, n_pairs: int = 8):
    """SIS and STS pairs to rate, two ratings each, and the gold rate given."""
    split = SplitFactory()
    queue_pairs(split=split, kind="SIS", n_pairs=n_pairs, ratings_per_pair=2)
    queue_pairs(split=split, kind="STS", n_pairs=n_pairs, ratings_per_pair=2)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=gold_one_in)
    return split.dataset


def join(dataset, *, kinds, quota, pid=PID) -> tuple[Client, object]:
    """Open a campaign link of ``dataset`` as a participant would; returns their signed-in
    browser and their user."""
    link = campaign_link_create(dataset=dataset, name=f"study {pid}", kinds=kinds, quota=quota, completion_code="C-1")
    browser = Client()
    assert browser.get(f"/join/{link.token}/", {"PROLIFIC_PID": pid}).status_code == 302
    return browser, link.participants.get().user


def claim(client, dataset, kind=None):
    body = {"kind": kind} if kind else {}
    return client.post(f"/api/rate/{dataset.name}/claim/", body, content_type="application/json")


def submit(client, dataset, slot_id: int, key: str):
    url = f"/api/rate/{dataset.name}/slots/{slot_id}/submit/"
    return client.post(url, {**SUBMISSION, "idempotency_key": key}, content_type="application/json")


def rate_n(browser, dataset, kind: str, n: int) -> None:
    for step in range(n):
        held = claim(browser, dataset, kind)
        assert held.status_code == 200, held.content
        assert submit(browser, dataset, held.json()["slot_id"], f"{kind}-{step}").status_code == 201


def gold_sis_pairs(dataset, n: int, tmp_path) -> None:
    split = dataset.splits.first()
    images = [ImageFactory(split=split, dataset=dataset) for _ in range(2 * n)]
    rows = [f"{images[2 * i].key},{images[2 * i + 1].key},{i % 5}.0," for i in range(n)]
    path = tmp_path / "gold.csv"
    path.write_text("image1,image2,gold_score,explanation\n" + "\n".join(rows) + "\n")
    gold_pairs_upload(dataset=dataset, path=path)
