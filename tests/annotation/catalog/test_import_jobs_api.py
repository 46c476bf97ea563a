"""Imports reachable by admins through the API and the Django admin, as background jobs."""

import io
import json
import re

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Caption, Dataset, EmbeddingSpace, Job, JobStatus
from tests.factories import DatasetFactory, ImageFactory, SplitFactory, UserFactory
from tests.support.karpathy import image_entry

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client():
    client = APIClient()
    client.force_authenticate(UserFactory(roles=["admin"]))
    return client


def karpathy_upload(entries):
    return SimpleUploadedFile("dataset_coco.json", json.dumps({"images": entries}).encode(), "application/json")


def test_admin_imports_karpathy_then_embeddings_through_api(admin_client, django_capture_on_commit_callbacks):
    entries = [image_entry(1, sentids=(1, 2)), image_entry(2, sentids=(3, 4))]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/imports/karpathy/",
            {"file": karpathy_upload(entries), "name": "coco", "image_url_prefix": "https://img/"},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job = admin_client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    assert job["result"]["captions"] == 4
    assert Caption.objects.count() == 4

    vectors = io.BytesIO()
    np.save(vectors, np.random.default_rng(1).normal(size=(4, 8)))
    ids = "".join(f"COCO_val2014:sentid:{n}\n" for n in (1, 2, 3, 4)).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/imports/embeddings/",
            {
                "dataset": "coco",
                "space": "minilm",
                "modality": "caption",
                "vectors": SimpleUploadedFile("v.npy", vectors.getvalue()),
                "ids": SimpleUploadedFile("ids.txt", ids),
            },
            format="multipart",
        )
    assert response.status_code == 202
    assert Job.objects.get(pk=response.json()["id"]).status == JobStatus.SUCCEEDED
    assert EmbeddingSpace.objects.get().count == 4


def test_failed_job_reports_the_error(admin_client, django_capture_on_commit_callbacks):
    bad = SimpleUploadedFile("dataset_coco.json", b"{oops", "application/json")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/imports/karpathy/", {"file": bad, "name": "coco", "image_url_prefix": "https://img/"}
        )
    job = admin_client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["status"] == "failed"
    assert "not valid JSON" in job["error"]
    assert Dataset.objects.count() == 0


def test_missing_field_is_a_400_naming_it(admin_client):
    response = admin_client.post("/api/imports/karpathy/", {"name": "coco"}, format="multipart")
    assert response.status_code == 400
    assert "file" in response.json()["detail"]


def test_a_split_name_that_is_no_name_is_a_400_naming_splits_and_starts_no_job(admin_client):
    upload = karpathy_upload([])
    response = admin_client.post(
        "/api/imports/karpathy/", {"file": upload, "name": "coco", "splits": ["{}"]}, format="multipart"
    )
    assert response.status_code == 400
    assert "splits" in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("roles", [["rater"], ["researcher"]])
def test_non_admins_cannot_import(roles):
    client = APIClient()
    client.force_authenticate(UserFactory(roles=roles))
    response = client.post("/api/imports/karpathy/", {"name": "coco"}, format="multipart")
    assert response.status_code == 403
    assert APIClient().post("/api/imports/karpathy/", {"name": "coco"}).status_code in (401, 403)


def test_admin_page_form_starts_a_job(client, django_capture_on_commit_callbacks):
    admin_user = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    assert client.get("/admin/annotation/dataset/import-karpathy/").status_code == 200
    entries = [image_entry(5, sentids=(50,))]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/annotation/dataset/import-karpathy/",
            {"file": karpathy_upload(entries), "name": "viaadmin", "image_url_prefix": "https://img/"},
        )
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert Dataset.objects.filter(name="viaadmin").exists()
    listing = client.get("/admin/annotation/job/")
    assert b"import_karpathy" in listing.content


