"""Import, export and evaluation jobs: create, start and run them from their status row (shared by
the Celery tasks, the CLI, the admin and the API). The lifecycle is annotation.runs.lifecycle'."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import transaction

from annotation.catalog.objects import dataset_import_objects
from annotation.catalog.services import dataset_import_karpathy, embedding_space_import
from annotation.core.progress import Progress
from annotation.core.task_queue import task_queue_on_commit
from annotation.evaluation.jobs import ModelSpec, evaluation_job_create, evaluation_job_params, run_evaluation_params
from annotation.export.formats import FORMATS
from annotation.export.jobs import export_job_create, run_export_params
from annotation.export.staging import export_staging_remove
from annotation.models import Job
from annotation.runs.jobs import job_create
from annotation.runs.lifecycle import JOB_LOCKS, RunKind, run_once, run_succeed, runs_fail_orphaned


def _run_import_karpathy(params: dict, progress: Progress) -> dict:
    summary = dataset_import_karpathy(
        path=params["path"],
        name=params["name"],
        images_root=params.get("images_root", ""),
        image_url_prefix=params.get("image_url_prefix", ""),
        splits=params.get("splits") or None,
        key_prefix=params.get("key_prefix") or None,
        progress=progress,
    )
    return {
        "dataset_id": summary.dataset_id,
        "splits": summary.splits,
        "images": summary.images,
        "captions": summary.captions,
    }


def _run_import_embeddings(params: dict, progress: Progress) -> dict:
    space = embedding_space_import(
        dataset_name=params["dataset"],
        space_name=params["space"],
        modality=params["modality"],
        vectors_path=params["vectors_path"],
        ids_path=params["ids_path"],
        model_name=params.get("model_name", ""),
        progress=progress,
    )
    return {"space_id": space.id, "count": space.count, "dimension": space.dimension}


def _run_import_objects(params: dict, progress: Progress) -> dict:
    summary = dataset_import_objects(path=params["path"], dataset_name=params["dataset"], progress=progress)
    return summary.as_dict()


RUNNERS: dict[str, Callable[[dict, Progress], dict]] = {
    Job.Kind.IMPORT_KARPATHY: _run_import_karpathy,
    Job.Kind.IMPORT_EMBEDDINGS: _run_import_embeddings,
    Job.Kind.IMPORT_OBJECTS: _run_import_objects,
    Job.Kind.EXPORT_DATASET: run_export_params,
    Job.Kind.EVALUATE: run_evaluation_params,
}


def _orphan_message(job: Job) -> str:
    return (
        f"the process running this job ({job.runner or 'unknown'}) stopped before it finished; "
        "nothing was kept. Run it again as a new job."
    )


def _remove_export_staging(job: Job) -> None:
    """Imports write in one transaction, which died with the runner; an export's
    half-written staging folder is removed here (its final folder never appeared)."""
    if job.kind == Job.Kind.EXPORT_DATASET and job.params.get("out"):
        export_staging_remove(out_dir=job.params["out"], job_id=job.pk)


JOB_RUNS = RunKind(
    model=Job,
    lock_class=JOB_LOCKS,
    noun="job",
    orphan_message=_orphan_message,
    claim_resets={"result": {}},
    after_orphaned=_remove_export_staging,
)


def job_run(*, job_id: int, echo: Progress | None = None) -> Job:
    """Run a pending job once (see ``annotation.runs.lifecycle.run_once``). Bad input marks the job
    failed with the message; anything unexpected marks it failed and re-raises."""

    def body(job: Job, progress: Progress) -> None:
        # The job id names what a runner leaves behind if it dies (export staging).
        result = RUNNERS[job.kind]({**job.params, "job_id": job.pk}, progress)
        run_succeed(JOB_RUNS, job.pk, message="done", result=result)

    return run_once(JOB_RUNS, job_id, body, echo=echo)


def jobs_fail_orphaned() -> list[int]:
    """Mark failed every running job whose runner is gone. Returns their ids."""
    return runs_fail_orphaned(JOB_RUNS)


def job_start(*, kind: str, params: dict, created_by=None) -> Job:
    """Create a job and queue it for a worker once the row is committed. Jobs whose
    worker died are marked failed first, so the list never shows them running."""
    task = "annotation.tasks.run_export_job" if kind == Job.Kind.EXPORT_DATASET else "annotation.tasks.run_import_job"
    jobs_fail_orphaned()
    with transaction.atomic():
        job = job_create(kind=kind, params=params, created_by=created_by)
        task_queue_on_commit(task, job.id)
    return job


def import_job_start(*, kind: str, params: dict, created_by=None) -> Job:
    """Create an import job and queue it for a worker once the row is committed."""
    return job_start(kind=kind, params=params, created_by=created_by)


def export_job_start(
    *,
    dataset_name: str,
    splits: Sequence[str] | None = None,
    formats: Sequence[str] | str = FORMATS,
    created_by=None,
) -> Job:
    """Check the request, create a pending export job (as ``export_job_create``) and
    queue it for a worker once the row is committed: nothing is queued if the
    surrounding transaction rolls back. Raises NotFound / ExportError naming a bad
    request, before any row is written."""
    jobs_fail_orphaned()  # a start tidies dead runs, so no list shows them running
    with transaction.atomic():
        job = export_job_create(dataset_name=dataset_name, splits=splits, formats=formats, created_by=created_by)
        task_queue_on_commit("annotation.tasks.run_export_job", job.id)
    return job


def evaluation_job_start(
    *,
    dataset_name: str,
    split: str,
    models: Sequence[ModelSpec],
    ratings_export: int | None = None,
    audited: bool = True,
    explain: bool = False,
    size_threshold: float | None = None,
    adversarial: dict | None = None,
    created_by=None,
) -> Job:
    """Check the request (``evaluation_job_params``), create a pending evaluation job and
    queue it once the row is committed. Raises NotFound / EvaluationRequestError /
    Conflict naming a bad request before any row is written or any dead job tidied (a
    running export the request names is refused as running, not failed first)."""
    explained = {"explain": explain, "adversarial": adversarial}
    explained |= {"size_threshold": size_threshold} if size_threshold is not None else {}
    params = evaluation_job_params(
        dataset_name=dataset_name,
        split=split,
        models=models,
        ratings_export=ratings_export,
        audited=audited,
        **explained,
    )
    jobs_fail_orphaned()  # a start tidies dead runs, so no list shows them running
    with transaction.atomic():
        job = evaluation_job_create(params=params, created_by=created_by)
        task_queue_on_commit("annotation.tasks.run_evaluation_job", job.id)
    return job
