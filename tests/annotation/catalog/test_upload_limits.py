"""Uploads are bounded per kind while they stream in: the API answers 413, the admin a
form error, the CLI a CommandError; a refused upload leaves no file anywhere."""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.catalog.uploads import KARPATHY, upload_store, uploads_root
from annotation.core.errors import UploadTooLarge
from annotation.models import Job
from tests.factories import UserFactory
from tests.support.karpathy import image_entry

pytestmark = pytest.mark.django_db

KARPATHY_URL = "/api/imports/karpathy/"
EMBEDDINGS_URL = "/api/imports/embeddings/"


@pytest.fixture(autouse=True)
def temp_dir(settings, tmp_path) -> Path:
    """Django's temporary upload files go here, so a test can see none is left."""
    folder = tmp_path / "upload-tmp"
    folder.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(folder)
    return folder


def karpathy_bytes(n_images: int = 1) -> bytes:
    return json.dumps({"images": [image_entry(i + 1, sentids=(i + 1,)) for i in range(n_images)]}).encode()


def stored_files() -> list[str]:
    root = uploads_root()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def assert_nothing_left(temp_dir: Path) -> None:
    assert stored_files() == []
    assert list(temp_dir.iterdir()) == []


def test_a_karpathy_file_over_its_limit_is_a_413_naming_kind_limit_and_setting(
    admin_api, settings, temp_dir, django_capture_on_commit_callbacks
):
    # Several parser chunks (64 KiB each): the handler stops it part way, not at the end.
    content = karpathy_bytes(2000)
    assert len(content) > 3 * 65_536
    settings.UPLOAD_MAX_KARPATHY_BYTES = 100_000
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            KARPATHY_URL,
            {
                "file": SimpleUploadedFile("dataset_coco.json", content),
                "name": "coco",
                "image_url_prefix": "https://i/",
            },
            format="multipart",
        )
    assert response.status_code == 413, response.content
    body = response.json()
    assert body == {
        "detail": "dataset_coco.json is larger than the 97.66 KiB allowed for Karpathy JSON uploads "
        "(setting UPLOAD_MAX_KARPATHY_BYTES=100000)",
        "code": "upload_too_large",
    }
    assert Job.objects.count() == 0
    assert_nothing_left(temp_dir)


def test_a_file_of_exactly_the_limit_is_taken(admin_api, settings, temp_dir, django_capture_on_commit_callbacks):
    content = karpathy_bytes(1)
    settings.UPLOAD_MAX_KARPATHY_BYTES = len(content)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            KARPATHY_URL,
            {"file": SimpleUploadedFile("d.json", content), "name": "coco", "image_url_prefix": "https://i/"},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    assert Job.objects.get().status == "succeeded"
    assert list(temp_dir.iterdir()) == []


def test_one_embeddings_file_over_the_limit_refuses_both_and_keeps_neither(admin_api, settings, temp_dir):
    vectors = io.BytesIO()
    np.save(vectors, np.zeros((4, 8), dtype=np.float32))
    settings.UPLOAD_MAX_EMBEDDINGS_BYTES = len(vectors.getvalue())
    response = admin_api.post(
        EMBEDDINGS_URL,
        {
            "dataset": "coco",
            "space": "minilm",
            "modality": "caption",
            "vectors": SimpleUploadedFile("v.npy", vectors.getvalue()),
            "ids": SimpleUploadedFile("ids.txt", b"x" * (len(vectors.getvalue()) + 1)),
        },
        format="multipart",
    )
    assert response.status_code == 413
    assert response.json()["detail"].startswith("ids.txt is larger than")
    assert "embeddings uploads (setting UPLOAD_MAX_EMBEDDINGS_BYTES=" in response.json()["detail"]
    assert Job.objects.count() == 0
    assert_nothing_left(temp_dir)


def test_a_file_in_a_field_the_view_does_not_take_is_dropped_unstored(
    admin_api, settings, temp_dir, django_capture_on_commit_callbacks
):
    settings.UPLOAD_MAX_KARPATHY_BYTES = 10_000
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            KARPATHY_URL,
            {
                "file": SimpleUploadedFile("d.json", karpathy_bytes(1)),
                "extra": SimpleUploadedFile("big.bin", b"x" * 200_000),
                "name": "coco",
                "image_url_prefix": "https://i/",
            },
            format="multipart",
        )
    assert response.status_code == 202
    assert list(temp_dir.iterdir()) == []


