"""Real data for the fuzz runs, so generated path ids hit existing objects as well as
missing ones: the demo dataset (images on disk, embeddings, a sampling batch with pairs
and rating slots, the demo accounts: admin, rater1..5, researcher), a few fully rated
pairs, and a finished export with its files."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from django.core.management import call_command
from django.db import transaction

from annotation import export
from annotation.jobs.tasks import run_export_job
from annotation.management.commands.load_demo import DEMO_ACCOUNTS
from annotation.models import Dataset, Job, Pair, RatingSlot
from sampling.models import SamplingBatch
from tests.frontend.rating_setup import rater
from tests.support.rating_support import api_id, rate_pair

# The demo accounts (annotation/management/commands/load_demo.py), one per role.
_DEMO_PASSWORDS = {username: password for username, password, _ in DEMO_ACCOUNTS}
ROLE_ACCOUNTS = {
    role: (username, _DEMO_PASSWORDS[username])
    for role, username in (("admin", "admin"), ("researcher", "researcher"), ("rater", "rater1"))
}


@dataclass
class World:
    """Names and ids of real objects, by path parameter name."""

    path_values: dict[str, list] = field(default_factory=dict)


def world_build() -> World:
    """Load the demo, have raters 1-5 rate three pairs fully (so the export has complete
    pairs and rater 1 has ratings to list) and run one export to the end. The rows are
    committed: the app is served from another thread, on its own connection."""
    call_command("load_demo", force=True, stdout=io.StringIO())
    dataset = Dataset.objects.get(name="demo")
    raters = [rater(f"rater{n}") for n in range(1, 6)]
    for pair in Pair.objects.filter(dataset=dataset).order_by("id")[:3]:
        rate_pair(pair, [1.0, 2.5, 3.0, 4.5, 5.0], raters=raters)
    with transaction.atomic():
        job = export.export_job_create(
            dataset_name=dataset.name, splits=None, formats=export.FORMATS, created_by=rater("researcher")
        )
    run_export_job(job.id)
    job.refresh_from_db()
    if job.status != "succeeded":
        raise RuntimeError(f"the fuzz world's export failed: {job.error}")
    files = [entry["name"] for entry in export.export_files(job=job)]
    slots = list(RatingSlot.objects.filter(pair__dataset=dataset).order_by("id").values_list("id", flat=True)[:20])
    batch_ids = list(SamplingBatch.objects.order_by("id").values_list("id", flat=True))
    image_keys = list(dataset.images.order_by("id").values_list("key", flat=True)[:3])
    return World(
        path_values={
            "dataset": [dataset.name],
            "split": list(dataset.splits.values_list("name", flat=True)),
            "job_id": [job.id, *Job.objects.exclude(pk=job.id).values_list("id", flat=True)[:2]],
            "name": [*files[:3], "manifest.json"],
            "slot_id": [api_id("slot", slot) for slot in slots],  # as the rating API gives them
            "batch_id": batch_ids,
            "username": ["rater1", "rater2", "researcher"],
            "key": image_keys,
        }
    )
