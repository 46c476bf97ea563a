"""The data of the queue benchmark: a fresh database per phase, copied from one migrated
template database (``migrated_template``; a migration takes seconds, a copy a tenth of
one) and filled server-side (SIS pairs with 5 open slots each, raters with knox tokens, gold pairs), and
the check of what the run stored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import psycopg2
from _common import fresh_database

REPO = Path(__file__).resolve().parent.parent
RATINGS_PER_PAIR = 5
# With gold on: one in GOLD_ONE_IN items a gold pair (never one twice to a rater).
GOLD_ONE_IN = 20


def server_dsn(database: str) -> str:
    url = urlparse(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres")
    return url._replace(path="/" + database).geturl()


def django_env(database: str) -> dict:
    return os.environ | {
        "DATABASE_URL": server_dsn(database),
        "RUN_MODE": "services",
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-only-secret-key",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


def migrate(database: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=REPO,
        env=django_env(database),
        check=True,
    )


def migrated_template(name: str) -> None:
    """Database ``name``, dropped first if it exists, with every migration applied: the
    template each phase's database is copied from (``fresh_database(..., template=)``)."""
    fresh_database(name)
    migrate(name)


def images_for_pairs(n_pairs: int) -> int:
    n = 2
    while n * (n - 1) // 2 < n_pairs:
        n += 1
    return n


def fill(database: str, open_slots: int, n_raters: int) -> tuple[int, list[str]]:
    """Queue open_slots / 5 SIS pairs and create the raters. Returns (pairs, tokens)."""
    n_pairs = open_slots // RATINGS_PER_PAIR
    conn = psycopg2.connect(server_dsn(database))
    with conn, conn.cursor() as cur:
        dataset, split, batch = bench_dataset(cur)
        queue_pairs(cur, dataset=dataset, split=split, batch=batch, n_pairs=n_pairs)
        cur.execute(
            """
            INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,
                                   is_active, date_joined)
            SELECT '!', false, 'rater' || g, '', '', '', false, true, now() FROM generate_series(1, %s) g
            """,
            [n_raters],
        )
        cur.execute(
            """
            INSERT INTO auth_user_groups (user_id, group_id)
            SELECT u.id, g.id FROM auth_user u, auth_group g WHERE g.name = 'rater' AND u.username LIKE 'rater%%'
            """
        )
        cur.execute(
            "INSERT INTO annotation_qualification (rater_id, kind, granted_at) "
            "SELECT id, 'SIS', now() FROM auth_user WHERE username LIKE 'rater%%'"
        )
        # django-rest-knox tokens, made server-side as knox makes them: 64 hex characters,
        # the first 15 kept as the lookup key, the SHA-512 of the whole as the digest.
        cur.execute(
            "CREATE TEMP TABLE bench_token AS SELECT id AS user_id, "
            "md5(random()::text || id) || md5(id::text || random()::text) AS token "
            "FROM auth_user WHERE username LIKE 'rater%%'"
        )
        cur.execute(
            "INSERT INTO knox_authtoken (digest, token_key, user_id, created, expiry) "
            "SELECT encode(sha512(convert_to(token, 'UTF8')), 'hex'), substr(token, 1, 15), user_id, now(), "
            "now() + interval '1 day' FROM bench_token"
        )
        cur.execute("SELECT token FROM bench_token ORDER BY user_id")
        tokens = [row[0] for row in cur.fetchall()]
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    conn.close()
    return n_pairs, tokens


def bench_dataset(cur) -> tuple[int, int, int]:
    """The dataset 'bench' with its split, its sampling batch and an empty open-pairs
    counter of SIS pairs. Returns (dataset, split, batch) ids."""
    cur.execute(
        "INSERT INTO annotation_dataset (name, description, images_root, image_url_prefix, created_at) "
        "VALUES ('bench', '', '', 'https://images.example.org/', now()) RETURNING id"
    )
    (dataset,) = cur.fetchone()
    cur.execute("INSERT INTO annotation_split (dataset_id, name) VALUES (%s, 'val') RETURNING id", [dataset])
    (split,) = cur.fetchone()
    cur.execute(
        """
        INSERT INTO sampling_samplingbatch (dataset_id, split_id, source, methods, k, spaces, ratings_per_pair,
            seed, priority, status, progress_done, progress_total, progress_message, pairs_per_method, error,
            upload_path, runner, stats, audit, created_at)
        VALUES (%s, %s, 'sampled', '{"i2i_csim": null}', 5, '[]', %s, 0, 0, 'succeeded', 0, 0, '', '{}', '', '',
                '', '{}', '{}', now())
        RETURNING id
        """,
        [dataset, split, RATINGS_PER_PAIR],
    )
    (batch,) = cur.fetchone()
    cur.execute("INSERT INTO annotation_queuecounter (dataset_id, kind, pairs_open) VALUES (%s, 'SIS', 0)", [dataset])
    return dataset, split, batch


