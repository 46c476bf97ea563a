"""Sampling batches end to end on the database: create, run, pairs and slots, bad input."""

from collections import Counter

import numpy as np
import pytest

from annotation.core.errors import NotFound
from annotation.models import Pair, RatingSlot, SlotState
from annotation.runs.lifecycle import SAMPLING_BATCH_LOCKS, run_fail
from sampling.errors import BatchConflict, SamplingInputError
from sampling.models import SamplingBatch
from sampling.runs.batch import sampling_batch_run, sampling_batches_fail_orphaned
from sampling.runs.chord import BATCH_RUNS
from sampling.selectors import split_summary
from sampling.services import sampling_batch_create, sampling_batch_create_from_upload, sampling_batch_start
from tests.sampling.conftest import pair_keys, random_unit
from tests.support.rating_support import rate_pair
from tests.support.runner_support import poll, runner_lock_held_elsewhere

pytestmark = pytest.mark.django_db

# Four images with two captions each; caption rows 2i and 2i+1 belong to image i.
# In the caption space the images' mean captions sit at 5, 25, 175 and 195 degrees, so
# images 0-1 and 2-3 are neighbours; the image space instead puts 0 next to 3 and 1 next to 2.


def create(built, **kwargs):
    kwargs.setdefault("k", 1)
    return sampling_batch_create(dataset_name=built.dataset.name, split_name=built.split.name, **kwargs)


def run(batch):
    return sampling_batch_run(batch_id=batch.pk)


def test_a_batch_queues_exactly_the_expected_pairs_with_their_slots(small):
    batch = create(
        small,
        methods={"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": None, "c2i_original": None},
        ratings_per_pair=3,
        priority=7,
    )
    assert batch.spaces == ["txt", "img"]
    batch = run(batch)
    assert batch.status == "succeeded", batch.error
    assert batch.pairs_per_method == {"i2i_csim": 2, "c2c_isim": 2, "c2c_cocaption": 4, "c2i_original": 8}
    keys = pair_keys(batch)
    img, cap = small.image_key, small.caption_key
    assert {k[2:] for k in keys if k[1] == "i2i_csim"} == {(img(0), img(1)), (img(2), img(3))}
    assert all(k[0] == "SIS" for k in keys if k[1] == "i2i_csim")
    # c2c_isim: one caption of each image of the image-space neighbours (0, 3) and (1, 2).
    image_of = {cap(row): row // 2 for row in range(8)}
    isim = [k for k in keys if k[1] == "c2c_isim"]
    assert {tuple(sorted((image_of[k[2]], image_of[k[3]]))) for k in isim} == {(0, 3), (1, 2)}
    assert all(k[0] == "STS" for k in isim)
    assert {k[2:] for k in keys if k[1] == "c2c_cocaption"} == {(cap(2 * i), cap(2 * i + 1)) for i in range(4)}
    assert {k[2:] for k in keys if k[1] == "c2i_original"} == {(cap(row), img(row // 2)) for row in range(8)}
    assert all(k[0] == "SITS" for k in keys if k[1] == "c2i_original")

    pairs = Pair.objects.filter(batch=batch)
    assert {p.ratings_required for p in pairs} == {3}
    assert {p.priority for p in pairs} == {7}
    assert RatingSlot.objects.filter(pair__batch=batch, state=SlotState.OPEN).count() == 16 * 3
    slots = RatingSlot.objects.filter(pair__batch=batch).select_related("pair")
    # The claim index reads these copies instead of the pair, so each must match it.
    assert all(
        (slot.dataset_id, slot.kind, slot.priority, slot.pair_done, slot.pair_complete)
        == (slot.pair.dataset_id, slot.pair.kind, 7, 0, False)
        for slot in slots
    )
    assert {(pair.pk, index) for pair in pairs for index in range(3)} == {(s.pair_id, s.index) for s in slots}
    assert {slot.state for slot in slots} == {SlotState.OPEN}
    assert batch.progress_done == batch.progress_total > 0
    assert batch.progress_message == "done: 16 pairs"
    assert batch.stats["index"] == {"img": "exact", "txt": "exact"}
    assert batch.stats["search_s"] >= 0
    assert batch.runner


def twin_datasets(make_split, seed, copies=2):
    rng = np.random.default_rng(seed)
    images, captions = random_unit(rng, 30, 8), random_unit(rng, 90, 8)
    return [
        make_split(n_images=30, captions_per_image=3, image_spaces={"img": images}, caption_spaces={"txt": captions})
        for _ in range(copies)
    ]


def test_the_same_seed_gives_the_same_pairs_and_another_seed_others(make_split):
    first, second, third = twin_datasets(make_split, seed=5, copies=3)
    methods = {"i2i_csim": None, "c2c_isim": 25, "c2c_cocaption": 30, "c2i_original": 40}
    one = run(create(first, methods=methods, k=3, seed=42))
    two = run(create(second, methods=methods, k=3, seed=42))
    assert one.status == two.status == "succeeded"
    assert pair_keys(one) == pair_keys(two)
    assert one.pairs_per_method == {
        "i2i_csim": one.pairs_per_method["i2i_csim"],
        **{m: methods[m] for m in methods if methods[m]},
    }
    other = run(create(third, methods=methods, k=3, seed=43))
    assert other.status == "succeeded", other.error
    assert {k for k in pair_keys(other) if k[1] == "i2i_csim"} == {k for k in pair_keys(one) if k[1] == "i2i_csim"}
    assert {k for k in pair_keys(other) if k[1] == "c2c_isim"} != {k for k in pair_keys(one) if k[1] == "c2c_isim"}


def test_a_later_batch_never_queues_a_pair_again(small):
    first = run(create(small, methods={"c2c_cocaption": 3, "i2i_csim": None}))
    second = run(create(small, methods={"c2c_cocaption": None, "i2i_csim": None}))
    assert second.status == "succeeded", second.error
    assert second.pairs_per_method == {"i2i_csim": 0, "c2c_cocaption": 1}
    assert not pair_keys(first) & pair_keys(second)
    assert Pair.objects.filter(sampling_method="c2c_cocaption").count() == 4


def test_a_budget_the_search_cannot_fill_fails_the_batch_with_nothing_written(small):
    # k=1 over 4 images bounds i2i_csim by 4 pairs, but the neighbours are mutual: 2 pairs.
    batch = run(create(small, methods={"c2c_cocaption": None, "i2i_csim": 3}))
    assert batch.status == "failed"
    assert "i2i_csim: budget 3 is more than the 2 fresh image pairs" in batch.error
    assert Pair.objects.count() == 0
    assert RatingSlot.objects.count() == 0


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"kind": "ivfpq", "ivfpq_m": 5}, "space txt: index setting ivfpq_m=5 must divide the dimension 2"),
        ({"kind": "ivfpq"}, "space txt: an IVF-PQ codebook trains on at least 256 rows; this space's 4 rows give 4"),
    ],
)
def test_an_ivfpq_setting_the_space_cannot_take_fails_the_batch_naming_it(small, settings, index, message):
    settings.SAMPLING_INDEX = index
    batch = run(create(small, methods={"i2i_csim": 1}))
    assert batch.status == "failed"
    assert message in batch.error
    assert Pair.objects.count() == 0


