"""The image view the rating page loads images from, and the claim's links to it."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from PIL import Image as PILImage
from rest_framework.test import APIClient

from annotation.models import TaskKind
from tests.factories import DatasetFactory, ImageFactory, SplitFactory, UserFactory
from tests.support.queue_support import TTL, api_claim, client_for, queue_pairs, rater_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def photo_dataset(tmp_path):
    folder = tmp_path / "images" / "val2014"
    folder.mkdir(parents=True)
    dataset = DatasetFactory(images_root=str(tmp_path / "images"), image_url_prefix="")
    split = SplitFactory(dataset=dataset)
    image = ImageFactory(split=split, dataset=dataset)
    PILImage.new("RGB", (8, 6), "red").save(folder / image.key, "JPEG")
    ImageFactory(split=split, dataset=dataset, key="gone.jpg", file_path="val2014/gone.jpg")
    ImageFactory(split=split, dataset=dataset, key="escape.jpg", file_path="../../etc/passwd")
    return dataset, image


def test_image_view_serves_files_with_cache_headers(photo_dataset):
    dataset, image = photo_dataset
    client = client_for(UserFactory(roles=["rater"]))
    response = client.get(f"/media/images/{dataset.name}/{image.key}", HTTP_ACCEPT="image/webp,image/*")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    assert response["Cache-Control"] == "private, max-age=86400"
    body = b"".join(response.streaming_content)
    assert PILImage.open(io.BytesIO(body)).size == (8, 6)
    again = client.get(f"/media/images/{dataset.name}/{image.key}", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    since = client.get(f"/media/images/{dataset.name}/{image.key}", HTTP_IF_MODIFIED_SINCE=response["Last-Modified"])
    assert since.status_code == 304


def test_image_view_refuses_unknown_missing_escaping_and_anonymous(photo_dataset):
    dataset, image = photo_dataset
    client = client_for(UserFactory(roles=["rater"]))
    for key, message in (
        ("nope.jpg", "has no image 'nope.jpg'"),
        ("gone.jpg", "image file of 'gone.jpg' is missing"),
        ("escape.jpg", "points outside the dataset's images root"),
    ):
        response = client.get(f"/media/images/{dataset.name}/{key}")
        assert response.status_code == 404
        assert message in response.json()["detail"]
    assert APIClient().get(f"/media/images/{dataset.name}/{image.key}").status_code == 401
    prefix_dataset = DatasetFactory()
    response = client.get(f"/media/images/{prefix_dataset.name}/x.jpg")
    assert response.status_code == 404
    assert "serves its images from https://images.example.org/" in response.json()["detail"]


def test_claim_links_images_root_datasets_to_the_image_view(photo_dataset, clock):
    dataset, _ = photo_dataset
    split = dataset.splits.get()
    queue_pairs(split=split, kind=TaskKind.SITS)
    _, client = rater_client()
    body = api_claim(client, dataset).json()
    image_url = body["items"][1]["url"]
    assert image_url.startswith(f"/media/images/{dataset.name}/")
    assert body["lease_expires_at"].startswith((clock.now + timedelta(seconds=TTL)).strftime("%Y-%m-%dT%H:%M"))
