"""An uploaded pair list is bounded in size, removed when its batch succeeds, kept
UPLOAD_KEEP_FAILED_DAYS when it fails; a batch whose list was pruned says so when
started again."""

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.catalog.upload_cleanup import uploads_prune
from annotation.catalog.uploads import KARPATHY, upload_store
from annotation.models import Job, JobStatus, UploadState
from annotation.runs.jobs import job_create
from sampling.models import SamplingBatch
from sampling.services import sampling_batch_start
from tests.factories import UserFactory
from tests.support.uploads import stored_names

pytestmark = pytest.mark.django_db

UPLOAD_URL = "/api/sampling/batches/upload/"


def sis_list(small, *rows: tuple[int, int]) -> bytes:
    lines = ["image1,image2,sampling_method", *(f"{small.image_key(a)},{small.image_key(b)},i2i_csim" for a, b in rows)]
    return ("\n".join(lines) + "\n").encode()


def post_list(api, small, content: bytes, *, start: bool = True):
    return api.post(
        UPLOAD_URL,
        {
            "dataset": small.dataset.name,
            "split": "val",
            "file": SimpleUploadedFile("sis_val.csv", content),
            "start": start,
        },
        format="multipart",
    )


def test_a_pair_list_over_its_limit_is_a_413_and_leaves_nothing(admin_api, small, settings, tmp_path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    content = sis_list(small, (0, 1), (2, 3))
    settings.UPLOAD_MAX_PAIRLIST_BYTES = len(content) - 1
    response = post_list(admin_api, small, content)
    assert response.status_code == 413
    assert response.json() == {
        "detail": f"sis_val.csv is larger than the {len(content) - 1} bytes allowed for pair list uploads "
        f"(setting UPLOAD_MAX_PAIRLIST_BYTES={len(content) - 1})",
        "code": "upload_too_large",
    }
    assert SamplingBatch.objects.count() == 0
    assert stored_names() == []
    assert [p for p in tmp_path.iterdir() if p.is_file()] == []


def test_the_admin_upload_form_and_the_command_refuse_a_list_over_the_limit(client, small, settings, tmp_path):
    content = sis_list(small, (0, 1))
    settings.UPLOAD_MAX_PAIRLIST_BYTES = 10
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    response = client.post(
        "/admin/sampling/samplingbatch/upload/",
        {"split": small.split.pk, "file": SimpleUploadedFile("sis_val.csv", content), "ratings_per_pair": 5},
    )
    assert response.status_code == 200
    assert "sis_val.csv is larger than the 10 bytes allowed for pair list uploads" in response.content.decode()
    path = tmp_path / "sis_val.csv"
    path.write_bytes(content)
    with pytest.raises(CommandError, match=r"is \d+ bytes, more than the 10 bytes allowed .*UPLOAD_MAX_PAIRLIST_BYTES"):
        call_command("sample", "--dataset", small.dataset.name, "--split", "val", "--upload", str(path))
    assert SamplingBatch.objects.count() == 0
    assert stored_names() == []


def test_a_batch_that_succeeds_removes_its_list_at_once(admin_api, small, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_list(admin_api, small, sis_list(small, (0, 1)))
    body = admin_api.get(f"/api/sampling/batches/{response.json()['id']}/").json()
    assert body["status"] == "succeeded"
    assert body["upload_state"] == "removed"
    assert body["upload_removed_at"] is not None
    assert stored_names() == []


def test_the_command_removes_its_copy_and_never_the_users_file(small, tmp_path):
    path = tmp_path / "sis.csv"
    path.write_bytes(sis_list(small, (1, 2)))
    call_command("sample", "--dataset", small.dataset.name, "--split", "val", "--upload", str(path), stdout=StringIO())
    batch = SamplingBatch.objects.get()
    assert (batch.status, batch.upload_state) == (JobStatus.SUCCEEDED, UploadState.REMOVED)
    assert stored_names() == []
    assert path.is_file()


def failed_batch(admin_api, small, django_capture_on_commit_callbacks) -> SamplingBatch:
    """An uploaded batch that fails when it runs: its stored list changed after the checks."""
    created = post_list(admin_api, small, sis_list(small, (0, 1)), start=False).json()
    batch = SamplingBatch.objects.get(pk=created["id"])
    Path(batch.upload_path).write_text("image1,image2,sampling_method\nnope,gone,\n", encoding="utf-8")
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_api.post(f"/api/sampling/batches/{batch.pk}/start/").status_code == 202
    batch.refresh_from_db()
    assert batch.status == JobStatus.FAILED, batch.error
    assert "are not items of split" in batch.error
    return batch


def test_a_failed_batch_keeps_its_list_then_cannot_restart_once_pruned(
    admin_api, small, settings, django_capture_on_commit_callbacks
):
    settings.UPLOAD_KEEP_FAILED_DAYS = 7
    batch = failed_batch(admin_api, small, django_capture_on_commit_callbacks)
    assert batch.upload_state == UploadState.STORED
    assert stored_names() == ["sis_val.csv"]
    assert uploads_prune(now=timezone.now() + timedelta(days=6)).runs == []
    summary = uploads_prune(now=timezone.now() + timedelta(days=8))
    assert summary.runs == [f"sampling batch #{batch.pk}"]
    assert stored_names() == []
    assert admin_api.get(f"/api/sampling/batches/{batch.pk}/").json()["upload_state"] == "removed"

    response = admin_api.post(f"/api/sampling/batches/{batch.pk}/start/")
    assert response.status_code == 409
    assert response.json() == {
        "detail": f"batch #{batch.pk} cannot start again: the uploaded file (sis_val.csv) was removed after 8 days "
        "(UPLOAD_KEEP_FAILED_DAYS=7); upload it again",
        "code": "upload_removed",
    }
    batch.refresh_from_db()
    assert batch.status == JobStatus.FAILED


def test_a_failed_batch_started_again_keeps_its_list_through_the_prune(
    admin_api, small, django_capture_on_commit_callbacks
):
    batch = failed_batch(admin_api, small, django_capture_on_commit_callbacks)
    sampling_batch_start(batch=batch, enqueue=False)
    assert uploads_prune(now=timezone.now() + timedelta(days=30)).runs == []
    batch.refresh_from_db()
    assert (batch.status, batch.upload_state) == (JobStatus.PENDING, UploadState.STORED)
    assert stored_names() == ["sis_val.csv"]


def test_the_admin_pages_show_the_upload_state_of_a_batch_and_a_job(
    client, admin_api, small, django_capture_on_commit_callbacks
):
    batch = failed_batch(admin_api, small, django_capture_on_commit_callbacks)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    page = client.get(f"/admin/sampling/samplingbatch/{batch.pk}/change/").content.decode()
    assert "stored under DATA_DIR/uploads" in page
    uploads_prune(now=timezone.now() + timedelta(days=8))
    page = client.get(f"/admin/sampling/samplingbatch/{batch.pk}/change/").content.decode()
    assert "removed (the run succeeded, or failed UPLOAD_KEEP_FAILED_DAYS ago)" in page
    stored = upload_store(SimpleUploadedFile("d.json", b"{}"), kind=KARPATHY)
    job = job_create(kind=Job.Kind.IMPORT_KARPATHY, params={"path": stored, "name": "x"})
    page = client.get(f"/admin/annotation/job/{job.pk}/change/").content.decode()
    assert "Upload state" in page and "stored under DATA_DIR/uploads" in page
