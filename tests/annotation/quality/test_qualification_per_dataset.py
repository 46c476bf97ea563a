"""Qualifications hold per dataset and kind : a quiz passed or a
quiz-free campaign link joined in one dataset grants the kind there only; an admin's grant
without a dataset holds everywhere; the migration keeps today's grants for the datasets
that exist."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import GoldPair, Qualification, QualitySettings
from annotation.people.crowd.links import campaign_link_create
from annotation.quality.gold.upload import gold_pairs_upload
from annotation.quality.quiz import quiz_set
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support.migration_support import migrate_to, migrate_to_latest
from tests.support.queue_support import client_for, queue_pairs
from tests.support.rating_support import db_id

pytestmark = pytest.mark.django_db

PID = "5f0c2d9e8b7a6f5e4d3c2b1a"


def sis_dataset(tmp_path, *, quiz: bool):
    """A dataset with SIS pairs to rate (gold off), and with ``quiz`` a five-question SIS
    quiz asked one at a time (the smallest pool for that)."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=3)
    QualitySettings.objects.create(dataset=split.dataset, gold_one_in=0, quiz_length=1)
    if quiz:
        images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(10)]
        path = tmp_path / f"quiz-{split.dataset.pk}.csv"
        rows = [f"{images[2 * i].key},{images[2 * i + 1].key},{i}.0,level" for i in range(5)]
        path.write_text("image1,image2,gold_score,explanation\n" + "\n".join(rows) + "\n")
        gold_pairs_upload(dataset=split.dataset, path=path)
        ids = list(GoldPair.objects.filter(dataset=split.dataset).values_list("pk", flat=True))
        quiz_set(dataset_id=split.dataset.pk, gold_pair_ids=ids, in_quiz=True)
    return split.dataset


def pass_quiz(client, dataset) -> None:
    """Answer every question of the SIS quiz at its reference, through the API."""
    state = client.post(f"/api/rate/{dataset.name}/quiz/sis/", {}, format="json").json()
    step = 0
    while state["gold_pair_id"] is not None:
        answer = {
            "gold_pair_id": state["gold_pair_id"],
            "score": GoldPair.objects.get(pk=db_id("question", state["gold_pair_id"])).gold_score,
            "time_on_item_ms": 4000,
            "time_to_first_move_ms": 700,
            "adjustments": 2,
            "idempotency_key": f"quiz-{dataset.pk}-{step}",
        }
        response = client.post(f"/api/rate/{dataset.name}/quiz/sis/answer/", answer, format="json")
        assert response.status_code == 201, response.content
        state = response.json()["state"]
        step += 1
    assert state["result"]["passed"] and state["qualified"]


def claim(client, dataset):
    return client.post(f"/api/rate/{dataset.name}/claim/", {"kind": "SIS"}, format="json")


def test_a_quiz_passed_in_one_dataset_does_not_open_the_kind_in_another_whose_kind_needs_its_quiz(tmp_path):
    first, second = sis_dataset(tmp_path, quiz=True), sis_dataset(tmp_path, quiz=True)
    newcomer = UserFactory(roles=["rater"])
    client = client_for(newcomer)
    assert claim(client, first).status_code == 403
    pass_quiz(client, first)
    assert claim(client, first).status_code == 200
    refused = claim(client, second)
    assert refused.status_code == 403, refused.content
    assert repr(second.name) in refused.json()["detail"]
    progress = client.get(f"/api/rate/{second.name}/progress/").json()
    assert progress["kinds"] == []


def test_a_quiz_free_link_grants_its_kind_in_its_own_dataset_only(tmp_path):
    free, gated = sis_dataset(tmp_path, quiz=False), sis_dataset(tmp_path, quiz=True)
    link = campaign_link_create(dataset=free, name="pilot", kinds=["SIS"], quota=3, completion_code="C-1")
    browser = Client()
    joined = browser.get(f"/join/{link.token}/", {"PROLIFIC_PID": PID})
    assert joined.status_code == 302
    assert (
        browser.post(f"/api/rate/{free.name}/claim/", {"kind": "SIS"}, content_type="application/json").status_code
        == 200
    )
    refused = browser.post(f"/api/rate/{gated.name}/claim/", {"kind": "SIS"}, content_type="application/json")
    assert refused.status_code == 403, refused.content
    grants = list(Qualification.objects.values_list("dataset_id", "kind"))
    assert grants == [(free.pk, "SIS")]


def test_an_admin_grant_without_a_dataset_holds_in_every_dataset_and_one_with_a_dataset_there_only(tmp_path):
    first, second = sis_dataset(tmp_path, quiz=False), sis_dataset(tmp_path, quiz=False)
    admin = UserFactory(roles=["admin"], is_staff=True)
    rater = UserFactory(roles=["rater"])
    api = APIClient()
    api.force_authenticate(admin)
    url = f"/api/raters/{rater.username}/qualifications/"
    put = api.put(url, {"kinds": ["SIS"], "dataset": first.name}, format="json")
    assert put.json() == {"kinds": ["SIS"], "dataset": first.name}
    assert api.get(url, {"dataset": first.name}).json() == {"kinds": ["SIS"], "dataset": first.name}
    assert api.get(url).json() == {"kinds": [], "dataset": None}
    assert api.get(url, {"dataset": "nowhere"}).status_code == 404
    rater_api = client_for(rater)
    assert claim(rater_api, first).status_code == 200
    assert claim(rater_api, second).status_code == 403
    assert api.put(url, {"kinds": ["SIS", "STS"]}, format="json").json() == {"kinds": ["SIS", "STS"], "dataset": None}
    assert claim(rater_api, second).status_code == 200
    # Setting the global kinds leaves the dataset's own grant alone.
    assert api.put(url, {"kinds": []}, format="json").json()["kinds"] == []
    assert api.get(url, {"dataset": first.name}).json()["kinds"] == ["SIS"]


BEFORE = [("annotation", "0014_model_topk")]
AFTER = [("annotation", "0015_qualification_per_dataset")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_grant_in_every_existing_dataset():
    old = migrate_to(BEFORE)
    Dataset = old.get_model("annotation", "Dataset")
    datasets = [Dataset.objects.create(name=name, image_url_prefix="https://x/") for name in ("coco", "flickr")]
    users = old.get_model("auth", "User")
    ana, ben = users.objects.create(username="ana"), users.objects.create(username="ben")
    old_grants = old.get_model("annotation", "Qualification")
    for rater, kind in [(ana, "STS"), (ana, "SIS"), (ben, "SITS")]:
        old_grants.objects.create(rater=rater, kind=kind)
    new = migrate_to(AFTER).get_model("annotation", "Qualification")
    rows = sorted(new.objects.values_list("rater_id", "dataset_id", "kind"))
    expected = sorted(
        (rater.pk, ds.pk, kind) for rater, kind in [(ana, "STS"), (ana, "SIS"), (ben, "SITS")] for ds in datasets
    )
    assert rows == expected
    assert not new.objects.filter(dataset__isnull=True).exists()
    migrate_to_latest()
