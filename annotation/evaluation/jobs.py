"""Evaluation jobs: the ``evaluate`` command's work run in the background from a status
row (the researcher page and the API), with the dataset's own embedding spaces, writing
``report.json`` and ``comparison.csv`` into its own folder under ``EXPORT_DIR``.

The Django side of the evaluation package (the other modules are pure numpy).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Subquery

from annotation.catalog.selectors import dataset_get, embedding_space_get, split_get, split_item_keys, split_rated_pairs
from annotation.core.errors import Conflict, DomainError, NotFound
from annotation.core.progress import Progress
from annotation.evaluation.compare import comparison_csv, comparison_rows
from annotation.evaluation.explain.failures import SIZE_THRESHOLD
from annotation.evaluation.explained import (
    ADVERSARIAL,
    ADVERSARIAL_COLUMNS,
    FAILURES,
    adversarial_settings,
    explain_inputs,
    explain_model,
    failures_csv,
    text_encoder_check,
)
from annotation.evaluation.inputs import EvaluationError, RatedPairs, SplitItems, load_space, read_ratings_folder
from annotation.evaluation.report import evaluate
from annotation.models import Dataset, Job, JobStatus, Modality
from annotation.runs.jobs import job_create
from annotation.runs.selectors import export_job_get

REPORT = "report.json"
COMPARISON = "comparison.csv"
FILES = (REPORT, COMPARISON)
# An evaluation with ``explain`` writes the failures file too, with adversarial queries
# the changed captions' file.
EXPLAIN_FILES = (FAILURES, ADVERSARIAL)
MEDIA_TYPES = {REPORT: "application/json", COMPARISON: "text/csv", FAILURES: "text/csv", ADVERSARIAL: "text/csv"}


class EvaluationRequestError(DomainError):
    """An evaluation that cannot run as asked (the message names what is wrong)."""

    code = "evaluation_invalid"


@dataclass(frozen=True)
class ModelSpec:
    """A model to score: its name and the dataset's stored spaces it is read from (at
    least one); ``joint``: one space for images and captions (a dual encoder)."""

    name: str
    image_space: str | None
    caption_space: str | None
    joint: bool


def _model_check(dataset: Dataset, model: ModelSpec) -> dict:
    if not model.name.strip():
        raise EvaluationRequestError("every model needs a name")
    if not (model.image_space or model.caption_space):
        raise EvaluationRequestError(f"model {model.name!r} names no embedding space; choose one at least")
    dimensions = {}
    for modality, name in ((Modality.IMAGE, model.image_space), (Modality.CAPTION, model.caption_space)):
        if name:
            space = embedding_space_get(dataset=dataset, name=name)
            if space.modality != modality:
                raise EvaluationRequestError(
                    f"model {model.name!r}: embedding space {name!r} holds {space.modality} vectors, "
                    f"not {modality} vectors"
                )
            dimensions[modality] = space.dimension
    if model.joint and (len(dimensions) != 2 or len(set(dimensions.values())) != 1):
        raise EvaluationRequestError(
            f"model {model.name!r}: a joint space needs an image and a caption space of one dimension "
            f"(got {', '.join(f'{m} {d}-d' for m, d in dimensions.items())})"
        )
    return {"name": model.name.strip(), **{k: v for k, v in vars(model).items() if k != "name"}}


def _ratings_dir(dataset: Dataset, export_id: int | None) -> str | None:
    """The folder of a succeeded export of ``dataset`` with CxC files, or None."""
    if export_id is None:
        return None
    export = export_job_get(job_id=export_id)
    if export.params.get("dataset") != dataset.name:
        raise EvaluationRequestError(f"export job #{export_id} is of dataset {export.params.get('dataset')!r}")
    if export.status != JobStatus.SUCCEEDED:
        raise Conflict(f"export job #{export_id} is {export.status}; its ratings can be used once it has succeeded")
    if "cxc" not in export.params.get("formats", []):
        raise EvaluationRequestError(f"export job #{export_id} has no CxC files (formats: cxc)")
    return export.result["out"]


def evaluation_job_params(
    *,
    dataset_name: str,
    split: str,
    models: Sequence[ModelSpec],
    ratings_export: int | None = None,
    audited: bool = True,
    explain: bool = False,
    size_threshold: float = SIZE_THRESHOLD,
    adversarial: dict | None = None,
) -> dict:
    """The checked parameters of an evaluation job. Raises NotFound /
    EvaluationRequestError / Conflict naming a bad request (an export still running among
    them), before anything is written or tidied. ``explain``: also the explained failures
    of each model with a caption space, SD's binary threshold ``size_threshold`` (a share
    of the image's area, 0-1); ``adversarial``: with ``explain``, also the adversarial
    queries, with these settings (``adversarial_settings``' arguments), each model's
    changed captions re-embedded by the encoder its caption space was made with."""
    dataset = dataset_get(name=dataset_name)
    split_get(dataset=dataset, name=split)
    if not models:
        raise EvaluationRequestError("choose at least one model")
    checked = [_model_check(dataset, model) for model in models]
    names = [model["name"] for model in checked]
    if len(set(names)) != len(names):
        raise EvaluationRequestError(f"give each model a name of its own (got {', '.join(names)})")
    if explain and not any(model["caption_space"] for model in checked):
        raise EvaluationRequestError("explained failures rank captions: give a model a caption space")
    if not 0 <= size_threshold <= 1:
        raise EvaluationRequestError(f"the size threshold is a share of the image, 0-1; got {size_threshold!r}")
    if adversarial is not None and not explain:
        raise EvaluationRequestError("adversarial queries are part of the explained failures: ask for explain too")
    explained = None
    if explain:
        explained = {"size_threshold": float(size_threshold), "adversarial": None}
        if adversarial is not None:
            explained["adversarial"] = _adversarial_check(dataset, checked, adversarial)
    return {
        "dataset": dataset.name,
        "split": split,
        "models": checked,
        "ratings_export": ratings_export,
        "ratings_dir": _ratings_dir(dataset, ratings_export),
        "audited": bool(audited),
        "explain": explained,
    }


def _adversarial_check(dataset: Dataset, models: list[dict], settings: dict) -> dict:
    """The adversarial settings checked, and each caption space's encoder known to ``embed``."""
    try:
        checked = adversarial_settings(**settings)
    except EvaluationError as exc:
        raise EvaluationRequestError(str(exc)) from None
    for model in models:
        if model["caption_space"]:
            try:
                text_encoder_check(embedding_space_get(dataset=dataset, name=model["caption_space"]).model_name)
            except ValueError as exc:
                raise EvaluationRequestError(f"model {model['name']!r}: {exc}") from None
    return checked


def evaluation_job_create(*, params: dict, created_by=None) -> Job:
    """A pending evaluation job of checked ``params`` (``evaluation_job_params``) writing to
    its own folder under ``EXPORT_DIR``; ``annotation.jobs.dispatch.evaluation_job_start``
    also queues it."""
    with transaction.atomic():
        job = job_create(kind=Job.Kind.EVALUATE, params=params, created_by=created_by)
        job.params["out"] = str(Path(settings.EXPORT_DIR).resolve() / f"evaluation-{job.id}")
        job.save(update_fields=["params"])
    return job


def split_audited(split) -> dict[str, RatedPairs]:
    """The split's own fully rated pairs as rated rows per kind (the audited positives)."""
    source = f"dataset ratings of split {split.name!r}"
    return {
        kind: RatedPairs(kind=kind, source=source, first=first, second=second, scores=np.asarray(scores, np.float64))
        for kind, (first, second, scores) in split_rated_pairs(split=split).items()
    }


def _write_text(text: str, path: Path) -> None:
    """Write atomically: the file appears complete or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_evaluation_params(params: dict, progress: Progress) -> dict:
    """The job runner: score each model as the command does; write the report and the
    comparison; returns the job's result (the comparison rows, the files)."""
    dataset = dataset_get(name=params["dataset"])
    split = split_get(dataset=dataset, name=params["split"])
    models = params["models"]
    try:
        image_keys, caption_pairs = split_item_keys(split=split)
        items = SplitItems.from_pairs(split.name, image_keys, caption_pairs)
        ratings = read_ratings_folder(params["ratings_dir"], split.name) if params.get("ratings_dir") else None
        audited = split_audited(split) if params.get("audited") else None
        explain = params.get("explain")
        inputs = explain_inputs(split, items) if explain else None
        reports, failures, changed = {}, [], []
        for done, model in enumerate(models):
            spaces = {}
            for modality in (Modality.IMAGE, Modality.CAPTION):
                name = model[f"{modality}_space"]
                stored = embedding_space_get(dataset=dataset, name=name) if name else None
                spaces[modality] = load_space(stored.vectors_path, stored.ids_path) if stored else None

            def step(message: str, done=done, name=model["name"]) -> None:
                progress(done, len(models), f"model {name}: {message}")

            step("loading")
            report = evaluate(
                items=items,
                ratings=ratings,
                audited=audited,
                image_space=spaces[Modality.IMAGE],
                caption_space=spaces[Modality.CAPTION],
                joint=model["joint"],
                progress=step,
                require_task=not explain,
            )
            if explain and spaces[Modality.CAPTION] is not None:
                explained = explain_model(
                    model["name"],
                    items,
                    spaces[Modality.CAPTION],
                    inputs,
                    size_threshold=explain["size_threshold"],
                    adversarial=_with_encoder(dataset, model, explain.get("adversarial")),
                    progress=step,
                )
                report["explain"] = explained.summary
                failures += explained.failures
                changed += explained.adversarial
            vectors = {m: space.source if space is not None else None for m, space in spaces.items()}
            reports[model["name"]] = {"vectors": vectors, **report}
    except EvaluationError as exc:
        raise EvaluationRequestError(str(exc)) from None
    progress(len(models), len(models), "writing the report")
    rows = comparison_rows(reports)
    head = {"dataset": dataset.name, "split": split.name, "ratings_dir": params.get("ratings_dir")}
    head |= {"audited": bool(params.get("audited"))}
    out = Path(params["out"])
    _write_text(
        json.dumps(head | {"models": reports, "comparison": rows}, indent=2, allow_nan=False) + "\n", out / REPORT
    )
    _write_text(comparison_csv(rows), out / COMPARISON)
    names = FILES + _write_explained(out, explain, failures, changed)
    files = [{"name": name, "bytes": (out / name).stat().st_size} for name in names]
    skipped = {name: report["skipped"] for name, report in reports.items()}
    return {
        "out": str(out),
        "models": list(reports),
        "items": {"images": len(items.image_keys), "captions": len(items.caption_keys)},
        "comparison": rows,
        "skipped": skipped,
        "files": files,
    }


def _write_explained(out: Path, explain: dict | None, failures: list, changed: list) -> tuple[str, ...]:
    """The failures file of an evaluation with ``explain``, the adversarial file of one
    with adversarial queries; the names of the files written."""
    names = explained_files(explain)
    if FAILURES in names:
        _write_text(failures_csv(failures), out / FAILURES)
    if ADVERSARIAL in names:
        _write_text(failures_csv(changed, ADVERSARIAL_COLUMNS), out / ADVERSARIAL)
    return names


def explained_files(explain: dict | None) -> tuple[str, ...]:
    """The files beside the report of an evaluation with these ``explain`` parameters."""
    if not explain:
        return ()
    return EXPLAIN_FILES if explain.get("adversarial") is not None else (FAILURES,)


def _with_encoder(dataset: Dataset, model: dict, adversarial: dict | None) -> dict | None:
    """The adversarial settings with the model's own caption encoder, or None."""
    if adversarial is None:
        return None
    return adversarial | {"encoder": embedding_space_get(dataset=dataset, name=model["caption_space"]).model_name}


def _numbered(jobs):
    """``jobs`` with ``number``: the evaluation's place among all evaluations in the order
    they were started (1 for the first). Job ids are shared with every other kind of job
    (imports, exports), so an id counts no one's evaluations."""
    started_before = (
        Job.objects.filter(kind=Job.Kind.EVALUATE, id__lte=OuterRef("id"))
        .order_by()
        .values("kind")
        .annotate(count=Count("id"))
        .values("count")
    )
    return jobs.annotate(number=Subquery(started_before))


def evaluation_job_list(*, dataset_name: str | None = None):
    """Evaluation jobs, newest first, each with its ``number``; only those of
    ``dataset_name`` when given (the numbers still count every evaluation)."""
    jobs = _numbered(Job.objects.filter(kind=Job.Kind.EVALUATE)).order_by("-created_at", "-id")
    return jobs.filter(params__dataset=dataset_name) if dataset_name else jobs


def evaluation_job_get(*, job_id: int) -> Job:
    """The evaluation job ``job_id`` with its ``number``; NotFound for a missing id or a
    job of another kind."""
    job = _numbered(Job.objects.filter(pk=job_id, kind=Job.Kind.EVALUATE)).first()
    if job is None:
        raise NotFound(f"no evaluation job #{job_id}")
    return job


def evaluation_file_path(*, job: Job, name: str) -> Path:
    """A file of a finished evaluation job. Conflict while it has not succeeded,
    NotFound for another name or a removed file."""
    if job.status != JobStatus.SUCCEEDED:
        raise Conflict(f"evaluation job #{job.id} is {job.status}; its files can be downloaded once it has succeeded")
    if name not in FILES + explained_files(job.params.get("explain")):
        raise NotFound(f"evaluation job #{job.id} has no file {name!r}")
    path = Path(job.result["out"]) / name
    if not path.is_file():
        raise NotFound(f"file {name!r} of evaluation job #{job.id} is no longer on disk")
    return path
