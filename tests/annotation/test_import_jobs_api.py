"""Imports reachable by admins through the API and the Django admin, as background jobs."""

import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Caption, Dataset, EmbeddingSpace, Job, JobStatus
from tests.annotation.test_karpathy import image_entry
from tests.factories import UserFactory

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
