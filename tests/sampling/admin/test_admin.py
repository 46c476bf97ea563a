"""Admins create, upload, start and watch sampling batches in the Django admin."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Pair
from sampling.models import SamplingBatch
from tests.factories import UserFactory
from tests.sampling.conftest import pair_keys
from tests.support.rating_support import rate_pair
from tests.support.sampling_admin import CREATE_URL, form_data

pytestmark = pytest.mark.django_db

UPLOAD_URL = "/admin/sampling/samplingbatch/upload/"
LIST_URL = "/admin/sampling/samplingbatch/"


@pytest.fixture
def admin_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_the_create_page_lists_splits_with_their_spaces_and_ready_pivots(admin_client, small):
    page = admin_client.get(CREATE_URL).content.decode()
    for method in ("i2i_csim", "c2c_isim", "c2c_cocaption", "c2i_original", "c2i_intrasim"):
        assert f'name="use_{method}"' in page
        assert f'name="budget_{method}"' in page
    assert f"{small.dataset.name} / val" in page
    assert "txt (caption)" in page and "img (image)" in page
    assert "0 ready: SIS 0 of 0 rated, STS 0 of 0 rated" in page


def test_an_admin_creates_and_starts_a_batch_and_sees_its_progress(
    admin_client, small, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            CREATE_URL,
            form_data(small.split, use_i2i_csim="on", use_c2c_cocaption="on", budget_c2c_cocaption="2"),
        )
    assert response.status_code == 302
    batch = SamplingBatch.objects.get()
    assert batch.status == "succeeded", batch.error
    assert batch.pairs_per_method == {"i2i_csim": 2, "c2c_cocaption": 2}
    assert batch.created_by.is_superuser
    listing = admin_client.get(LIST_URL).content.decode()
    assert f'<progress value="{batch.progress_total}" max="{batch.progress_total}">' in listing
    assert "done: 4 pairs" in listing
    assert "4<small><br>i2i_csim: 2<br>c2c_cocaption: 2</small>" in listing
    detail = admin_client.get(f"{LIST_URL}{batch.pk}/change/").content.decode()
    assert "done: 4 pairs" in detail
    assert "search_s" in detail


def test_the_form_shows_why_a_batch_cannot_be_created(admin_client, small):
    response = admin_client.post(CREATE_URL, form_data(small.split, use_c2c_cocaption="on", budget_c2c_cocaption="9"))
    assert response.status_code == 200
    assert "c2c_cocaption: budget 9 is more than the 4 fresh pairs" in response.content.decode()
    response = admin_client.post(CREATE_URL, form_data(small.split, use_c2i_intrasim="on"))
    assert "c2i_intrasim derives pairs from rated SIS and STS pivots" in response.content.decode()
    assert SamplingBatch.objects.count() == 0


def test_pivots_ready_for_phase_two_are_counted_on_the_form(admin_client, small, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(CREATE_URL, form_data(small.split, use_i2i_csim="on", ratings_per_pair="2"))
    first, second = Pair.objects.order_by("id")
    rate_pair(first, [4.0, 5.0])
    rate_pair(second, [2.0])
    assert "1 ready: SIS 1 of 2 rated, STS 0 of 0 rated" in admin_client.get(CREATE_URL).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(CREATE_URL, form_data(small.split, use_c2i_intrasim="on"))
    phase2 = SamplingBatch.objects.order_by("id").last()
    assert phase2.status == "succeeded", phase2.error
    assert phase2.pairs_per_method == {"c2i_intrasim": 1}  # one pair per pivot


def test_the_start_action_starts_a_created_batch_and_refuses_a_finished_one(
    admin_client, small, django_capture_on_commit_callbacks
):
    admin_client.post(CREATE_URL, form_data(small.split, use_c2c_cocaption="on", start=""))
    batch = SamplingBatch.objects.get()
    assert batch.status == "pending"
    assert "data-reload-seconds" in admin_client.get(LIST_URL).content.decode()  # reloads while it runs
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(LIST_URL, {"action": "start_batches", "_selected_action": [batch.pk]})
    batch.refresh_from_db()
    assert batch.status == "succeeded"
    assert len(pair_keys(batch)) == 4
    response = admin_client.post(LIST_URL, {"action": "start_batches", "_selected_action": [batch.pk]}, follow=True)
    assert "already succeeded with 4 pairs" in response.content.decode()
    assert "data-reload-seconds" not in response.content.decode()


def test_an_admin_uploads_a_pair_list(admin_client, small, django_capture_on_commit_callbacks, tmp_path):
    path = tmp_path / "sts_val.csv"
    path.write_text(
        f"caption1,caption2,agg_score,sampling_method\n{small.caption_key(0)},{small.caption_key(5)},2.0,c2c_isim\n",
        encoding="utf-8",
    )
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            UPLOAD_URL, {"split": small.split.pk, "file": handle, "ratings_per_pair": 5, "priority": 0, "start": "on"}
        )
    assert response.status_code == 302
    batch = SamplingBatch.objects.get()
    assert batch.pairs_per_method == {"c2c_isim": 1}
    bad = tmp_path / "bad.csv"
    bad.write_text(f"caption1,caption2,sampling_method\n{small.caption_key(0)},nope,c2c_isim\n", encoding="utf-8")
    with bad.open("rb") as handle:
        response = admin_client.post(
            UPLOAD_URL, {"split": small.split.pk, "file": handle, "ratings_per_pair": 5, "priority": 0}
        )
    assert "1 id(s) are not items of split" in response.content.decode()
    assert SamplingBatch.objects.count() == 1


def test_a_pair_list_whose_file_name_is_too_long_to_store_is_a_form_error(admin_client, small, settings):
    settings.UPLOAD_MAX_FILENAME_CHARS = 20
    upload = SimpleUploadedFile("sts_val_" + "x" * 20 + ".csv", b"caption1,caption2,sampling_method\na,b,\n")
    response = admin_client.post(
        UPLOAD_URL, {"split": small.split.pk, "file": upload, "ratings_per_pair": 5, "priority": 0}
    )
    assert response.status_code == 200
    assert "is 32 characters (32 bytes); the limit is UPLOAD_MAX_FILENAME_CHARS=20" in response.content.decode()
    assert SamplingBatch.objects.count() == 0
    uploads = settings.DATA_DIR / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())


@pytest.mark.django_db(transaction=True)
def test_a_batch_done_by_the_time_the_page_answers_is_said_to_have_succeeded(admin_client, small):
    """Embedded mode runs a started batch as its creation commits (no test transaction
    here holds it back), so the message says it succeeded, with its pairs, not "started"."""
    response = admin_client.post(CREATE_URL, form_data(small.split, use_c2c_cocaption="on"), follow=True)
    batch = SamplingBatch.objects.get()
    assert batch.status == "succeeded", batch.error
    page = response.content.decode()
    assert f"Batch #{batch.pk} succeeded: 4 pairs queued." in page and "started" not in page.split("messagelist")[1]


def test_a_batch_created_without_starting_says_how_to_start_it(admin_client, small):
    response = admin_client.post(CREATE_URL, form_data(small.split, use_c2c_cocaption="on", start=""), follow=True)
    batch = SamplingBatch.objects.get()
    assert f"Batch #{batch.pk} created (start it with the action below)." in response.content.decode()
