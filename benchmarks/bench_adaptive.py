"""Adaptive N against fixed N=5, served through the real rating policy, over several seeds.

On a fresh PostgreSQL database ``cxc_bench_adaptive`` (BENCH_DATABASE; dropped at the end),
in-process. Latent pair scores are real CxC validation scores (``../shared/cxc``):
ADAPTIVE_PAIRS per task (STS, SIS, SITS; default 1,000, BENCH_SMOKE=1: 60), each sampling
method in proportion to the release's rows, drawn anew for each seed. For each noise sd of
the grid (ADAPTIVE_GRID, default 0.5,0.8,1.1; smoke: 0.8) and each of ADAPTIVE_SEEDS seeds
(default 5, smoke 2, from ADAPTIVE_SEED on), ADAPTIVE_RATERS simulated raters
(benchmarks/_adaptive_data.py: bias sd 0.3, 10% poor) rate three copies of those pairs in a
loop of claims and submits through ``annotation.rating.policy``, one batch per task in each:

- fixed: exactly 5 ratings a pair (what CxC released: scored by the plain mean, or by the
  model);
- adaptive: minimum ADAPTIVE_MIN (2), maximum ADAPTIVE_MAX (8) and a budget of
  ADAPTIVE_BUDGET (3.3) ratings a pair on average, its precision target solved from the
  rater-effects model refitted every ADAPTIVE_REFIT_EVERY ratings, as the beat refits it;
- matched: the same minimum and maximum with the precision target that the fixed copy's
  fit says reaches fixed 5's error with the model (``adaptive_solver.Planner.for_error``):
  the ratings adaptive N saves at equal error to fixed 5 with the model.

The seed fixes everything: the pairs, the raters, the order of claims (raters in a seeded
order, PostgreSQL's random() and Python's seeded before each copy) and the refits (every
ADAPTIVE_REFIT_EVERY ratings). Nothing runs concurrently; the same seed gives the same JSON
but for the "timings" key, which holds every wall-clock figure.

The model is also fitted at CxC scale in a process of its own (ADAPTIVE_FIT_PAIRS pairs,
267,095, x 5 ratings, 2,000 raters, generated): ``timings.fit_s`` and ``fit_peak_rss_mib``.

Last line: {"fit_ratings", "fit_iterations", "settings", "grid": [{"noise_sd", "task",
"pairs", "seeds", "fixed5_ratings", "adaptive_ratings", "saved", "saved_ci",
"saved_vs_model", "saved_vs_model_ci", "rmse_fixed5_mean", "rmse_fixed5_model",
"rmse_adaptive", "rmse_adaptive_hi", "rmse_matched", ... each RMSE with its "_ci",
"spearman_fixed5_mean", "spearman_adaptive", "half_width", "matched_half_width",
"meets_bar"}, ...], "timings"}: means over the seeds and 95% intervals ([low, high],
Student's t). "meets_bar": at least 33% saved and the upper end of the adaptive RMSE's
interval no higher than fixed 5's plain mean. It measures, it asserts nothing; without the
shared data it prints {"skipped": reason} (under CI it fails).
"""

from __future__ import annotations

import json
import random
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
    smoke,
)
from _field_cxc_data import read_rows
from field_cxc_val import close_django_connections

DATABASE = env_database("cxc_bench_adaptive")
PAIRS_PER_TASK = sized("ADAPTIVE_PAIRS", 1_000, 60)
RATERS = env_number("ADAPTIVE_RATERS", 60, minimum=10)
MINIMUM = env_number("ADAPTIVE_MIN", 2)
MAXIMUM = env_number("ADAPTIVE_MAX", 8, minimum=MINIMUM + 1)
BUDGET = env_number("ADAPTIVE_BUDGET", 3.3, minimum=float(MINIMUM))
REFIT_EVERY = sized("ADAPTIVE_REFIT_EVERY", 500, 60)
SEED = env_number("ADAPTIVE_SEED", 0, minimum=0)
SEEDS = sized("ADAPTIVE_SEEDS", 5, 2)
FIT_PAIRS = sized("ADAPTIVE_FIT_PAIRS", 267_095, 20_000)
FIXED_N = 5
BAR_SAVED = 0.33
CXC_RATERS = 2_000
TIME_ON_ITEM_MS = 20_000  # above any speed floor


