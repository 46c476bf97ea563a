"""bench-queue's data: a phase's queue topped up between rounds holds its open slots
again, with pairs no rater has seen and the open-pairs counter in step
(benchmarks/_queue_data.py ``top_up``): a fast machine rated the 10k queues empty
within a round and measured claims that found nothing."""

import sys

import pytest
from django.db import connection

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
import _queue_data

pytestmark = pytest.mark.django_db


def _open_slots(cur, dataset: int) -> int:
    cur.execute("SELECT count(*) FROM annotation_ratingslot WHERE dataset_id = %s AND state = 'open'", [dataset])
    return cur.fetchone()[0]


def _counter(cur, dataset: int) -> int:
    cur.execute("SELECT pairs_open FROM annotation_queuecounter WHERE dataset_id = %s AND kind = 'SIS'", [dataset])
    return cur.fetchone()[0]


@pytest.fixture
def bench_queue():
    if connection.vendor != "postgresql":
        pytest.skip("the bench's data is written in PostgreSQL's SQL; bench-queue runs on PostgreSQL only")
    with connection.cursor() as cur:
        dataset, split, batch = _queue_data.bench_dataset(cur)
        _queue_data.queue_pairs(cur, dataset=dataset, split=split, batch=batch, n_pairs=20)
        yield cur, dataset


def _complete_pairs(cur, dataset: int, n_pairs: int) -> None:
    """Take the first n_pairs pairs out of the queue as if rated to completion."""
    cur.execute("SELECT id FROM annotation_pair WHERE dataset_id = %s ORDER BY id LIMIT %s", [dataset, n_pairs])
    done = [row[0] for row in cur.fetchall()]
    cur.execute("DELETE FROM annotation_ratingslot WHERE pair_id = ANY(%s)", [done])
    cur.execute("UPDATE annotation_pair SET ratings_done = ratings_required WHERE id = ANY(%s)", [done])
    cur.execute(
        "UPDATE annotation_queuecounter SET pairs_open = pairs_open - %s WHERE dataset_id = %s", [n_pairs, dataset]
    )


def test_a_fill_queues_five_open_slots_per_pair_and_counts_them(bench_queue):
    cur, dataset = bench_queue
    assert _open_slots(cur, dataset) == 100
    assert _counter(cur, dataset) == 20


def test_a_queue_rated_down_is_topped_up_to_its_open_slots_with_new_pairs(bench_queue):
    cur, dataset = bench_queue
    _complete_pairs(cur, dataset, 7)
    cur.execute("SELECT max(id) FROM annotation_pair WHERE dataset_id = %s", [dataset])
    (last_pair,) = cur.fetchone()

    assert _queue_data.add_open_slots(cur, 100) == 35

    assert _open_slots(cur, dataset) == 100
    assert _counter(cur, dataset) == 20
    cur.execute(
        "SELECT count(*), count(DISTINCT (image_a_id, image_b_id)) FROM annotation_pair WHERE dataset_id = %s",
        [dataset],
    )
    assert cur.fetchone() == (27, 27)
    cur.execute("SELECT count(*) FROM annotation_pair WHERE dataset_id = %s AND id > %s", [dataset, last_pair])
    assert cur.fetchone()[0] == 7


def test_a_shortfall_short_of_a_pair_is_rounded_up_to_a_whole_pair(bench_queue):
    cur, dataset = bench_queue
    _complete_pairs(cur, dataset, 1)
    assert _queue_data.add_open_slots(cur, 97) == 5  # 95 open: 2 missing, one pair of 5
    assert _open_slots(cur, dataset) == 100
    assert _queue_data.add_open_slots(cur, 100) == 0


def test_a_full_queue_gets_nothing(bench_queue):
    cur, dataset = bench_queue
    assert _queue_data.add_open_slots(cur, 100) == 0
    assert _open_slots(cur, dataset) == 100


def test_the_top_up_pairs_new_images_only_never_gold_ones(bench_queue):
    """add_gold's images have no cocoid and keys of their own; new pairs are made over
    images the top-up adds, never over those (nor over the queue's older images)."""
    cur, dataset = bench_queue
    cur.execute("SELECT split_id FROM annotation_image WHERE dataset_id = %s LIMIT 1", [dataset])
    (split,) = cur.fetchone()
    cur.execute(
        "INSERT INTO annotation_image (dataset_id, split_id, key, file_path, cocoid, width, height) "
        "SELECT %s, %s, 'gold_' || g || '.jpg', 'gold/' || g || '.jpg', NULL, 640, 480 FROM generate_series(1, 8) g",
        [dataset, split],
    )
    cur.execute("SELECT max(id) FROM annotation_image WHERE dataset_id = %s", [dataset])
    (last_image,) = cur.fetchone()
    cur.execute("SELECT max(id) FROM annotation_pair WHERE dataset_id = %s", [dataset])
    (last_pair,) = cur.fetchone()
    _complete_pairs(cur, dataset, 4)

    assert _queue_data.add_open_slots(cur, 100) == 20

    cur.execute(
        "SELECT count(*), count(*) FILTER (WHERE p.image_a_id > %s AND p.image_b_id > %s"
        "  AND a.cocoid IS NOT NULL AND b.cocoid IS NOT NULL) "
        "FROM annotation_pair p JOIN annotation_image a ON a.id = p.image_a_id "
        "JOIN annotation_image b ON b.id = p.image_b_id WHERE p.dataset_id = %s AND p.id > %s",
        [last_image, last_image, dataset, last_pair],
    )
    assert cur.fetchone() == (4, 4)
