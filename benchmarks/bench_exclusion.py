"""Exclusion benchmark: exclude a rater with 10,000 ratings on a CxC-scale dataset
(87,000 SIS pairs of 5 slots, PostgreSQL, own database cxc_bench_exclusion) while 16
raters claim and submit through the queue services in a process of their own.

The raters run BENCH_BEFORE_SECONDS (default 8) before the exclusion, go on during it,
and stop when it has been applied. Claim latency is each claim's own time. The excluded
rater's 10,000 pairs are complete (4 other raters each), so the exclusion reopens 10,000
complete pairs: one top-up slot each, counters and slot copies updated.

Last line: ``{"exclude_s", "claim_p95_ms_during", "claim_p95_ms_before", ...}`` (a p95 of
fewer than two claims is null).

Environment (the smoke size under BENCH_SMOKE=1 in brackets): BENCH_PAIRS 87,000 [500],
BENCH_VICTIM_RATINGS 10,000 [100], BENCH_RATERS 16 [4], BENCH_BEFORE_SECONDS 8 [3],
BENCH_DATABASE cxc_bench_exclusion.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import threading
import time

from _common import env_database, fresh_database, print_figures, setup_django, sized
from _queue_data import fill

DATABASE = env_database("cxc_bench_exclusion")
PAIRS = sized("BENCH_PAIRS", 87_000, 500)
VICTIM_RATINGS = sized("BENCH_VICTIM_RATINGS", 10_000, 100)
LOAD_RATERS = sized("BENCH_RATERS", 16, 4)
BEFORE_SECONDS = sized("BENCH_BEFORE_SECONDS", 8.0, 3.0, minimum=0)
# rater1-5 rated the victim's pairs, rater11 on are the load, the last (rater40) excludes.
ALL_RATERS = max(40, 11 + LOAD_RATERS)


def give_victim_ratings(database_url: str) -> None:
    """rater1 rates slot 0 of the first VICTIM_RATINGS pairs, raters 2-5 their other
    slots, an hour ago: those pairs are complete."""
    import psycopg2

    conn = psycopg2.connect(database_url)
    with conn, conn.cursor() as cur:
        cur.execute(
            "SELECT id FROM auth_user WHERE username IN ('rater1','rater2','rater3','rater4','rater5') "
            "ORDER BY substr(username, 6)::int"
        )
        raters = [row[0] for row in cur.fetchall()]
        cur.execute(
            """
            CREATE TEMP TABLE victim_pairs AS
            SELECT id FROM annotation_pair ORDER BY id LIMIT %(n)s;
            UPDATE annotation_ratingslot s SET state = 'done', rater_id = (%(raters)s::bigint[])[s.index + 1],
                   pair_done = 5, pair_complete = true
            WHERE s.pair_id IN (SELECT id FROM victim_pairs);
            INSERT INTO annotation_rating (pair_id, slot_id, rater_id, score, time_on_item_ms, time_to_first_move_ms,
                                           adjustments, idempotency_key, created_at, below_speed_floor, status)
            SELECT s.pair_id, s.id, s.rater_id, 2.5, 9000, 800, 2, 'bench-' || s.id, now() - interval '1 hour',
                   false, 'valid'
            FROM annotation_ratingslot s WHERE s.pair_id IN (SELECT id FROM victim_pairs);
            UPDATE annotation_pair SET ratings_done = 5 WHERE id IN (SELECT id FROM victim_pairs);
            UPDATE annotation_queuecounter SET pairs_open = pairs_open - %(n)s;
            """,
            {"n": VICTIM_RATINGS, "raters": raters},
        )
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    conn.close()


def _rate(database_url: str, stop, samples) -> None:
    """Child process: LOAD_RATERS threads claim and submit until ``stop``; puts
    (start time, claim ms) samples on ``samples``."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["RUN_MODE"] = "services"
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.serving import rating_submit, slot_claim

    users = list(get_user_model().objects.filter(username__startswith="rater").order_by("id")[10 : 10 + LOAD_RATERS])
    collected: list[tuple[float, float]] = []
    lock = threading.Lock()

    def work(user, number: int) -> None:
        done = 0
        try:
            while not stop.is_set():
                started = time.time()
                assignment = slot_claim(rater=user, dataset="bench")
                claim_ms = (time.time() - started) * 1000
                with lock:
                    collected.append((started, claim_ms))
                if assignment is None:
                    return
                rating_submit(
                    rater=user,
                    dataset="bench",
                    slot_id=assignment.slot_id,
                    score=3.0,
                    time_on_item_ms=5000,
                    time_to_first_move_ms=500,
                    adjustments=1,
                    idempotency_key=f"load-{number}-{done}",
                )
                done += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(user, n)) for n, user in enumerate(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    samples.put(collected)


def p95(values: list[float]) -> float | None:
    """The 95th percentile; None (JSON null, not NaN) for fewer than two values."""
    return round(statistics.quantiles(values, n=100)[94], 2) if len(values) >= 2 else None


def main() -> None:
    if VICTIM_RATINGS > PAIRS:
        raise SystemExit(f"BENCH_VICTIM_RATINGS ({VICTIM_RATINGS}) must not exceed BENCH_PAIRS ({PAIRS})")
    database_url = fresh_database(DATABASE)
    setup_django(database_url)
    started = time.monotonic()
    fill(DATABASE, PAIRS * 5, ALL_RATERS)
    give_victim_ratings(database_url)
    print(f"loaded {PAIRS} pairs, {VICTIM_RATINGS * 5} ratings in {time.monotonic() - started:.1f} s", flush=True)

    from django.contrib.auth import get_user_model

    from annotation.models import Dataset, ExclusionState
    from annotation.quality.exclusion.services import rating_exclusion_create, rating_exclusion_run

    context = multiprocessing.get_context("spawn")
    stop, samples = context.Event(), context.Queue()
    raters = context.Process(target=_rate, args=(database_url, stop, samples))
    raters.start()
    time.sleep(BEFORE_SECONDS)
    users = get_user_model().objects
    exclude_started = time.time()
    exclusion = rating_exclusion_create(
        dataset=Dataset.objects.get(name="bench"),
        rater=users.get(username="rater1"),
        reason="benchmark",
        created_by=users.get(username=f"rater{ALL_RATERS}"),
    )
    exclusion = rating_exclusion_run(exclusion_id=exclusion.id)
    exclude_ended = time.time()
    stop.set()
    collected = samples.get(timeout=120)
    raters.join()
    if exclusion.state != ExclusionState.APPLIED or exclusion.ratings_excluded != VICTIM_RATINGS:
        raise SystemExit(f"exclusion ended {exclusion.state} with {exclusion.ratings_excluded} ratings excluded")
    first = min(start for start, _ in collected)
    before = [ms for start, ms in collected if first + 1.0 <= start < exclude_started]  # 1 s warm-up
    during = [ms for start, ms in collected if exclude_started <= start < exclude_ended]
    result = {
        "exclude_s": round(exclude_ended - exclude_started, 3),
        "claim_p95_ms_during": p95(during),
        "claim_p95_ms_before": p95(before),
        "claims_during": len(during),
        "claims_before": len(before),
        "ratings_excluded": exclusion.ratings_excluded,
        "slots_reopened": exclusion.slots_reopened,
    }
    print_figures(result)


if __name__ == "__main__":
    main()