@pytest.mark.postgres  # a dead runner is told by its advisory lock; SQLite knows only local pids
def test_a_batch_whose_runner_died_is_failed_and_restarts_to_the_same_result(make_split):
    first, second = twin_datasets(make_split, seed=9)
    methods = {"i2i_csim": None, "c2c_isim": 20, "c2c_cocaption": 20}
    reference = run(create(first, methods=methods, k=3, seed=1))
    batch = create(second, methods=methods, k=3, seed=1)
    # What a worker leaves behind when it is killed after claiming the batch: the row says
    # running, the transaction holding its pairs is gone, and so is its runner lock.
    SamplingBatch.objects.filter(pk=batch.pk).update(status="running", runner="worker-host:4242")
    assert sampling_batches_fail_orphaned() == [batch.pk]
    batch.refresh_from_db()
    assert batch.status == "failed"
    assert "(worker-host:4242) stopped before it finished; no pairs were written" in batch.error
    assert Pair.objects.filter(batch=batch).count() == 0
    sampling_batch_start(batch=batch, enqueue=False)
    batch = run(batch)
    assert batch.status == "succeeded", batch.error
    assert pair_keys(batch) == pair_keys(reference)
    with pytest.raises(BatchConflict, match="already succeeded with"):
        sampling_batch_start(batch=batch)


