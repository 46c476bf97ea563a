"""Background jobs run once, and a job whose runner died is marked failed."""

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from annotation.jobs.dispatch import import_job_start, job_run, jobs_fail_orphaned
from annotation.jobs.tasks import fail_orphaned_jobs, run_import_job
from annotation.models import Dataset, Job, JobStatus
from annotation.runs.jobs import job_create
from annotation.runs.lifecycle import JOB_LOCKS
from tests.factories import UserFactory
from tests.support.export_data import rated_factory_dataset
from tests.support.karpathy import image_entry
from tests.support.runner_support import poll, runner_lock_held_elsewhere

pytestmark = pytest.mark.django_db


def karpathy_job(tmp_path: Path, name: str = "coco") -> Job:
    path = tmp_path / "dataset_coco.json"
    path.write_text(json.dumps({"images": [image_entry(1, sentids=(1, 2)), image_entry(2, sentids=(3, 4))]}))
    return job_create(
        kind=Job.Kind.IMPORT_KARPATHY, params={"path": str(path), "name": name, "image_url_prefix": "https://img/"}
    )


def as_left_by_a_dead_worker(job: Job) -> None:
    """What a killed worker leaves: the row says running; its transaction and lock are gone."""
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, runner="worker-host:4242")


def test_an_import_task_delivered_twice_imports_once(tmp_path):
    job = karpathy_job(tmp_path)
    run_import_job(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.runner
    finished = job.finished_at
    run_import_job(job.pk)
    job.refresh_from_db()
    assert (job.status, job.finished_at, job.error) == (JobStatus.SUCCEEDED, finished, "")
    assert Dataset.objects.count() == 1


def test_a_task_for_a_deleted_job_does_nothing(tmp_path):
    job = karpathy_job(tmp_path)
    job_id = job.pk
    job.delete()
    run_import_job(job_id)
    assert Dataset.objects.count() == 0


@pytest.mark.postgres  # a dead runner is told by its advisory lock; SQLite knows only local pids
def test_an_import_whose_runner_died_is_failed_with_nothing_kept(tmp_path):
    job = karpathy_job(tmp_path)
    as_left_by_a_dead_worker(job)
    assert fail_orphaned_jobs() == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "(worker-host:4242) stopped before it finished; nothing was kept" in job.error
    assert job.finished_at is not None
    assert jobs_fail_orphaned() == []
    # A late delivery of its task does not run it either.
    assert job_run(job_id=job.pk).status == JobStatus.FAILED
    assert Dataset.objects.count() == 0


@pytest.mark.postgres
def test_an_export_whose_runner_died_has_its_staging_folder_removed():
    rated = rated_factory_dataset(n_images=4)
    client = APIClient()
    client.force_authenticate(UserFactory(roles=["researcher"], password=None))
    pending = client.post("/api/exports/", {"dataset": rated.dataset.name}, format="json").json()
    job = Job.objects.get(pk=pending["id"])
    out = Path(job.params["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.job{job.pk}.x1y2.partial"
    (staging / "val").mkdir(parents=True)
    (staging / "val" / "sts.csv").write_text("caption1,caption2\n")
    # Other jobs' staging: one writing to the same folder now, one whose name starts alike.
    same_out = out.parent / f".{out.name}.job{job.pk + 1}.a1b2.partial"
    alike = out.parent / f".{out.name}0.job{job.pk}0.a1b2.partial"
    for folder in (same_out, alike):
        folder.mkdir()
    as_left_by_a_dead_worker(job)

    polled = client.get(f"/api/exports/{job.pk}/").json()
    assert (polled["status"], polled["stale"]) == ("running", True)
    assert staging.is_dir()  # a read writes nothing
    assert fail_orphaned_jobs() == [job.pk]  # the beat task
    polled = client.get(f"/api/exports/{job.pk}/").json()
    assert (polled["status"], polled["stale"]) == ("failed", False)
    assert "stopped before it finished" in polled["error"]
    assert not staging.exists()
    assert not out.exists()
    assert same_out.is_dir() and alike.is_dir()


@pytest.mark.postgres
def test_a_job_whose_runner_holds_its_lock_is_left_running(tmp_path):
    job = karpathy_job(tmp_path)
    as_left_by_a_dead_worker(job)
    with runner_lock_held_elsewhere(JOB_LOCKS, job.pk):
        assert jobs_fail_orphaned() == []
        assert job_run(job_id=job.pk).status == JobStatus.RUNNING
        admin = APIClient()
        admin.force_authenticate(UserFactory(roles=["admin"]))
        assert admin.get(f"/api/jobs/{job.pk}/").json()["status"] == "running"
    assert poll(jobs_fail_orphaned) == [job.pk]


def test_pages_and_the_api_show_a_dead_runners_job_as_stale_without_writing(admin_client, tmp_path, monkeypatch):
    job = karpathy_job(tmp_path)
    as_left_by_a_dead_worker(job)
    monkeypatch.setattr("annotation.runs.lifecycle.runner_alive", lambda lock_class, object_id, runner: False)
    page = admin_client.get("/admin/annotation/job/")
    assert page.status_code == 200
    assert "running <strong" in page.content.decode() and "(stale: its process is gone)" in page.content.decode()
    assert admin_client.get(f"/admin/annotation/job/{job.pk}/change/").status_code == 200
    body = admin_client.get(f"/api/jobs/{job.pk}/").json()
    assert (body["status"], body["stale"]) == ("running", True)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_starting_a_job_marks_dead_runners_jobs_failed(tmp_path, monkeypatch):
    job = karpathy_job(tmp_path)
    as_left_by_a_dead_worker(job)
    monkeypatch.setattr("annotation.runs.lifecycle.runner_alive", lambda lock_class, object_id, runner: False)
    import_job_start(kind=Job.Kind.IMPORT_KARPATHY, params={"path": "missing.json", "name": "other"})
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "(worker-host:4242) stopped before it finished; nothing was kept" in job.error
