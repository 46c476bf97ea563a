"""The researcher export API: start a job, poll it, list and download its files."""

import csv
import hashlib
import io
import json
from pathlib import Path

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from annotation.core.errors import NotFound
from annotation.jobs.dispatch import export_job_start
from annotation.jobs.tasks import run_export_job
from annotation.models import Job, JobStatus
from annotation.runs.jobs import job_create
from tests.support.export_data import client_for, rated_factory_dataset, start_export

pytestmark = pytest.mark.django_db


def test_researcher_exports_polls_lists_and_downloads(django_capture_on_commit_callbacks, settings):
    rated = rated_factory_dataset(n_images=8)
    client = client_for("researcher")
    response = start_export(
        client, {"dataset": rated.dataset.name, "formats": ["cxc", "parquet"]}, django_capture_on_commit_callbacks
    )
    assert response.status_code == 202, response.content
    started = response.json()
    assert started["status"] == "pending" and started["files"] == []
    assert started["dataset"] == rated.dataset.name and started["splits"] == ["val"]

    job = client.get(f"/api/exports/{started['id']}/").json()
    assert job["status"] == "succeeded", job
    assert job["pairs"] == len(rated.complete) and job["ratings"] == 5 * len(rated.complete)
    assert job["progress_done"] == job["progress_total"] == len(rated.complete)
    assert "out" not in job and str(settings.EXPORT_DIR) not in json.dumps(job)

    files = client.get(f"/api/exports/{started['id']}/files/").json()
    names = [entry["name"] for entry in files]
    suffixes = (".csv", "_raw.csv", ".parquet", "_raw.parquet")
    data_files = [f"{task}_val{suffix}" for task in ("sts", "sis", "sits") for suffix in suffixes]
    assert names == [*data_files, "agreement.json", "rater_model.json", "manifest.json"]
    assert files == job["files"]

    sts = next(entry for entry in files if entry["name"] == "sts_val.csv")
    assert sts["url"] == f"http://testserver/api/exports/{started['id']}/files/sts_val.csv"
    download = client.get(sts["url"])
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="sts_val.csv"'
    body = b"".join(download.streaming_content)
    assert hashlib.sha256(body).hexdigest() == sts["sha256"] and len(body) == sts["bytes"]
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0] == ["caption1", "caption2", "agg_score", "sampling_method"]
    assert len(rows) - 1 == sts["rows"] == sum(1 for p in rated.complete if p.kind == "STS")

    manifest = client.get(f"/api/exports/{started['id']}/files/manifest.json")
    assert json.loads(b"".join(manifest.streaming_content))["dataset"] == rated.dataset.name

    listed = client.get("/api/exports/", {"dataset": rated.dataset.name}).json()
    assert [entry["id"] for entry in listed] == [started["id"]]
    assert client.get("/api/exports/", {"dataset": "other"}).json() == []