@pytest.mark.postgres
def test_a_batch_whose_runner_holds_its_lock_is_left_running(small):
    batch = create(small, methods={"c2c_cocaption": None})
    SamplingBatch.objects.filter(pk=batch.pk).update(status="running", runner="worker-host:4242")
    with runner_lock_held_elsewhere(SAMPLING_BATCH_LOCKS, batch.pk):
        assert sampling_batches_fail_orphaned() == []
        with pytest.raises(BatchConflict, match="is running \\(worker-host:4242\\)"):
            sampling_batch_start(batch=batch)
        assert run(batch).status == "running"
    assert poll(sampling_batches_fail_orphaned) == [batch.pk]


def test_a_succeeded_batch_is_never_marked_failed_afterwards(small):
    # E.g. writing its timings after the commit fails: its pairs are queued all the same.
    batch = run(create(small, methods={"c2c_cocaption": None}))
    run_fail(BATCH_RUNS, batch.pk, "unexpected error: connection lost")
    batch.refresh_from_db()
    assert (batch.status, batch.error) == ("succeeded", "")


def test_running_a_batch_twice_does_nothing_the_second_time(small):
    batch = run(create(small, methods={"c2c_cocaption": None}))
    again = run(batch)
    assert again.status == "succeeded"
    assert Pair.objects.count() == 4


def test_c2i_intrasim_uses_only_fully_rated_pivots_by_decreasing_score(small):
    phase1 = run(create(small, methods={"i2i_csim": None, "c2c_cocaption": None}, ratings_per_pair=3))
    img, cap = small.image_key, small.caption_key
    by_items = {k[2:]: k for k in pair_keys(phase1)}
    assert (img(0), img(1)) in by_items
    sis = {
        (p.image_a.key, p.image_b.key): p for p in Pair.objects.filter(kind="SIS").select_related("image_a", "image_b")
    }
    sts = {
        (p.caption_a.key, p.caption_b.key): p
        for p in Pair.objects.filter(kind="STS").select_related("caption_a", "caption_b")
    }
    rate_pair(sis[(img(2), img(3))], [1.0, 1.5, 0.5])
    rate_pair(sis[(img(0), img(1))], [4.0, 5.0, 4.5])
    rate_pair(sts[(cap(0), cap(1))], [4.0, 4.0, 4.0])  # co-captions: gives only original pairs
    rate_pair(sts[(cap(2), cap(3))], [3.0])  # not fully rated: not a pivot
    summary = split_summary(split=small.split)
    assert summary.ready_pivots == 3
    assert summary.pivots["STS"].ready == 1 and summary.pivots["STS"].total == 4

    batch = run(create(small, methods={"c2i_intrasim": 2}))
    assert batch.status == "succeeded", batch.error
    # The co-caption pivot gives only an original pair, so both come from the SIS half, best
    # first: pivot (image 0, image 1) 4.5 gives a caption of image 1 with image 0, pivot
    # (image 2, image 3) 1.0 a caption of image 3 with image 2.
    taken = sorted(k[2:] for k in pair_keys(batch))
    assert [image for _, image in taken] == [img(0), img(2)]
    assert taken[0][0] in (cap(2), cap(3)) and taken[1][0] in (cap(6), cap(7))
    report = batch.stats["c2i_intrasim"]
    assert report["rule"] == "one_per_pivot"
    assert (report["sts"]["pivots"], report["sts"]["skipped_original"], report["sts"]["taken"]) == (1, 1, 0)
    assert (report["sis"]["pivots"], report["sis"]["taken"], report["sis"]["lowest_score_taken"]) == (2, 2, 1.0)

    exhausted = run(create(small, methods={"c2i_intrasim": 1}))
    assert exhausted.status == "failed"
    assert "budget 1 is more than the 0 fresh caption-image pairs derived from 3 pivots" in exhausted.error