def start_import(admin_client, upload) -> int:
    response = admin_client.post(
        "/api/imports/karpathy/",
        {"file": upload, "name": "coco", "image_url_prefix": "https://img/"},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def with_caption(raw=None, sentid=None, **entry_changes):
    entry = {**image_entry(1, sentids=(1, 2)), **entry_changes}
    entry["sentences"][1].update({k: v for k, v in (("raw", raw), ("sentid", sentid)) if v is not None})
    return [image_entry(7, sentids=(70,)), entry]


@pytest.mark.parametrize(
    ("upload", "error"),
    [
        (
            karpathy_upload(with_caption(raw="two dogs\x00")),
            r"images\[1\] \(COCO_val2014_000000000001.jpg\) sentences\[1\].raw \(sentid 2\) has a NUL character",
        ),
        (
            karpathy_upload(with_caption(sentid=2**70)),
            r"images\[1\] \(COCO_val2014_000000000001.jpg\) sentences\[1\]: field 'sentid' is "
            r"1180591620717411303424, outside the 64-bit range",
        ),
        (
            karpathy_upload([image_entry(7, sentids=(70,)), image_entry(2**70, sentids=(1,))]),
            r"images\[1\] \(COCO_val2014_1180591620717411303424.jpg\): field 'cocoid' is 1180591620717411303424",
        ),
        (
            karpathy_upload([image_entry(7, sentids=(70,)), image_entry(1, filename=f"{'c' * 583}_000000000001.jpg")]),
            r"images\[1\].filename: 600 characters, more than UPLOAD_MAX_FILENAME_CHARS=255",
        ),
        (
            SimpleUploadedFile("dataset_coco.json", b'{"images": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"),
            r"dataset_coco.json: JSON nested too deeply to read \(more than about 1,000 levels",
        ),
    ],
    ids=["nul-caption", "sentid-2^70", "cocoid-2^70", "600-char-filename", "nested-200000-deep"],
)
def test_a_bad_entry_fails_the_import_job_naming_it(admin_client, django_capture_on_commit_callbacks, upload, error):
    with django_capture_on_commit_callbacks(execute=True):
        job_id = start_import(admin_client, upload)
    job = admin_client.get(f"/api/jobs/{job_id}/").json()
    assert job["status"] == "failed"
    assert re.search(error, job["error"]), job["error"]
    assert "unexpected error" not in job["error"] and "Traceback" not in job["error"]
    assert Dataset.objects.count() == 0 and Caption.objects.count() == 0


def test_a_non_utf8_byte_in_an_embeddings_ids_file_fails_the_job_naming_the_file_and_offset(
    admin_client, django_capture_on_commit_callbacks
):
    split = SplitFactory(dataset__name="coco")
    images = [ImageFactory(split=split) for _ in range(2)]
    vectors = io.BytesIO()
    np.save(vectors, np.ones((2, 4)))
    ids = f"{images[0].key}\n".encode() + images[1].key.encode()[:3] + b"\xff" + images[1].key.encode()[3:] + b"\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/imports/embeddings/",
            {
                "dataset": "coco",
                "space": "effnet",
                "modality": "image",
                "vectors": SimpleUploadedFile("v.npy", vectors.getvalue()),
                "ids": SimpleUploadedFile("image_ids.txt", ids),
            },
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job = admin_client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["status"] == "failed"
    offset = len(images[0].key) + 1 + 3
    assert re.search(rf"image_ids.txt: not UTF-8 text: byte 0xff at byte offset {offset} \(line 2\)$", job["error"])
    assert EmbeddingSpace.objects.count() == 0


@pytest.mark.parametrize(
    ("file_name", "limit", "message"),
    [
        ("é" * 200 + ".json", 255, "is 205 characters (405 bytes); the limit is UPLOAD_MAX_FILENAME_CHARS=255"),
        ("d" * 145 + ".json", 100, "is 150 characters (150 bytes); the limit is UPLOAD_MAX_FILENAME_CHARS=100"),
    ],
)
def test_an_uploaded_file_name_too_long_to_store_is_a_400(admin_client, settings, file_name, limit, message):
    settings.UPLOAD_MAX_FILENAME_CHARS = limit
    upload = SimpleUploadedFile(file_name, json.dumps({"images": [image_entry()]}).encode())
    response = admin_client.post(
        "/api/imports/karpathy/", {"file": upload, "name": "coco", "image_url_prefix": "https://img/"}
    )
    assert response.status_code == 400, response.content
    assert message in response.json()["detail"]
    assert Job.objects.count() == 0


def test_admin_form_with_a_file_name_too_long_to_store_shows_the_error(client, settings):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    settings.UPLOAD_MAX_FILENAME_CHARS = 20
    vectors = io.BytesIO()
    np.save(vectors, np.ones((1, 4)))
    DatasetFactory(name="coco")
    response = client.post(
        "/admin/annotation/dataset/import-embeddings/",
        {
            "dataset": Dataset.objects.get().pk,
            "space": "s",
            "modality": "image",
            "vectors": SimpleUploadedFile("v.npy", vectors.getvalue()),
            "ids": SimpleUploadedFile("image_ids_" + "x" * 20 + ".txt", b"a\n"),
        },
    )
    assert response.status_code == 200
    assert "is 34 characters (34 bytes); the limit is UPLOAD_MAX_FILENAME_CHARS=20" in response.content.decode()
    assert Job.objects.count() == 0
    uploads = settings.DATA_DIR / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir()), "the vectors stored first are removed"