def test_the_admin_form_shows_the_refusal_as_the_field_error(client, settings, temp_dir):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    settings.UPLOAD_MAX_KARPATHY_BYTES = 50
    response = client.post(
        "/admin/annotation/dataset/import-karpathy/",
        {"file": SimpleUploadedFile("d.json", karpathy_bytes(1)), "name": "viaadmin", "image_url_prefix": "https://i/"},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "d.json is larger than the 50 bytes allowed for Karpathy JSON uploads" in page
    assert "This field is required" not in page
    # The other fields were read: the form keeps them.
    assert 'value="viaadmin"' in page
    assert Job.objects.count() == 0
    assert_nothing_left(temp_dir)


def test_the_admin_upload_pages_still_check_the_csrf_token(settings):
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    for url in ("/admin/annotation/dataset/import-karpathy/", "/admin/sampling/samplingbatch/upload/"):
        response = client.post(url, {"file": SimpleUploadedFile("d.json", b"{}"), "name": "x"})
        assert response.status_code == 403, url
    assert stored_files() == []


def test_the_cli_refuses_a_file_over_the_limit_before_reading_it(settings, tmp_path):
    path = tmp_path / "dataset_coco.json"
    path.write_bytes(karpathy_bytes(3))
    settings.UPLOAD_MAX_KARPATHY_BYTES = 100
    with pytest.raises(CommandError) as refused:
        call_command("import_karpathy", str(path), "--name", "coco", "--image-url-prefix", "https://i/")
    size = path.stat().st_size
    assert str(refused.value) == (
        f"{path} is {size} bytes, more than the 100 bytes allowed for Karpathy JSON uploads "
        "(setting UPLOAD_MAX_KARPATHY_BYTES=100)"
    )
    assert Job.objects.count() == 0
    vectors = tmp_path / "v.npy"
    np.save(vectors, np.zeros((2, 4), dtype=np.float32))
    settings.UPLOAD_MAX_EMBEDDINGS_BYTES = 64
    with pytest.raises(CommandError, match="allowed for embeddings uploads"):
        call_command(
            "import_embeddings", "--dataset", "coco", "--space", "s", "--modality", "caption",
            "--vectors", str(vectors), "--ids", str(path),
        )  # fmt: skip
    assert Job.objects.count() == 0


def test_store_stops_writing_at_the_limit_when_the_declared_size_is_wrong(settings):
    lying = SimpleUploadedFile("d.json", b"y" * 100)
    lying.size = 10  # what a request claimed; the chunks hold more
    settings.UPLOAD_MAX_KARPATHY_BYTES = 20
    with pytest.raises(UploadTooLarge, match="d.json is larger than the 20 bytes"):
        upload_store(lying, kind=KARPATHY)
    assert stored_files() == []


def test_the_defaults_fit_coco():
    from config import settings as config_settings

    karpathy_coco, caption_vectors_coco = 140_000_000, 616_767 * 1024 * 4 + 128
    assert config_settings.UPLOAD_MAX_KARPATHY_BYTES == 512 * 2**20 > karpathy_coco
    assert config_settings.UPLOAD_MAX_EMBEDDINGS_BYTES == 4 * 2**30 > caption_vectors_coco
    assert config_settings.UPLOAD_MAX_PAIRLIST_BYTES == 64 * 2**20
    assert config_settings.UPLOAD_MAX_OBJECTS_BYTES == 2**30 > 450_000_000  # train2017's instances JSON
    assert config_settings.UPLOAD_KEEP_FAILED_DAYS == 7


def test_a_browser_session_gets_the_same_413_from_the_csrf_checked_parse(settings, temp_dir):
    # With a session, DRF's CSRF check reads the body first: the limit holds there too.
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(UserFactory(roles=["admin"]))
    secret = "a" * 32
    client.cookies[settings.CSRF_COOKIE_NAME] = secret
    settings.UPLOAD_MAX_KARPATHY_BYTES = 10
    response = client.post(
        KARPATHY_URL,
        {"file": SimpleUploadedFile("d.json", karpathy_bytes(1)), "name": "coco"},
        format="multipart",
        HTTP_X_CSRFTOKEN=secret,
    )
    assert response.status_code == 413
    assert response.json()["code"] == "upload_too_large"
    assert_nothing_left(temp_dir)