def test_c2i_intrasim_reads_each_pivot_in_the_order_its_list_gave(small, tmp_path):
    img, cap = small.image_key, small.caption_key
    listed = tmp_path / "sis.csv"
    listed.write_text(f"image1,image2,sampling_method\n{img(3)},{img(0)},i2i_csim\n")
    batch = sampling_batch_run(
        batch_id=sampling_batch_create_from_upload(
            dataset_name=small.dataset.name, split_name=small.split.name, path=listed, ratings_per_pair=1
        ).pk
    )
    pivot = Pair.objects.get(batch=batch)
    assert pivot.swapped  # stored (image 0, image 3), given as (image 3, image 0)
    rate_pair(pivot, [4.0])
    phase2 = run(create(small, methods={"c2i_intrasim": None}))
    ((caption, image),) = [k[2:] for k in pair_keys(phase2)]
    # (a caption of the second image, the first image), as listed: image 0's caption with image 3.
    assert image == img(3) and caption in (cap(0), cap(1))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"methods": {"i2i_csim": None}, "k": 0}, "k must be a whole number of neighbours, at least 1"),
        ({"methods": {"i2i_csim": None}, "k": -2}, "k must be a whole number of neighbours, at least 1"),
        ({"methods": {"i2i_csim": None}, "k": 4}, "k=4 but split .* has only 4 images, so at most 3 neighbours"),
        ({"methods": {"c2c_cocaption": 5}}, "c2c_cocaption: budget 5 is more than the 4 fresh pairs"),
        ({"methods": {"c2i_original": 9}}, "c2i_original: budget 9 is more than the 8 fresh pairs"),
        ({"methods": {"i2i_csim": 5}}, "i2i_csim: budget 5 is more than the at most 4 pairs that k=1 neighbours"),
        ({"methods": {"i2i_csim": 0}}, "i2i_csim: budget must be a whole number of pairs, at least 1"),
        ({"methods": {}}, "choose at least one sampling method"),
        ({"methods": {"x2y": None}}, "unknown sampling method.*'x2y'"),
        ({"methods": {"i2i_csim": None}, "spaces": ["img"]}, "space 'img' holds image embeddings, which none"),
        ({"methods": {"c2c_isim": None}, "spaces": ["txt"]}, "space 'txt' holds caption embeddings, which none"),
        ({"methods": {"i2i_csim": None}, "spaces": ["nope"]}, "has no embedding space 'nope'"),
        ({"methods": {"c2i_intrasim": None}}, "c2i_intrasim derives pairs from rated SIS and STS pivots"),
        ({"methods": {"c2c_cocaption": None}, "seed": -1}, "seed must be a whole number, 0 or more"),
        ({"methods": {"c2c_cocaption": None}, "ratings_per_pair": 0}, "ratings per pair must be between 1 and 100"),
    ],
)
def test_bad_configurations_are_refused_and_nothing_is_created(small, kwargs, message):
    with pytest.raises(SamplingInputError, match=message):
        create(small, **kwargs)
    assert SamplingBatch.objects.count() == 0


def test_a_split_without_embeddings_is_refused(make_split):
    bare = make_split(n_images=4, captions_per_image=2)
    with pytest.raises(SamplingInputError, match="i2i_csim searches caption embeddings, but there is no caption"):
        create(bare, methods={"i2i_csim": None})
    with pytest.raises(SamplingInputError, match="c2c_isim searches image embeddings, but there is no image"):
        create(bare, methods={"c2c_cocaption": None, "c2c_isim": None})
    assert SamplingBatch.objects.count() == 0


def test_a_space_that_does_not_cover_the_split_is_refused(small, make_split):
    other = make_split(n_images=4, captions_per_image=2, dataset=small.dataset, split_name="test", first_id=100)
    with pytest.raises(SamplingInputError, match="space 'txt' has no vector for 8 of the 8 captions of the split"):
        create(other, methods={"i2i_csim": None})
    assert SamplingBatch.objects.count() == 0


def test_an_unknown_dataset_or_split_is_named(small):
    with pytest.raises(NotFound, match="no dataset named 'nope'"):
        sampling_batch_create(dataset_name="nope", split_name="val", methods={"c2c_cocaption": None})
    with pytest.raises(NotFound, match="has no split 'train'; it has: val"):
        sampling_batch_create(dataset_name=small.dataset.name, split_name="train", methods={"c2c_cocaption": None})


def test_cocaption_pairs_cycle_by_default_and_all_on_request(make_split):
    built = make_split(n_images=4, captions_per_image=5)
    cycle = run(create(built, methods={"c2c_cocaption": None}, seed=2))
    assert cycle.cocaption_pairs == "cycle"
    assert cycle.pairs_per_method == {"c2c_cocaption": 4 * 5}
    captions = Pair.objects.filter(batch=cycle).values_list("caption_a_id", "caption_b_id")
    appearances = Counter(caption for pair in captions for caption in pair)
    assert set(appearances.values()) == {2} and len(appearances) == 20
    rest = run(create(built, methods={"c2c_cocaption": None}, cocaption="all"))
    assert rest.pairs_per_method == {"c2c_cocaption": 4 * 10 - 4 * 5}  # the rest of every group
    with pytest.raises(SamplingInputError, match="c2c_cocaption pairs are cycle or all; got 'some'"):
        create(built, methods={"c2c_cocaption": None}, cocaption="some")
