"""The zip of a finished export through the API: its name, entries and bytes, the roles
that may download it and the states in which there is none."""

import io
import zipfile
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from annotation.models import Job
from tests.support.export_data import client_for, rated_factory_dataset, start_export

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    payload = {"dataset": rated.dataset.name, "formats": ["cxc", "jsonl", "parquet"]}
    client = client_for("researcher")
    started = start_export(client, payload, django_capture_on_commit_callbacks).json()
    job = client.get(f"/api/exports/{started['id']}/").json()
    assert job["status"] == "succeeded", job
    return job


@pytest.mark.parametrize("role", ["researcher", "admin"])
def test_the_zip_holds_every_file_of_the_export_byte_for_byte(finished, role):
    client = client_for(role)
    job = client.get(f"/api/exports/{finished['id']}/").json()
    folder = f"{job['dataset']}-export-{job['id']}"
    assert job["archive_url"] == f"http://testserver/api/exports/{job['id']}/archive"
    response = client.get(job["archive_url"])
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{folder}.zip"'
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    assert archive.namelist() == [f"{folder}/{entry['name']}" for entry in job["files"]]
    out = Path(Job.objects.get(pk=job["id"]).result["out"])
    for entry in job["files"]:
        assert archive.read(f"{folder}/{entry['name']}") == (out / entry["name"]).read_bytes(), entry["name"]
    kinds = {info.filename.rsplit(".", 1)[1]: info.compress_type for info in archive.infolist()}
    assert kinds["parquet"] == zipfile.ZIP_STORED and kinds["csv"] == kinds["jsonl"] == zipfile.ZIP_DEFLATED


@pytest.mark.parametrize("who", ["rater", "anonymous", "no role"])
def test_only_researchers_and_admins_download_the_zip(finished, who):
    client = {"rater": client_for("rater"), "anonymous": APIClient(), "no role": client_for()}[who]
    response = client.get(f"/api/exports/{finished['id']}/archive")
    assert response.status_code == (401 if who == "anonymous" else 403)
    assert "detail" in response.json() and not response.streaming


def test_no_zip_before_the_export_succeeded_or_when_a_file_is_gone(finished):
    client = client_for("researcher")
    pending = client.post("/api/exports/", {"dataset": finished["dataset"]}, format="json").json()
    assert pending["archive_url"] is None
    response = client.get(f"/api/exports/{pending['id']}/archive")
    assert response.status_code == 409 and "is pending" in response.json()["detail"]
    (Path(Job.objects.get(pk=finished["id"]).result["out"]) / "sts_val.jsonl").unlink()
    response = client.get(f"/api/exports/{finished['id']}/archive")
    assert response.status_code == 404 and "'sts_val.jsonl'" in response.json()["detail"]
    assert "no longer on disk" in response.json()["detail"]
    assert client.get("/api/exports/999999/archive").status_code == 404