def grid() -> tuple[float, ...]:
    import os

    text = os.environ.get("ADAPTIVE_GRID") or ("0.8" if smoke() else "0.5,0.8,1.1")
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise SystemExit(f"ADAPTIVE_GRID={text!r} is no list of noise sds") from None
    if not values or min(values) <= 0:
        raise SystemExit(f"ADAPTIVE_GRID={text!r}: every noise sd must be above 0")
    return values


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fit_at_cxc_scale() -> dict:
    """Run in a child process: generate CxC-sized ratings, fit, report time and peak RSS."""
    from annotation.quality.rater_effects import fit

    rng = np.random.default_rng(SEED)
    latent = rng.uniform(0, 5, FIT_PAIRS)
    raters = sim.draw_raters(CXC_RATERS, 0.8, rng)
    pair = np.repeat(np.arange(FIT_PAIRS, dtype=np.int32), FIXED_N)
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


def queue_copy(name: str, latents: dict[str, tuple[np.ndarray, np.ndarray]], rules: dict[str, dict]) -> dict:
    """A dataset ``name`` with one pair per latent score of each task, of that score's
    sampling method in the release, one batch per task with its rule (``rules``: task ->
    the batch's ratings_per_pair, ratings_max, adaptive_half_width, adaptive_budget);
    pair id -> (task, latent)."""
    from annotation.models import Caption, Dataset, Image, Pair, Split
    from annotation.quality.adaptive_plans import adaptive_budgets_refresh
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
    by_identity = {}
    for task, (scores, methods) in latents.items():
        batch = SamplingBatch.objects.create(
            dataset=dataset, split=split, source=SamplingBatch.Source.UPLOADED, **rules[task]
        )
        specs = []
        for i, (latent, method) in enumerate(zip(scores, methods, strict=True)):
            if task == "STS":
                spec = PairSpec("STS", method, caption_a=captions[2 * i].id, caption_b=captions[2 * i + 1].id)
            elif task == "SIS":
                spec = PairSpec("SIS", method, image_a=images[2 * i].id, image_b=images[2 * i + 1].id)
            else:
                spec = PairSpec("SITS", method, caption_a=captions[2 * i].id, image_a=images[2 * i + 2].id)
            specs.append(spec.canonical())
            by_identity[specs[-1].identity()] = (task, float(latent))
        created = pairs_create_bulk(batch=batch, specs=specs)
        if sum(created.values()) != len(specs):
            raise SystemExit(f"{name} {task}: {sum(created.values())} of {len(specs)} pairs queued")
    queue_counters_add(
        dataset_id=dataset.pk, pairs_per_kind={task: len(scores) for task, (scores, _) in latents.items()}
    )
    adaptive_budgets_refresh(dataset_id=dataset.pk)
    return {
        pair.pk: by_identity[(pair.kind, pair.caption_a_id, pair.caption_b_id, pair.image_a_id, pair.image_b_id)]
        for pair in Pair.objects.filter(dataset=dataset)
    }


def seed_claims(seed: int) -> None:
    """PostgreSQL's random() (the claim's pick among the kinds' heads) and Python's."""
    from django.db import connection

    random.seed(seed)
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(%s)", [((seed * 7919) % 1_000_003) / 1_000_003])


def simulate(name: str, users, raters: sim.Raters, truth: dict, refits: bool, seed: int) -> dict:
    """Claims and submits in rounds (raters in a seeded order) until nobody is served; with
    ``refits`` the model is refitted (and budgets solved) every REFIT_EVERY ratings."""
    from annotation.models import Dataset
    from annotation.quality.adaptive_plans import adaptive_budgets_refresh
    from annotation.quality.rater_fits import rater_model_refit
    from annotation.rating import policy

    dataset = Dataset.objects.get(name=name)
    rng = np.random.default_rng([seed, 7])
    seed_claims(seed)
    ratings, refitted, started = 0, 0, time.perf_counter()
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
            if refits and ratings % REFIT_EVERY == 0:
                rater_model_refit(dataset=dataset)
                adaptive_budgets_refresh(dataset_id=dataset.pk)
                refitted += 1
    rater_model_refit(dataset=dataset)
    seconds = time.perf_counter() - started
    log(f"{name}: {ratings:,} ratings in {seconds:.1f} s ({refitted} refits)")
    return {"ratings": ratings, "seconds": round(seconds, 1)}


