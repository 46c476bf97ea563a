"""A rated campaign backed up while raters go on rating, for the backup tests. It runs
inside the live installation's own process (``manage.py shell``, on PostgreSQL or on the
embedded SQLite mode alike) and prints one JSON line that the test reads.

The reference the restored installation is compared with is taken while the raters are
held: the export and every table's count are made, then the backup starts, and the
raters are let go from the moment the backup says its snapshot is taken. They then
store ratings before the database is copied and while it is: none of them may be in the
backup, and every rating stored before the snapshot must be."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection

from annotation.backup.create import backup_create
from annotation.backup.tables import count_rows
from annotation.catalog.services import embedding_space_import
from annotation.core.errors import DomainError
from annotation.export.run import dataset_export
from annotation.models import Caption, EmbeddingSpace, Modality, Rating, TaskKind
from annotation.rating.policy import rating_submit, slot_claim
from tests.factories import UserFactory
from tests.support.export_data import rated_factory_dataset
from tests.support.queue_support import queue_pairs, submit_kwargs

# Ratings the raters store before the backup, and after its snapshot before its copy.
BEFORE_BACKUP = 12
AFTER_SNAPSHOT = 15
_WAIT_SECONDS = 120


class RatingCrowd:
    """Raters claiming and submitting through the rating policy in threads, which the
    test can hold (every cycle under way finishes first) and let go."""

    def __init__(self, dataset: str, raters: list):
        self.dataset, self.raters = dataset, raters
        self.state = threading.Condition()
        self.held, self.stopping, self.in_flight = False, False, 0
        self.acknowledged: list[int] = []
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._rate, args=(rater, n)) for n, rater in enumerate(raters)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _enter(self) -> bool:
        with self.state:
            while self.held and not self.stopping:
                self.state.wait()
            if self.stopping:
                return False
            self.in_flight += 1
            return True

    def _leave(self) -> None:
        with self.state:
            self.in_flight -= 1
            self.state.notify_all()

    def _rate(self, rater, number: int) -> None:
        rng = random.Random(number)
        try:
            while self._enter():
                try:
                    self._cycle(rater, rng)
                finally:
                    self._leave()
                time.sleep(rng.random() * 0.005)
        except DomainError as error:
            self.errors.append(f"rater {number}: {error}")
        finally:
            connection.close()

    def _cycle(self, rater, rng: random.Random) -> None:
        assignment = slot_claim(rater=rater, dataset=self.dataset)
        if assignment is None:
            time.sleep(0.02)
            return
        key = f"{rater.id}-{assignment.slot_id}"
        score = round(rng.uniform(0, 5), 2)
        result = rating_submit(
            rater=rater, dataset=self.dataset, slot_id=assignment.slot_id, **submit_kwargs(key, score)
        )
        with self.state:
            self.acknowledged.append(result.rating_id)
            self.state.notify_all()

    def hold(self) -> None:
        """Stop new cycles and wait for those under way."""
        with self.state:
            self.held = True
            while self.in_flight:
                self.state.wait()

    def release(self) -> None:
        with self.state:
            self.held = False
            self.state.notify_all()

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + _WAIT_SECONDS
        with self.state:
            while len(self.acknowledged) < count:
                if self.errors or time.monotonic() > deadline:
                    raise RuntimeError(f"raters stored {len(self.acknowledged)} of {count} ratings: {self.errors}")
                self.state.wait(0.5)

    def stop(self) -> None:
        with self.state:
            self.stopping = True
            self.state.notify_all()
        for thread in self.threads:
            thread.join(_WAIT_SECONDS)


def campaign_populate() -> tuple[str, list]:
    """A rated dataset (complete and incomplete pairs) with more pairs left to rate, an
    embedding space under DATA_DIR, an earlier export under EXPORT_DIR and an upload.
    Returns the dataset's name and the raters who will go on rating."""
    rated = rated_factory_dataset(n_images=12, seed=3)
    queue_pairs(split=rated.split, kind=TaskKind.SIS, n_pairs=120, ratings_per_pair=3)
    data = Path(settings.DATA_DIR)
    inputs = data / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    keys = list(Caption.objects.filter(image__split=rated.split).order_by("id").values_list("key", flat=True))
    vectors = np.random.default_rng(3).normal(size=(len(keys), 16)).astype(np.float32)
    np.save(inputs / "captions.npy", vectors)
    (inputs / "captions.ids.txt").write_text("\n".join(keys) + "\n")
    embedding_space_import(
        dataset_name=rated.dataset.name,
        space_name="text-16",
        modality=Modality.CAPTION,
        vectors_path=inputs / "captions.npy",
        ids_path=inputs / "captions.ids.txt",
    )
    upload = data / "uploads" / uuid.uuid4().hex / "pairs.csv"
    upload.parent.mkdir(parents=True)
    upload.write_text("caption1,caption2\n")
    dataset_export(dataset_name=rated.dataset.name, out_dir=Path(settings.EXPORT_DIR) / "export-earlier")
    raters = [UserFactory(roles=["rater"], qualified_for=list(TaskKind.values), password=None) for _ in range(6)]
    return rated.dataset.name, raters


def table_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        return count_rows(cursor, list(connection.introspection.table_names(cursor)))


def backup_under_rating(backup_dir: str, reference_dir: str) -> dict:
    """Populate, rate, back up while rating (see the module's docstring); what the test
    compares the restored installation with."""
    dataset, raters = campaign_populate()
    crowd = RatingCrowd(dataset, raters)
    crowd.start()
    try:
        crowd.wait_for(BEFORE_BACKUP)
        crowd.hold()
        reference = {"counts": table_counts(), "acknowledged": len(crowd.acknowledged)}
        dataset_export(dataset_name=dataset, out_dir=Path(reference_dir))
        marks: dict[str, int] = {}

        def report(stage: str, message: str) -> None:
            if stage == "snapshot":
                marks["snapshot"] = len(crowd.acknowledged)
                crowd.release()
                crowd.wait_for(marks["snapshot"] + AFTER_SNAPSHOT)

        manifest = backup_create(backup_dir, report)
        marks["done"] = len(crowd.acknowledged)
    finally:
        crowd.stop()
    return {
        "dataset": dataset,
        "reference": reference,
        "marks": marks,
        "manifest_counts": manifest["counts"],
        "live_ratings": Rating.objects.count(),
        "errors": crowd.errors,
        "hung_threads": sum(thread.is_alive() for thread in crowd.threads),
    }


def restored_state(export_dir: str) -> dict:
    """What the restored installation holds: every table's count, its export of the
    dataset, and where its embedding space's files are."""
    counts = table_counts()
    space = EmbeddingSpace.objects.get()
    dataset_export(dataset_name=space.dataset.name, out_dir=Path(export_dir))
    return {"counts": counts, "space_files": [space.vectors_path, space.ids_path]}


def printed(result: dict) -> None:
    print("RESULT " + json.dumps(result))