def test_admins_may_export_too(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    response = start_export(
        client_for("admin"), {"dataset": rated.dataset.name, "formats": ["jsonl"]}, django_capture_on_commit_callbacks
    )
    assert response.status_code == 202
    assert Job.objects.get(pk=response.json()["id"]).status == JobStatus.SUCCEEDED


@pytest.mark.parametrize("who", ["rater", "anonymous", "no role"])
def test_raters_and_anonymous_users_cannot_export(who, django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    researcher = client_for("researcher")
    done = start_export(researcher, {"dataset": rated.dataset.name}, django_capture_on_commit_callbacks).json()
    client = {"rater": client_for("rater"), "anonymous": APIClient(), "no role": client_for()}[who]
    # Not logged in: 401 (a credential would help); logged in without the role: 403.
    expected = 401 if who == "anonymous" else 403
    jobs_before = Job.objects.count()
    for method, url in [
        ("post", "/api/exports/"),
        ("get", "/api/exports/"),
        ("get", f"/api/exports/{done['id']}/"),
        ("get", f"/api/exports/{done['id']}/files/"),
        ("get", f"/api/exports/{done['id']}/files/sts_val.csv"),
    ]:
        response = getattr(client, method)(url, {"dataset": rated.dataset.name} if method == "post" else None)
        assert response.status_code == expected, (who, url, response.status_code)
        assert "detail" in response.json()
    assert Job.objects.count() == jobs_before


@pytest.mark.parametrize(
    ("payload", "status", "detail"),
    [
        ({"dataset": "nope"}, 404, "no dataset named 'nope'"),
        ({"dataset": "{name}", "splits": ["train"]}, 400, "has no split 'train'"),
        ({"dataset": "{name}", "formats": ["xml"]}, 400, "formats"),
        ({}, 400, "dataset"),
    ],
)
def test_bad_export_requests_get_a_clear_error_and_no_job(payload, status, detail):
    rated = rated_factory_dataset(n_images=4)
    payload = {k: (v.format(name=rated.dataset.name) if isinstance(v, str) else v) for k, v in payload.items()}
    response = client_for("researcher").post("/api/exports/", payload, format="json")
    assert response.status_code == status
    assert detail in response.json()["detail"]
    assert not Job.objects.exists()


def test_files_of_unfinished_or_other_jobs(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    client = client_for("researcher")
    # Queued but not run yet: the on-commit callback is not executed.
    pending = client.post("/api/exports/", {"dataset": rated.dataset.name}, format="json").json()
    assert client.get(f"/api/exports/{pending['id']}/files/").json() == []
    response = client.get(f"/api/exports/{pending['id']}/files/sts_val.csv")
    assert response.status_code == 409 and "is pending" in response.json()["detail"]

    done = start_export(client, {"dataset": rated.dataset.name}, django_capture_on_commit_callbacks).json()
    for name in ("nothing.csv", "..%2Fmanifest.json", "%2Fetc%2Fpasswd"):
        response = client.get(f"/api/exports/{done['id']}/files/{name}")
        assert response.status_code == 404, name
    imports = job_create(kind=Job.Kind.IMPORT_KARPATHY, params={"path": "x"})
    response = client.get(f"/api/exports/{imports.id}/")
    assert response.status_code == 404 and response.json()["detail"] == f"no export job #{imports.id}"


def test_removed_files_are_reported(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    client = client_for("researcher")
    done = start_export(client, {"dataset": rated.dataset.name}, django_capture_on_commit_callbacks).json()
    job = Job.objects.get(pk=done["id"])
    (Path(job.result["out"]) / "sis_val.jsonl").unlink()
    response = client.get(f"/api/exports/{done['id']}/files/sis_val.jsonl")
    assert response.status_code == 404 and "no longer on disk" in response.json()["detail"]


def test_the_export_task_runs_a_job_once(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    client = client_for("researcher")
    pending = client.post("/api/exports/", {"dataset": rated.dataset.name, "formats": ["cxc"]}, format="json").json()
    run_export_job(pending["id"])
    job = Job.objects.get(pk=pending["id"])
    assert job.status == JobStatus.SUCCEEDED
    finished = job.finished_at
    # A second delivery of the same message does nothing (the folder exists; it would fail).
    run_export_job(pending["id"])
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.finished_at == finished and job.error == ""


def test_a_failing_export_job_records_the_reason(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=4)
    client = client_for("researcher")
    pending = client.post("/api/exports/", {"dataset": rated.dataset.name}, format="json").json()
    job = Job.objects.get(pk=pending["id"])
    out = Path(job.params["out"])
    out.mkdir(parents=True)
    (out / "someone-elses.txt").write_text("x")
    run_export_job(job.id)
    polled = client.get(f"/api/exports/{job.id}/").json()
    assert polled["status"] == "failed" and "is not empty" in polled["error"] and polled["files"] == []


def test_export_job_start_queues_the_job_once_committed(django_capture_on_commit_callbacks, monkeypatch, settings):
    rated = rated_factory_dataset(n_images=4)
    queued = []
    # Queued by name: the registered task's apply_async is what the signature calls.
    monkeypatch.setattr(run_export_job, "apply_async", lambda args=(), kwargs=None, **options: queued.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = export_job_start(dataset_name=rated.dataset.name, formats="jsonl,cxc")
        assert queued == []
    assert len(callbacks) == 1 and queued == [job.id]
    job.refresh_from_db()
    assert job.kind == Job.Kind.EXPORT_DATASET and job.status == JobStatus.PENDING and job.created_by is None
    assert job.params == {
        "dataset": rated.dataset.name,
        "splits": ["val"],
        "formats": ["cxc", "jsonl"],
        "out": str(Path(settings.EXPORT_DIR).resolve() / f"export-{job.id}"),
    }
    # Rolled back: no job row and nothing queued.
    capture = django_capture_on_commit_callbacks(execute=True)
    with capture as callbacks, pytest.raises(RuntimeError), transaction.atomic():
        rolled_back = export_job_start(dataset_name=rated.dataset.name)
        raise RuntimeError("the caller's transaction fails")
    assert callbacks == [] and queued == [job.id]
    assert not Job.objects.filter(pk=rolled_back.pk).exists()
    # A bad request writes nothing.
    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(NotFound, match="'nope'"):
        export_job_start(dataset_name="nope")
    assert callbacks == [] and list(Job.objects.all()) == [job]