def scores_of(name: str, truth: dict) -> dict[str, dict]:
    """Per task: latent truth, plain means, the model's scores (fitted as the app fits it:
    annotation.quality.rater_fits.kind_fit), the ratings used and the batch's target."""
    from annotation.models import Dataset, Rating, RatingStatus
    from annotation.quality.rater_fits import kind_fit
    from sampling.models import SamplingBatch

    dataset = Dataset.objects.get(name=name)
    result = {}
    for task in sim.TASK_FILES:
        fitted = kind_fit(dataset.pk, task)
        rows = Rating.objects.filter(pair__dataset=dataset, pair__kind=task, status=RatingStatus.VALID).order_by("id")
        pair_ids = np.array(rows.values_list("pair_id", flat=True), dtype=np.int64)
        scores = np.array(rows.values_list("score", flat=True), dtype=np.float64)
        pairs, pair_index = np.unique(pair_ids, return_inverse=True)
        if not np.array_equal(pairs, fitted.pair_ids):
            raise SystemExit(f"{name} {task}: the fit's pairs are not the rated pairs")
        batch = SamplingBatch.objects.filter(dataset=dataset, pairs__kind=task).distinct().get()
        result[task] = {
            "truth": np.array([truth[int(p)][1] for p in pairs]),
            "mean": np.bincount(pair_index, weights=scores) / np.bincount(pair_index),
            "model": fitted.result.pair_score,
            "ratings": int(scores.size),
            "half_width": batch.adaptive_half_width,
        }
    return result


def matched_half_width(name: str, task: str) -> float:
    """The precision target that the fit of copy ``name`` says reaches fixed 5's error with
    the model, for the task's pairs of that copy."""
    from django.db.models import Count

    from annotation.models import Dataset, Pair
    from annotation.quality.adaptive_plans import kind_mix
    from annotation.quality.adaptive_solver import Planner

    dataset = Dataset.objects.get(name=name)
    methods = dict(
        Pair.objects.filter(dataset=dataset, kind=task)
        .order_by()
        .values_list("sampling_method")
        .annotate(n=Count("id"))
    )
    mix = [kind_mix(dataset.pk, task, methods)]
    fixed_error = Planner(mix, minimum=FIXED_N, maximum=FIXED_N + 1).plan(None).error
    return Planner(mix, minimum=MINIMUM, maximum=MAXIMUM).for_error(fixed_error).half_width


def one_seed(noise_sd: float, seed: int, users, folder) -> tuple[dict, dict]:
    """The three copies of one seed at one noise sd: per task its figures, and the seconds."""
    rng = np.random.default_rng(seed)
    latents = {
        task: sim.stratified_latents(read_rows(folder / file), PAIRS_PER_TASK, rng)
        for task, file in sim.TASK_FILES.items()
    }
    raters = sim.draw_raters(RATERS, noise_sd, np.random.default_rng([seed, round(noise_sd * 10)]))
    fixed_rule = {"ratings_per_pair": FIXED_N}
    runs, seconds = {}, {}
    for mode in ("fixed", "adaptive", "matched"):
        name = f"{mode}-{noise_sd}-{seed}"
        if mode == "fixed":
            rules = dict.fromkeys(sim.TASK_FILES, fixed_rule)
        elif mode == "adaptive":
            rules = {
                task: {"ratings_per_pair": MINIMUM, "ratings_max": MAXIMUM, "adaptive_half_width": 1.0,
                       "adaptive_budget": round(BUDGET * len(latents[task][0]))}
                for task in sim.TASK_FILES
            }  # fmt: skip
        else:
            rules = {
                task: {"ratings_per_pair": MINIMUM, "ratings_max": MAXIMUM,
                       "adaptive_half_width": matched_half_width(f"fixed-{noise_sd}-{seed}", task)}
                for task in sim.TASK_FILES
            }  # fmt: skip
        truth = queue_copy(name, latents, rules)
        seconds[mode] = simulate(name, users, raters, truth, mode != "fixed", seed)["seconds"]
        runs[mode] = scores_of(name, truth)
    return {task: seed_figures(runs, task) for task in sim.TASK_FILES}, seconds