def queue_pairs(cur, *, dataset: int, split: int, batch: int, n_pairs: int) -> None:
    """Queue ``n_pairs`` new SIS pairs with 5 open slots each, over images of their own
    (numbered on from the dataset's last), and count them in the open-pairs counter."""
    cur.execute("SELECT coalesce(max(cocoid), 0) FROM annotation_image WHERE dataset_id = %s", [dataset])
    (last,) = cur.fetchone()
    cur.execute(
        """
        INSERT INTO annotation_image (dataset_id, split_id, key, file_path, cocoid, width, height)
        SELECT %(d)s, %(s)s, 'COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg',
               'val2014/COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg', g, 640, 480
        FROM generate_series(%(last)s + 1, %(last)s + %(n)s) g
        """,
        {"d": dataset, "s": split, "last": last, "n": images_for_pairs(n_pairs)},
    )
    cur.execute(
        """
        WITH new AS (
            INSERT INTO annotation_pair (dataset_id, split_id, batch_id, kind, sampling_method, image_a_id, image_b_id,
                                         ratings_required, priority, ratings_done, created_at)
            SELECT %(d)s, %(s)s, %(b)s, 'SIS', 'i2i_csim', a, b, %(r)s, 0, 0, now()
            FROM (
                SELECT a.id AS a, b.id AS b FROM annotation_image a JOIN annotation_image b ON a.id < b.id
                WHERE a.dataset_id = %(d)s AND b.dataset_id = %(d)s AND a.cocoid > %(last)s AND b.cocoid > %(last)s
                ORDER BY a.id, b.id LIMIT %(n)s
            ) combos
            RETURNING id
        )
        INSERT INTO annotation_ratingslot (pair_id, dataset_id, index, state, kind, priority, pair_done,
                                           pair_complete)
        SELECT new.id, %(d)s, g, 'open', 'SIS', 0, 0, false
        FROM new CROSS JOIN generate_series(0, %(r)s - 1) g
        ORDER BY new.id, g
        """,
        {"d": dataset, "s": split, "b": batch, "r": RATINGS_PER_PAIR, "n": n_pairs, "last": last},
    )
    cur.execute(
        "UPDATE annotation_queuecounter SET pairs_open = pairs_open + %s WHERE dataset_id = %s AND kind = 'SIS'",
        [n_pairs, dataset],
    )


def top_up(database: str, open_slots: int) -> int:
    """Queue new pairs until the bench dataset holds ``open_slots`` open slots again (a
    phase that rated its queue empty would measure claims that find nothing). Returns the
    slots added (a whole number of pairs: up to 4 more than asked; 0 when none are missing).
    Leased slots are not counted open: the raters' leases left over from the phase before
    put the queue that many over its size until they expire or are rated."""
    conn = psycopg2.connect(server_dsn(database))
    try:
        with conn, conn.cursor() as cur:
            added = add_open_slots(cur, open_slots)
        with conn.cursor() as cur:
            # Its counts in the statistics before this returns (a backend flushes them at
            # most once a second, else when it ends, after close() has returned), where the
            # next step (_autovacuum.catch_up) reads them.
            cur.execute("SELECT pg_stat_force_next_flush()")
        conn.commit()
    finally:
        conn.close()
    return added


def add_open_slots(cur, open_slots: int) -> int:
    """``top_up`` on an open cursor of the phase's database."""
    cur.execute(
        "SELECT d.id, s.id, b.id FROM annotation_dataset d JOIN annotation_split s ON s.dataset_id = d.id "
        "JOIN sampling_samplingbatch b ON b.dataset_id = d.id WHERE d.name = 'bench' ORDER BY b.id LIMIT 1"
    )
    dataset, split, batch = cur.fetchone()
    cur.execute("SELECT count(*) FROM annotation_ratingslot WHERE dataset_id = %s AND state = 'open'", [dataset])
    (open_now,) = cur.fetchone()
    missing_pairs = (open_slots - open_now + RATINGS_PER_PAIR - 1) // RATINGS_PER_PAIR
    if missing_pairs <= 0:
        return 0
    queue_pairs(cur, dataset=dataset, split=split, batch=batch, n_pairs=missing_pairs)
    return missing_pairs * RATINGS_PER_PAIR


