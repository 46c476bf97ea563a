"""Object annotations imported by admins through the API and the Django admin, as
background jobs."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Dataset, Job, JobStatus, ObjectAnnotation
from tests.factories import DatasetFactory, ImageFactory, SplitFactory, UserFactory
from tests.support.coco import coco_annotation, coco_image

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def _upload(annotations, name="instances_val2014.json"):
    document = {"images": [coco_image(1)], "annotations": annotations, "categories": [{"id": 18, "name": "dog"}]}
    return SimpleUploadedFile(name, json.dumps(document).encode(), "application/json")


@pytest.fixture
def image():
    return ImageFactory(split=SplitFactory(dataset=DatasetFactory(name="coco")), cocoid=1)


def test_admin_imports_objects_through_the_api(image, django_capture_on_commit_callbacks):
    api = APIClient()
    api.force_authenticate(UserFactory(roles=["admin"]))
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            "/api/imports/objects/",
            {"dataset": "coco", "file": _upload([coco_annotation(1, 1, 18)])},
            format="multipart",
        )
    assert answer.status_code == 202, answer.content
    job = api.get(f"/api/jobs/{answer.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    assert job["result"]["objects_imported"] == job["result"]["matched_by_cocoid"] == 1
    assert ObjectAnnotation.objects.get().image == image

    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post("/api/imports/objects/", {"dataset": "coco", "file": _upload([coco_annotation(2, 1, 99)])})
    job = api.get(f"/api/jobs/{answer.json()['id']}/").json()
    assert job["status"] == "failed"
    assert "annotations[0] (id 2): category_id 99 is not among the file's categories" in job["error"]
    assert ObjectAnnotation.objects.get().coco_annotation_id == 1


def test_a_rater_may_not_import_and_a_file_over_the_limit_is_a_413(image, settings):
    api = APIClient()
    api.force_authenticate(UserFactory(roles=["rater"]))
    assert api.post("/api/imports/objects/", {"dataset": "coco", "file": _upload([])}).status_code == 403
    api.force_authenticate(UserFactory(roles=["admin"]))
    settings.UPLOAD_MAX_OBJECTS_BYTES = 10
    answer = api.post("/api/imports/objects/", {"dataset": "coco", "file": _upload([])})
    assert answer.status_code == 413
    assert "UPLOAD_MAX_OBJECTS_BYTES=10" in answer.json()["detail"]
    assert Job.objects.count() == 0


def test_the_admin_form_starts_the_import(client, image, django_capture_on_commit_callbacks):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    assert "Import object annotations" in client.get("/admin/annotation/dataset/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/admin/annotation/dataset/import-objects/",
            {"dataset": Dataset.objects.get().pk, "file": _upload([coco_annotation(1, 1, 18)])},
        )
    assert answer.status_code == 302
    assert Job.objects.get().status == JobStatus.SUCCEEDED
    assert ObjectAnnotation.objects.count() == 1
    listing = client.get("/admin/annotation/objectannotation/").content.decode()
    assert ">dog</a>" in listing and "COCO_val2014_000000000001.jpg" in listing


def test_an_unknown_dataset_is_named_at_once_and_nothing_is_kept(image, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    api = APIClient()
    api.force_authenticate(UserFactory(roles=["admin"]))
    answer = api.post("/api/imports/objects/", {"dataset": "cocoa", "file": _upload([coco_annotation(1, 1, 18)])})
    assert answer.status_code == 404 and "no dataset named 'cocoa'" in answer.json()["detail"]
    assert Job.objects.count() == 0
    assert not [path for path in tmp_path.rglob("*") if path.is_file()], "the upload is not stored"