def seed_figures(runs: dict, task: str) -> dict:
    f, a, m = runs["fixed"][task], runs["adaptive"][task], runs["matched"][task]
    return {
        "pairs": int(f["truth"].size),
        "fixed5_ratings": f["ratings"],
        "adaptive_ratings": a["ratings"],
        "matched_ratings": m["ratings"],
        "saved": 1 - a["ratings"] / f["ratings"],
        "saved_vs_model": 1 - m["ratings"] / f["ratings"],
        "rmse_fixed5_mean": sim.rmse(f["mean"], f["truth"]),
        "rmse_fixed5_model": sim.rmse(f["model"], f["truth"]),
        "rmse_adaptive": sim.rmse(a["model"], a["truth"]),
        "rmse_adaptive_mean": sim.rmse(a["mean"], a["truth"]),
        "rmse_matched": sim.rmse(m["model"], m["truth"]),
        "spearman_fixed5_mean": sim.spearman(f["mean"], f["truth"]),
        "spearman_adaptive": sim.spearman(a["model"], a["truth"]),
        "half_width": a["half_width"],
        "matched_half_width": m["half_width"],
    }


# Figures given with a 95% interval over the seeds, and those given as means only.
WITH_INTERVAL = ("saved", "saved_vs_model", "rmse_fixed5_mean", "rmse_fixed5_model", "rmse_adaptive",
                 "rmse_adaptive_mean", "rmse_matched")  # fmt: skip
MEANS = ("fixed5_ratings", "adaptive_ratings", "matched_ratings", "spearman_fixed5_mean", "spearman_adaptive",
         "half_width", "matched_half_width")  # fmt: skip


def grid_point(noise_sd: float, task: str, per_seed: list[dict]) -> dict:
    """One task at one noise sd over the seeds: means, and 95% intervals where named."""
    point = {"noise_sd": noise_sd, "task": task, "pairs": per_seed[0]["pairs"], "seeds": len(per_seed)}
    for key in MEANS:
        point[key] = round(float(np.mean([figures[key] for figures in per_seed])), 4)
    for key in WITH_INTERVAL:
        mean, low, high = sim.mean_interval([figures[key] for figures in per_seed])
        point[key] = round(mean, 4)
        point[f"{key}_ci"] = [round(low, 4), round(high, 4)]
    point["rmse_adaptive_hi"] = point["rmse_adaptive_ci"][1]
    point["meets_bar"] = bool(point["saved"] >= BAR_SAVED and point["rmse_adaptive_hi"] <= point["rmse_fixed5_mean"])
    return point


def main() -> int:
    folder, why = shared_files("cxc", sim.TASK_FILES.values())
    if why:
        print_figures({"skipped": why})
        return 0
    scale = child_fit()
    log(f"fit at CxC scale: {scale}")
    setup_django(fresh_database(DATABASE))
    seeds = [SEED + number for number in range(SEEDS)]
    points, timings = [], {"fit_s": scale["fit_s"], "fit_peak_rss_mib": scale["fit_peak_rss_mib"], "copies_s": {}}
    try:
        users = make_raters()
        for noise_sd in grid():
            per_task: dict[str, list[dict]] = {task: [] for task in sim.TASK_FILES}
            for seed in seeds:
                figures, seconds = one_seed(noise_sd, seed, users, folder)
                timings["copies_s"][f"{noise_sd}-{seed}"] = seconds
                for task, values in figures.items():
                    per_task[task].append(values)
            points += [grid_point(noise_sd, task, per_task[task]) for task in sim.TASK_FILES]
            log(json.dumps(points[-3:]))
    finally:
        close_django_connections()
        drop_database(DATABASE)
    settings = {
        "pairs_per_task": PAIRS_PER_TASK,
        "raters": RATERS,
        "minimum": MINIMUM,
        "maximum": MAXIMUM,
        "budget_per_pair": BUDGET,
        "refit_every": REFIT_EVERY,
        "seeds": seeds,
        "bar_saved": BAR_SAVED,
    }
    figures = {"fit_ratings": scale["fit_ratings"], "fit_iterations": scale["fit_iterations"]}
    print_figures({**figures, "settings": settings, "grid": points, "timings": timings})
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--fit-at-cxc-scale"]:
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
        print(json.dumps(fit_at_cxc_scale()))
        sys.exit(0)
    sys.exit(main())
