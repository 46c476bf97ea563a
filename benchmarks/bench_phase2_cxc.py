"""Phase 2 against CxC's own: how many of the release's c2i_intrasim pairs our c2i_intrasim
makes from the release's own pivots.

On a fresh PostgreSQL database ``cxc_bench_phase2`` (dropped at the end), in-process:

1. import the validation split from the ids the three release files name (as
   bench-field-cxc: placeholder caption text, each caption under its c2i_original image);
2. upload ``sts_val.csv`` and ``sis_val.csv`` unchanged as pair lists with one rating per
   pair, and rate every pair once through the rating services (claim, submit) with the
   release's ``agg_score`` for it, so each pivot's mean is the release's score and each
   pivot keeps the order the release lists it in;
3. sample ``c2i_intrasim`` with the release's c2i_intrasim row count as budget (seed
   PHASE2_SEED, default 0);
4. compare with the release's c2i_intrasim rows of ``sits_val.csv``: exact (caption,
   image) overlap, and at the image level (the caption's image, the image), for the whole
   batch and for each half (the STS half comes first in pair id order).

Last line: {"budget", "pairs", "exact_overlap", "image_level_overlap",
"release_image_pairs", "image_level_reach", "halves", "release_by_pivot_kind",
"batch_report", "seconds", ...}. It measures, it asserts nothing. PHASE2_LIMIT=N uploads
only the first N rows of each pivot file (BENCH_SMOKE=1: 1,000, with a budget of 300,
PHASE2_BUDGET); without the shared data it prints {"skipped": reason} (under CI it fails).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import _field_cxc_data as field_data
import _phase2_cxc_data as data
from _common import (
    drop_database,
    env_database,
    env_number,
    fresh_database,
    print_figures,
    setup_django,
    shared_files,
    sized,
)
from field_cxc_val import DATASET, SPLIT, close_django_connections, import_dataset, settings_env

DATABASE = env_database("cxc_bench_phase2")
PIVOT_FILES = {"sts_val.csv": ("caption1", "caption2"), "sis_val.csv": ("image1", "image2")}
# Long enough for any speed floor: each rating stands for a rater's considered score.
TIME_ON_ITEM_MS = 20_000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def upload_pivots(folder: Path) -> dict:
    """Queue each pivot file as an uploaded batch with one rating per pair."""
    from sampling.runs.batch import sampling_batch_run
    from sampling.services import sampling_batch_create_from_upload

    queued = {}
    for name in PIVOT_FILES:
        batch = sampling_batch_create_from_upload(
            dataset_name=DATASET, split_name=SPLIT, path=folder / name, ratings_per_pair=1
        )
        batch = sampling_batch_run(batch_id=batch.pk)
        if batch.status != "succeeded":
            raise SystemExit(f"upload of {name} failed: {batch.error}")
        queued[name] = sum(batch.pairs_per_method.values())
    log(f"pivot pairs queued: {queued}")
    return queued


def pair_scores(folder: Path) -> dict[int, float]:
    """Pair id -> the release's agg_score of that pair, for every queued pivot pair."""
    from annotation.models import Pair

    release: dict[tuple[str, str], float] = {}
    for name, columns in PIVOT_FILES.items():
        release |= data.first_scores(field_data.read_rows(folder / name), columns)
    rows = Pair.objects.filter(dataset__name=DATASET).values_list(
        "id", "image_a__key", "image_b__key", "caption_a__key", "caption_b__key"
    )
    scores = {}
    for pair_id, image_a, image_b, caption_a, caption_b in rows:
        items = (image_a, image_b) if image_a else (caption_a, caption_b)
        scores[pair_id] = release[tuple(sorted(items))]
    return scores


