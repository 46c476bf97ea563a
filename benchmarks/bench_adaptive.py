"""Adaptive N against fixed N=5, served through the real rating policy.

On a fresh PostgreSQL database ``cxc_bench_adaptive`` (dropped at the end), in-process.
Latent pair scores are real CxC validation scores (``../shared/cxc``): ADAPTIVE_PAIRS per
task (STS, SIS, SITS; default 1,000, BENCH_SMOKE=1: 60), each sampling method in
proportion to the release's rows. For each noise sd of the grid (0.5, 0.8, 1.1) the same
ADAPTIVE_RATERS simulated raters (benchmarks/_adaptive_data.py: bias sd 0.3, 10% poor)
rate two copies of those pairs in a loop of claims and submits through
``annotation.rating.policy``: one batch with exactly 5 ratings a pair, one adaptive
(minimum ADAPTIVE_MIN=3, maximum ADAPTIVE_MAX=8, half-width ADAPTIVE_HALF_WIDTH), whose
rule reads the rater-effects model refitted every ADAPTIVE_REFIT_EVERY ratings, as the beat
refits it. Then per grid point and task: the ratings each used, and RMSE and Spearman of
pair scores against the latent truth for fixed 5 with plain means, fixed 5 with the model,
and adaptive with the model.

The model is also fitted at CxC scale in a process of its own (267,095 pairs x 5 ratings,
2,000 raters, generated): ``fit_s`` and that process's ``fit_peak_rss_mib``.

Last line: {"fit_s", "fit_peak_rss_mib", "settings", "grid": [{"noise_sd", "task",
"fixed5_ratings", "adaptive_ratings", "saved", "rmse_fixed5_mean", "rmse_fixed5_model",
"rmse_adaptive", "spearman_fixed5_mean", "spearman_adaptive"}, ...]}. It measures, it
asserts nothing; without the shared data it prints {"skipped": reason} (under CI it fails).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import _adaptive_data as sim
import numpy as np
from _common import (
    drop_database,
    env_database,
    env_number,
    fresh_database,
    peak_rss_mib,
    print_figures,
    setup_django,
    shared_files,
    sized,
)
from _field_cxc_data import read_rows
from field_cxc_val import close_django_connections

DATABASE = env_database("cxc_bench_adaptive")
PAIRS_PER_TASK = sized("ADAPTIVE_PAIRS", 1_000, 60)
RATERS = env_number("ADAPTIVE_RATERS", 60, minimum=10)
MINIMUM = env_number("ADAPTIVE_MIN", 3)
MAXIMUM = env_number("ADAPTIVE_MAX", 8, minimum=MINIMUM + 1)
HALF_WIDTH = env_number("ADAPTIVE_HALF_WIDTH", 0.8, minimum=0.01)
REFIT_EVERY = sized("ADAPTIVE_REFIT_EVERY", 500, 60)
SEED = env_number("ADAPTIVE_SEED", 0, minimum=0)
FIXED_N = 5
GRID = (0.5, 0.8, 1.1)
CXC_PAIRS, CXC_RATERS = 267_095, 2_000
TIME_ON_ITEM_MS = 20_000  # above any speed floor


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fit_at_cxc_scale() -> dict:
    """Run in a child process: generate CxC-sized ratings, fit, report time and peak RSS."""
    from annotation.quality.rater_effects import fit

    rng = np.random.default_rng(SEED)
    latent = rng.uniform(0, 5, CXC_PAIRS)
    raters = sim.draw_raters(CXC_RATERS, 0.8, rng)
    pair = np.repeat(np.arange(CXC_PAIRS, dtype=np.int32), FIXED_N)
    rater = rng.integers(0, CXC_RATERS, pair.size, dtype=np.int32)
    noise = rng.normal(0, 1, pair.size) * raters.noise_sd[rater]
    score = np.clip(latent[pair] + raters.bias[rater] + noise, 0, 5)
    started = time.perf_counter()
    fitted = fit(pair, rater, score)
    return {
        "fit_s": round(time.perf_counter() - started, 2),
        "fit_peak_rss_mib": peak_rss_mib(),
        "fit_ratings": int(score.size),
        "fit_iterations": fitted.iterations,
    }


def child_fit() -> dict:
    done = subprocess.run([sys.executable, __file__, "--fit-at-cxc-scale"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_raters():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotation.people.accounts import qualifications_set

    group = Group.objects.get_or_create(name="rater")[0]
    users = []
    for number in range(RATERS):
        user = get_user_model().objects.create_user(f"sim-rater-{number}")
        user.groups.add(group)
        qualifications_set(rater=user, kinds=list(sim.TASK_FILES))
        users.append(user)
    return users


def queue_copy(
    name: str, latents: dict[str, tuple[np.ndarray, np.ndarray]], adaptive: bool
) -> dict[int, tuple[str, float]]:
    """A dataset ``name`` with one pair per latent score of each task, of that score's
    sampling method in the release; pair id -> (task, latent)."""
    from annotation.models import Caption, Dataset, Image, Pair, Split
    from annotation.serving import queue_counters_add
    from annotation.serving.pairs import PairSpec, pairs_create_bulk
    from sampling.models import SamplingBatch

    dataset = Dataset.objects.create(name=name, image_url_prefix="https://images.example.org/")
    split = Split.objects.create(dataset=dataset, name="val")
    n = max(len(scores) for scores, _ in latents.values())
    images = Image.objects.bulk_create(
        Image(dataset=dataset, split=split, key=f"img{i}.jpg", file_path=f"img{i}.jpg") for i in range(2 * n + 1)
    )
    captions = Caption.objects.bulk_create(
        Caption(dataset=dataset, image=images[i // 2], key=f"cap{i}", sentid=i, text=f"caption {i}")
        for i in range(2 * n)
    )
    batch = SamplingBatch.objects.create(
        dataset=dataset,
        split=split,
        source=SamplingBatch.Source.UPLOADED,
        ratings_per_pair=MINIMUM if adaptive else FIXED_N,
        ratings_max=MAXIMUM if adaptive else None,
        adaptive_half_width=HALF_WIDTH if adaptive else None,
    )
    specs, truth = [], []
    for task, (scores, methods) in latents.items():
        for i, (latent, method) in enumerate(zip(scores, methods, strict=True)):
            if task == "STS":
                spec = PairSpec("STS", method, caption_a=captions[2 * i].id, caption_b=captions[2 * i + 1].id)
            elif task == "SIS":
                spec = PairSpec("SIS", method, image_a=images[2 * i].id, image_b=images[2 * i + 1].id)
            else:
                spec = PairSpec("SITS", method, caption_a=captions[2 * i].id, image_a=images[2 * i + 2].id)
            specs.append(spec.canonical())
            truth.append((task, float(latent)))
    created = pairs_create_bulk(batch=batch, specs=specs)
    queue_counters_add(
        dataset_id=dataset.pk, pairs_per_kind={task: len(scores) for task, (scores, _) in latents.items()}
    )
    if sum(created.values()) != len(specs):
        raise SystemExit(f"{name}: {sum(created.values())} of {len(specs)} pairs queued")
    by_identity = {spec.identity(): value for spec, value in zip(specs, truth, strict=True)}
    return {
        pair.pk: by_identity[(pair.kind, pair.caption_a_id, pair.caption_b_id, pair.image_a_id, pair.image_b_id)]
        for pair in Pair.objects.filter(dataset=dataset)
    }


def simulate(name: str, users, raters: sim.Raters, truth: dict, adaptive: bool, rng) -> dict:
    """Claims and submits in rounds (raters in a random order) until nobody is served."""
    from annotation.models import Dataset
    from annotation.quality.rater_fits import rater_model_refit
    from annotation.rating import policy

    dataset = Dataset.objects.get(name=name)
    ratings, refits, started = 0, 0, time.perf_counter()
    served = True
    while served:
        served = False
        for number in rng.permutation(len(users)):
            assignment = policy.slot_claim(rater=users[number], dataset=name)
            if assignment is None:
                continue
            policy.rating_submit(
                rater=users[number],
                dataset=name,
                slot_id=assignment.slot_id,
                score=raters.score(number, truth[assignment.pair_id][1], rng),
                time_on_item_ms=TIME_ON_ITEM_MS,
                time_to_first_move_ms=None,
                adjustments=0,
                idempotency_key=f"{name}-{assignment.slot_id}",
            )
            ratings += 1
            served = True
            if adaptive and ratings % REFIT_EVERY == 0:
                rater_model_refit(dataset=dataset)
                refits += 1
    seconds = time.perf_counter() - started
    log(f"{name}: {ratings:,} ratings in {seconds:.1f} s ({refits} refits)")
    return {"ratings": ratings, "seconds": round(seconds, 1), "refits": refits}


def scores_of(name: str, truth: dict) -> dict[str, dict]:
    """Per task: latent truth, plain means, the model's scores (fitted as the app fits it:
    annotation.quality.rater_fits.kind_fit) and the ratings used."""
    from annotation.models import Dataset, Rating, RatingStatus
    from annotation.quality.rater_fits import kind_fit

    dataset = Dataset.objects.get(name=name)
    result = {}
    for task in sim.TASK_FILES:
        fitted = kind_fit(dataset.pk, task)
        rows = Rating.objects.filter(pair__dataset=dataset, pair__kind=task, status=RatingStatus.VALID)
        pair_ids = np.array(rows.values_list("pair_id", flat=True), dtype=np.int64)
        scores = np.array(rows.values_list("score", flat=True), dtype=np.float64)
        pairs, pair_index = np.unique(pair_ids, return_inverse=True)
        if not np.array_equal(pairs, fitted.pair_ids):
            raise SystemExit(f"{name} {task}: the fit's pairs are not the rated pairs")
        result[task] = {
            "truth": np.array([truth[int(p)][1] for p in pairs]),
            "mean": np.bincount(pair_index, weights=scores) / np.bincount(pair_index),
            "model": fitted.result.pair_score,
            "ratings": int(scores.size),
        }
    return result


def grid_point(noise_sd: float, task: str, fixed: dict, adaptive: dict) -> dict:
    f, a = fixed[task], adaptive[task]
    return {
        "noise_sd": noise_sd,
        "task": task,
        "pairs": int(f["truth"].size),
        "fixed5_ratings": f["ratings"],
        "adaptive_ratings": a["ratings"],
        "saved": round(1 - a["ratings"] / f["ratings"], 4),
        "rmse_fixed5_mean": round(sim.rmse(f["mean"], f["truth"]), 4),
        "rmse_fixed5_model": round(sim.rmse(f["model"], f["truth"]), 4),
        "rmse_adaptive": round(sim.rmse(a["model"], a["truth"]), 4),
        "rmse_adaptive_mean": round(sim.rmse(a["mean"], a["truth"]), 4),
        "spearman_fixed5_mean": round(sim.spearman(f["mean"], f["truth"]), 4),
        "spearman_adaptive": round(sim.spearman(a["model"], a["truth"]), 4),
    }


def main() -> int:
    folder, why = shared_files("cxc", sim.TASK_FILES.values())
    if why:
        print_figures({"skipped": why})
        return 0
    scale = child_fit()
    log(f"fit at CxC scale: {scale}")
    rng = np.random.default_rng(SEED)
    latents = {
        task: sim.stratified_latents(read_rows(folder / file), PAIRS_PER_TASK, rng)
        for task, file in sim.TASK_FILES.items()
    }
    setup_django(fresh_database(DATABASE))
    try:
        users = make_raters()
        grid = []
        for noise_sd in GRID:
            raters = sim.draw_raters(RATERS, noise_sd, np.random.default_rng([SEED, int(noise_sd * 10)]))
            runs = {}
            for mode in ("fixed", "adaptive"):
                name = f"{mode}-{noise_sd}"
                truth = queue_copy(name, latents, adaptive=mode == "adaptive")
                simulate(name, users, raters, truth, mode == "adaptive", np.random.default_rng([SEED, 7]))
                runs[mode] = scores_of(name, truth)
            grid += [grid_point(noise_sd, task, runs["fixed"], runs["adaptive"]) for task in sim.TASK_FILES]
            log(json.dumps(grid[-3:]))
    finally:
        close_django_connections()
        drop_database(DATABASE)
    settings = {
        "pairs_per_task": PAIRS_PER_TASK,
        "raters": RATERS,
        "minimum": MINIMUM,
        "maximum": MAXIMUM,
        "half_width": HALF_WIDTH,
        "refit_every": REFIT_EVERY,
        "seed": SEED,
    }
    print_figures({**scale, "settings": settings, "grid": grid})
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--fit-at-cxc-scale"]:
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
        print(json.dumps(fit_at_cxc_scale()))
        sys.exit(0)
    sys.exit(main())
