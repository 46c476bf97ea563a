"""Uploaded files do not outlive their jobs: gone when a job succeeds, kept
UPLOAD_KEEP_FAILED_DAYS when it fails, then pruned; folders no job refers to go a day
after they were made."""

import io
import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.catalog.tasks import prune_uploads
from annotation.catalog.upload_cleanup import uploads_prune
from annotation.catalog.uploads import KARPATHY, upload_store, uploads_root
from annotation.models import Job, JobStatus, UploadState
from annotation.runs.jobs import job_create
from tests.support.karpathy import image_entry
from tests.support.uploads import stored_names

pytestmark = pytest.mark.django_db


def import_karpathy(api, name: str, content: bytes, file_name: str) -> int:
    response = api.post(
        "/api/imports/karpathy/",
        {"file": SimpleUploadedFile(file_name, content), "name": name, "image_url_prefix": "https://i/"},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def import_embeddings(api, dataset: str, space: str, ids: list[str], prefix: str) -> int:
    vectors = io.BytesIO()
    np.save(vectors, np.random.default_rng(0).normal(size=(len(ids), 4)))
    response = api.post(
        "/api/imports/embeddings/",
        {
            "dataset": dataset,
            "space": space,
            "modality": "caption",
            "vectors": SimpleUploadedFile(f"{prefix}.npy", vectors.getvalue()),
            "ids": SimpleUploadedFile(f"{prefix}.txt", "".join(f"{key}\n" for key in ids).encode()),
        },
        format="multipart",
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def karpathy(*cocoids: int) -> bytes:
    return json.dumps({"images": [image_entry(c, sentids=(c * 10,)) for c in cocoids]}).encode()


def test_the_upload_folder_holds_only_failed_jobs_files_and_those_until_the_prune(
    admin_api, settings, django_capture_on_commit_callbacks
):
    settings.UPLOAD_KEEP_FAILED_DAYS = 7
    with django_capture_on_commit_callbacks(execute=True):
        ok_a = import_karpathy(admin_api, "a", karpathy(1, 2), "a.json")
        bad_json = import_karpathy(admin_api, "b", b"{oops", "b.json")
        ok_c = import_karpathy(admin_api, "c", karpathy(3), "c.json")
        ok_vectors = import_embeddings(admin_api, "a", "s1", ["COCO_val2014:sentid:10", "COCO_val2014:sentid:20"], "ok")
        bad_ids = import_embeddings(admin_api, "a", "s2", ["COCO_val2014:sentid:10", "nope"], "bad")
    ok_a, bad_json, ok_c, ok_vectors, bad_ids = (
        admin_api.get(f"/api/jobs/{job_id}/").json() for job_id in (ok_a, bad_json, ok_c, ok_vectors, bad_ids)
    )
    assert [job["status"] for job in (ok_a, bad_json, ok_c, ok_vectors, bad_ids)] == [
        "succeeded",
        "failed",
        "succeeded",
        "succeeded",
        "failed",
    ]
    for job in (ok_a, ok_c, ok_vectors):
        assert job["upload_state"] == "removed"
        assert job["upload_removed_at"] is not None
    for job in (bad_json, bad_ids):
        assert (job["upload_state"], job["upload_removed_at"]) == ("stored", None)
    assert stored_names() == ["b.json", "bad.npy", "bad.txt"]

    # The beat task now, and the prune a minute before the failed ones are due, keep them.
    assert prune_uploads.delay().get() == {"runs": [], "folders": []}
    almost = uploads_prune(now=timezone.now() + timedelta(days=7, minutes=-1))
    assert (almost.runs, almost.folders) == ([], [])
    assert stored_names() == ["b.json", "bad.npy", "bad.txt"]

    later = timezone.now() + timedelta(days=7, minutes=1)
    summary = uploads_prune(now=later)
    assert summary.runs == [f"job #{bad_json['id']}", f"job #{bad_ids['id']}"]
    assert stored_names() == []
    for job in (bad_json, bad_ids):
        shown = admin_api.get(f"/api/jobs/{job['id']}/").json()
        assert shown["upload_state"] == "removed"
        assert Job.objects.get(pk=job["id"]).upload_removed_at == later
    assert list(uploads_root().iterdir()) == []


def test_unreferenced_folders_go_after_a_day_and_nothing_else_is_touched(settings):
    orphan = Path(upload_store(SimpleUploadedFile("crash.json", b"{}"), kind=KARPATHY))
    pending_path = upload_store(SimpleUploadedFile("pending.json", b"{}"), kind=KARPATHY)
    pending = job_create(kind=Job.Kind.IMPORT_KARPATHY, params={"path": pending_path, "name": "p"})
    assert pending.upload_state == UploadState.STORED
    # A job that succeeded but whose runner died before removing its files.
    done_path = upload_store(SimpleUploadedFile("done.json", b"{}"), kind=KARPATHY)
    done = job_create(kind=Job.Kind.IMPORT_KARPATHY, params={"path": done_path, "name": "d"})
    Job.objects.filter(pk=done.pk).update(status=JobStatus.SUCCEEDED, finished_at=timezone.now())
    (uploads_root() / "not-ours").mkdir()
    (uploads_root() / "README").write_text("left alone")

    young = uploads_prune()
    assert (young.runs, young.folders) == ([f"job #{done.pk}"], [])
    assert stored_names() == ["README", "crash.json", "pending.json"]

    old = uploads_prune(now=timezone.now() + timedelta(days=1, seconds=1))
    assert old.folders == [orphan.parent.name]
    assert stored_names() == ["README", "pending.json"]
    assert (uploads_root() / "not-ours").is_dir()
    pending.refresh_from_db()
    assert pending.upload_state == UploadState.STORED


def test_a_cli_import_leaves_the_users_own_file_alone(tmp_path):
    path = tmp_path / "dataset_coco.json"
    path.write_bytes(karpathy(5))
    call_command("import_karpathy", str(path), "--name", "cli", "--image-url-prefix", "https://i/")
    job = Job.objects.get()
    assert (job.status, job.upload_state) == (JobStatus.SUCCEEDED, UploadState.NONE)
    assert path.is_file()
    path.write_bytes(b"{oops")
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command("import_karpathy", str(path), "--name", "cli2", "--image-url-prefix", "https://i/")
    assert uploads_prune(now=timezone.now() + timedelta(days=30)).runs == []
    assert path.is_file()


def test_the_database_refuses_an_upload_state_that_does_not_add_up():
    job = job_create(kind=Job.Kind.EXPORT_DATASET, params={})
    for values in ({"upload_state": UploadState.REMOVED}, {"upload_removed_at": timezone.now()}, {"upload_state": "x"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Job.objects.filter(pk=job.pk).update(**values)