def rate_pivots(scores: dict[int, float]) -> dict:
    """One rater claims and rates every pivot pair with its release score."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotation.people.accounts import qualifications_set
    from annotation.rating import policy

    rater = get_user_model().objects.create_user("phase2-rater")
    rater.groups.add(Group.objects.get_or_create(name="rater")[0])
    qualifications_set(rater=rater, kinds=["STS", "SIS"])
    started = time.perf_counter()
    rated = 0
    while (assignment := policy.slot_claim(rater=rater, dataset=DATASET)) is not None:
        policy.rating_submit(
            rater=rater,
            dataset=DATASET,
            slot_id=assignment.slot_id,
            score=scores[assignment.pair_id],
            time_on_item_ms=TIME_ON_ITEM_MS,
            time_to_first_move_ms=None,
            adjustments=0,
            idempotency_key=f"pivot-{assignment.pair_id}",
        )
        rated += 1
    seconds = time.perf_counter() - started
    log(f"rated {rated} pivots in {seconds:.1f} s")
    return {"ratings": rated, "pairs": len(scores), "seconds": round(seconds, 1)}


def sample_intrasim(budget: int, seed: int):
    from sampling.runs.batch import sampling_batch_run
    from sampling.services import sampling_batch_create

    batch = sampling_batch_create(
        dataset_name=DATASET, split_name=SPLIT, methods={data.INTRASIM: budget}, seed=seed, ratings_per_pair=5
    )
    batch = sampling_batch_run(batch_id=batch.pk)
    if batch.status != "succeeded":
        raise SystemExit(f"c2i_intrasim batch failed: {batch.error}")
    log(f"c2i_intrasim batch: {batch.stats[data.INTRASIM]}")
    return batch


def our_pairs(batch) -> list[tuple[str, str]]:
    """The batch's pairs as (caption id, image id), in pair id order (the order sampled)."""
    from annotation.models import Pair

    return list(Pair.objects.filter(batch=batch).order_by("id").values_list("caption_a__key", "image_a__key"))


def compare(shared: Path, pivots_folder: Path, ours: list[tuple[str, str]], report: dict) -> dict:
    sits = field_data.read_rows(shared / "sits_val.csv")
    image_of = data.caption_images(sits)
    release = data.intrasim_rows(sits)
    figures = data.overlap(ours, release, image_of)
    taken_sts = report["sts"]["taken"]
    figures["halves"] = {
        "sts": data.overlap(ours[:taken_sts], release, image_of),
        "sis": data.overlap(ours[taken_sts:], release, image_of),
    }
    pivots = data.pivot_image_pairs(
        field_data.read_rows(pivots_folder / "sts_val.csv"),
        field_data.read_rows(pivots_folder / "sis_val.csv"),
        image_of,
    )
    figures["release_by_pivot_kind"] = data.release_by_pivot_kind(release, image_of, pivots)
    return figures


def pivot_folder(shared: Path, work: Path, limit: int | None) -> Path:
    """The release folder itself, or first-N-row copies of the pivot files."""
    if limit is None:
        return shared
    folder = work / "limited"
    folder.mkdir()
    for name in PIVOT_FILES:
        field_data.copy_head(shared / name, folder / name, limit)
    return folder


def run(shared: Path, work: Path, limit: int | None, seed: int) -> dict:
    seconds: dict[str, float] = {}

    def timed(phase: str, function, *args):
        started = time.perf_counter()
        value = function(*args)
        seconds[phase] = round(time.perf_counter() - started, 2)
        return value

    setup_django(fresh_database(DATABASE), **settings_env(work / "var"))
    folder = pivot_folder(shared, work, limit)
    timed("import", import_dataset, shared, work)
    queued = timed("upload", upload_pivots, folder)
    rating = timed("rating", rate_pivots, pair_scores(folder))
    release_budget = len(data.intrasim_rows(field_data.read_rows(shared / "sits_val.csv")))
    budget = sized("PHASE2_BUDGET", release_budget, 300)
    batch = timed("sampling", sample_intrasim, budget, seed)
    report = batch.stats[data.INTRASIM]
    figures = {"budget": budget, "seed": seed, "limit": limit}
    figures |= compare(shared, folder, our_pairs(batch), report)
    figures |= {"pivots_queued": queued, "rating": rating, "batch_report": report, "seconds": seconds}
    return figures


def main() -> int:
    shared, reason = shared_files("cxc", [*PIVOT_FILES, "sits_val.csv"])
    if reason:
        log(f"bench-phase2-cxc skipped: {reason}")
        print_figures({"skipped": reason})
        return 0
    limit = sized("PHASE2_LIMIT", 0, 1000, minimum=0) or None
    seed = env_number("PHASE2_SEED", 0, minimum=0)
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="phase2-cxc-"))
    try:
        figures = run(shared, work, limit, seed)
    finally:
        close_django_connections()
        drop_database(DATABASE)
        shutil.rmtree(work, ignore_errors=True)
    figures["seconds"]["total"] = round(time.perf_counter() - started, 1)
    print_figures(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