def analyze(database: str) -> None:
    """Statistics of the database as it is in use. Analyzed when filled, every slot was
    open and had no rater, so the planner took the raters' partial indexes for empty and
    read a rater's slots through whichever came first: every slot they rated, checked one
    by one, in the progress's reads (0.4-0.6 ms of PostgreSQL per item in the page's
    flow). Autovacuum analyzes a table again within a minute of that much change, so a
    campaign past its first minute plans with these."""
    conn = psycopg2.connect(server_dsn(database))
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("ANALYZE")
    conn.close()


def add_gold(database: str, gold_pairs: int) -> None:
    """``gold_pairs`` gold SIS pairs over images of their own (ids from the pairs' sequence,
    as the upload takes them) and the dataset's gold rate set to 1 in GOLD_ONE_IN."""
    conn = psycopg2.connect(server_dsn(database))
    with conn, conn.cursor() as cur:
        cur.execute("SELECT id FROM annotation_dataset WHERE name = 'bench'")
        (dataset,) = cur.fetchone()
        cur.execute("SELECT id FROM annotation_split WHERE dataset_id = %s", [dataset])
        (split,) = cur.fetchone()
        cur.execute(
            """
            INSERT INTO annotation_image (dataset_id, split_id, key, file_path, cocoid, width, height)
            SELECT %(d)s, %(s)s, 'gold_' || g || '.jpg', 'gold/' || g || '.jpg', NULL, 640, 480
            FROM generate_series(1, %(n)s) g
            """,
            {"d": dataset, "s": split, "n": images_for_pairs(gold_pairs)},
        )
        cur.execute(
            r"""
            INSERT INTO annotation_goldpair (id, dataset_id, split_id, kind, image_a_id, image_b_id, swapped,
                                             gold_score, explanation, source, active, in_quiz, created_at)
            SELECT nextval(pg_get_serial_sequence('annotation_pair', 'id')), %(d)s, %(s)s, 'SIS', a.id, b.id, false,
                   2.5, '', 'upload', true, false, now()
            FROM annotation_image a JOIN annotation_image b ON a.id < b.id
            WHERE a.key LIKE 'gold\_%%' AND b.key LIKE 'gold\_%%'
            ORDER BY a.id, b.id LIMIT %(n)s
            """,
            {"d": dataset, "s": split, "n": gold_pairs},
        )
        cur.execute(
            "INSERT INTO annotation_qualitysettings (dataset_id, gold_one_in, auto_pause, pause_window, "
            "pause_max_error, quiz_max_error, quiz_length) VALUES (%s, %s, false, 5, 1.0, 0.75, 5)",
            [dataset, GOLD_ONE_IN],
        )
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    conn.close()


def stored_check(database: str) -> dict:
    """What the run stored, checked against the rule of the queue: ``over_assigned``
    pairs hold more ratings than they need or one rater twice; ``counter_off``: pairs
    whose ratings_done differs from their ratings; ``ratings``, ``gold_ratings``."""
    conn = psycopg2.connect(server_dsn(database))
    with conn, conn.cursor() as cur:
        cur.execute(
            """
            SELECT count(*) FILTER (WHERE n > p.ratings_required OR n > raters),
                   count(*) FILTER (WHERE n <> p.ratings_done), coalesce(sum(n), 0)
            FROM annotation_pair p
            JOIN (SELECT pair_id, count(*) AS n, count(DISTINCT rater_id) AS raters
                  FROM annotation_rating GROUP BY pair_id) r ON r.pair_id = p.id
            """
        )
        over_assigned, counter_off, ratings = cur.fetchone()
        cur.execute("SELECT count(*) FROM annotation_goldrating")
        (gold_ratings,) = cur.fetchone()
    conn.close()
    return {
        "over_assigned": over_assigned,
        "counter_off": counter_off,
        "ratings": int(ratings),
        "gold_ratings": gold_ratings,
    }
