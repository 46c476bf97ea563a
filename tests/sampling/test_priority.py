"""A batch's priority can change after it was created, and the queue follows it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.core.errors import NotFound
from annotation.models import Pair, RatingSlot
from annotation.serving import slot_claim
from sampling import services as sampling_services
from sampling.errors import SamplingInputError
from sampling.models import SamplingBatch
from sampling.runs.batch import sampling_batch_run
from sampling.services import sampling_batch_create, sampling_batch_set_priority
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def batch_of(built, methods, priority=0):
    batch = sampling_batch_create(
        dataset_name=built.dataset.name, split_name=built.split.name, methods=methods, k=1, priority=priority
    )
    batch = sampling_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.error
    return batch


def priorities(batch) -> tuple[set, set]:
    return (
        set(Pair.objects.filter(batch=batch).values_list("priority", flat=True)),
        set(RatingSlot.objects.filter(pair__batch=batch).values_list("priority", flat=True)),
    )


def test_raising_a_batchs_priority_puts_its_pairs_first_in_the_queue(small):
    first = batch_of(small, {"c2c_cocaption": None}, priority=1)
    second = batch_of(small, {"c2i_original": None}, priority=5)
    rater = UserFactory(roles=["rater"], qualified_for=["STS", "SITS"])
    assert Pair.objects.get(pk=slot_claim(rater=rater, dataset=small.dataset.name).pair_id).batch_id == second.pk

    changed = sampling_batch_set_priority(batch_id=first.pk, priority=9)
    assert changed.priority == 9
    assert priorities(first) == ({9}, {9})
    assert priorities(second) == ({5}, {5})
    newcomer = UserFactory(roles=["rater"], qualified_for=["STS", "SITS"])
    assert Pair.objects.get(pk=slot_claim(rater=newcomer, dataset=small.dataset.name).pair_id).batch_id == first.pk


def test_a_large_batch_changes_in_several_short_transactions(small, monkeypatch):
    batch = batch_of(small, {"c2i_original": None})  # 8 pairs
    monkeypatch.setattr("sampling.services.PRIORITY_CHUNK", 3)
    with CaptureQueriesContext(connection) as queries:
        sampling_batch_set_priority(batch_id=batch.pk, priority=-4)
    pair_updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "annotation_pair"')]
    assert len(pair_updates) == 3  # 3 + 3 + 2 pairs, each chunk with its slots in its own transaction
    assert priorities(batch) == ({-4}, {-4})


def test_each_chunk_applies_the_batchs_priority_as_it_is_then(small, monkeypatch):
    # Two changes overlap: the other's row update (to 9) commits while this one (to 5)
    # is between chunks; this one's remaining chunks apply 9, and so does the other's loop.
    batch = batch_of(small, {"c2i_original": None})  # 8 pairs
    monkeypatch.setattr("sampling.services.PRIORITY_CHUNK", 3)
    real = sampling_services.pairs_set_priority
    calls = []

    def then_another_change_commits(*, pair_ids, priority):
        real(pair_ids=pair_ids, priority=priority)
        calls.append(priority)
        if len(calls) == 1:
            SamplingBatch.objects.filter(pk=batch.pk).update(priority=9)

    monkeypatch.setattr(sampling_services, "pairs_set_priority", then_another_change_commits)
    sampling_batch_set_priority(batch_id=batch.pk, priority=5)
    assert calls == [5, 9, 9]
    sampling_services._apply_batch_priority(batch.pk)  # the other change's own loop
    assert priorities(batch) == ({9}, {9})


@pytest.mark.parametrize("bad", [1_000_001, -1_000_001, 2.5, "7", True])
def test_a_bad_priority_is_refused_and_nothing_changes(small, bad):
    batch = batch_of(small, {"c2c_cocaption": None}, priority=2)
    with pytest.raises(SamplingInputError, match="priority must be a whole number from -1,000,000 to 1,000,000"):
        sampling_batch_set_priority(batch_id=batch.pk, priority=bad)
    batch.refresh_from_db()
    assert batch.priority == 2
    assert priorities(batch) == ({2}, {2})


def test_an_unknown_batch_is_not_found():
    with pytest.raises(NotFound, match="no sampling batch #404"):
        sampling_batch_set_priority(batch_id=404, priority=1)


def test_a_priority_set_while_the_batch_samples_reaches_its_pairs(small):
    batch = sampling_batch_create(
        dataset_name=small.dataset.name, split_name=small.split.name, methods={"c2c_cocaption": None}, priority=1
    )

    def change_priority_before_the_write(done, total, message):
        # What sampling_batch_set_priority does first while another process samples.
        if message.startswith("writing up to"):
            SamplingBatch.objects.filter(pk=batch.pk).update(priority=6)

    batch = sampling_batch_run(batch_id=batch.pk, echo=change_priority_before_the_write)
    assert batch.status == "succeeded", batch.error
    assert priorities(batch) == ({6}, {6})


def test_admins_change_the_priority_through_the_api(small):
    batch = batch_of(small, {"c2c_cocaption": None})
    admin = APIClient()
    admin.force_authenticate(UserFactory(roles=["admin"]))
    response = admin.patch(f"/api/sampling/batches/{batch.pk}/", {"priority": 3}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["priority"] == 3
    assert priorities(batch) == ({3}, {3})

    bad = admin.patch(f"/api/sampling/batches/{batch.pk}/", {"priority": 10**7}, format="json")
    assert bad.status_code == 400
    assert bad.json()["detail"] == "priority: Ensure this value is less than or equal to 1000000."
    missing = admin.patch(f"/api/sampling/batches/{batch.pk}/", {}, format="json")
    assert (missing.status_code, missing.json()["detail"]) == (400, "priority: This field is required.")
    rater = APIClient()
    rater.force_authenticate(UserFactory(roles=["rater"]))
    assert rater.patch(f"/api/sampling/batches/{batch.pk}/", {"priority": 1}, format="json").status_code == 403
    assert priorities(batch) == ({3}, {3})


def test_admins_change_the_priority_on_the_batch_page(small, admin_client, django_capture_on_commit_callbacks):
    batch = batch_of(small, {"c2c_cocaption": None})
    url = f"/admin/sampling/samplingbatch/{batch.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    assert 'name="priority"' in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"priority": "8"}, follow=True)
    assert response.status_code == 200
    assert f"Batch #{batch.pk} and its queued pairs now have priority 8." in response.content.decode()
    assert priorities(batch) == ({8}, {8})
    assert SamplingBatch.objects.get(pk=batch.pk).priority == 8
    refused = admin_client.post(url, {"priority": "5000000"})
    assert refused.status_code == 200
    assert "less than or equal to 1000000" in refused.content.decode()
    assert priorities(batch) == ({8}, {8})
