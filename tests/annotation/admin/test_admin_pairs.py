"""Admin pages of derived data: pairs, slots and ratings are read only; a pair shows its
items; ratings are listed rounded with filters; flagged pairs can be retired."""

import json

import pytest

from annotation.export import dataset_export
from annotation.models import Flag, FlagReason, Pair, QueueCounter, Rating, RatingSlot, SlotState, TaskKind
from annotation.rating.progress import rater_progress
from annotation.serving import queue_counters_rebuild, rating_submit, slot_claim, slot_flag
from annotation.serving.pairs import pairs_retire
from sampling.selectors import pivots, split_items
from tests.factories import UserFactory
from tests.support.queue_support import queue_pairs, submit_kwargs
from tests.support.rating_support import rate_pair

pytestmark = pytest.mark.django_db


def rate(pair_kind: str, score: float):
    """One pair of the kind, rated once through the rating service. Returns (pair, rater)."""
    batch, [pair] = queue_pairs(kind=pair_kind, n_pairs=1, ratings_per_pair=3)
    rater = UserFactory(roles=["rater"], qualified_for=[pair_kind])
    assignment = slot_claim(rater=rater, dataset=batch.dataset.name)
    rating_submit(
        rater=rater, dataset=batch.dataset.name, slot_id=assignment.slot_id, **submit_kwargs("k1", score=score)
    )
    return pair, rater


@pytest.mark.parametrize("model", ["pair", "ratingslot", "rating"])
def test_derived_data_cannot_be_added_edited_or_deleted(admin_client, model):
    pair, _ = rate(TaskKind.STS, 3.0)
    obj = {"pair": pair, "ratingslot": pair.slots.first(), "rating": pair.ratings.first()}[model]
    assert admin_client.get(f"/admin/annotation/{model}/add/").status_code == 403
    change = admin_client.get(f"/admin/annotation/{model}/{obj.pk}/change/")
    assert change.status_code == 200
    assert 'name="_save"' not in change.content.decode()  # a view page, no form to save
    assert admin_client.post(f"/admin/annotation/{model}/{obj.pk}/change/", {}).status_code == 403
    assert admin_client.post(f"/admin/annotation/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Pair.objects.filter(pk=pair.pk, ratings_done=1).exists()


def test_a_pair_page_shows_its_captions_text_and_its_pictures(admin_client):
    sts, _ = rate(TaskKind.STS, 4.0)
    page = admin_client.get(f"/admin/annotation/pair/{sts.pk}/change/").content.decode()
    assert sts.caption_a.text in page and sts.caption_b.text in page
    assert "4.00" in page  # its ratings
    sis, _ = rate(TaskKind.SIS, 2.0)
    page = admin_client.get(f"/admin/annotation/pair/{sis.pk}/change/").content.decode()
    for image in (sis.image_a, sis.image_b):
        assert f'alt="{image.key}"' in page and image.file_path in page


def test_ratings_are_listed_rounded_and_filter_by_kind_rater_and_batch(admin_client):
    sts, sts_rater = rate(TaskKind.STS, 3.14159)
    sis, _ = rate(TaskKind.SIS, 1.0)
    page = admin_client.get("/admin/annotation/rating/").content.decode()
    assert "3.14" in page and "3.14159" not in page
    by_kind = admin_client.get("/admin/annotation/rating/", {"pair__kind": "STS"}).context["cl"].result_list
    assert [r.pair_id for r in by_kind] == [sts.pk]
    by_rater = admin_client.get("/admin/annotation/rating/", {"rater__id__exact": sts_rater.pk}).context["cl"]
    assert [r.pair_id for r in by_rater.result_list] == [sts.pk]
    by_batch = admin_client.get("/admin/annotation/rating/", {"pair__batch__id__exact": sis.batch_id}).context["cl"]
    assert [r.pair_id for r in by_batch.result_list] == [sis.pk]


def test_a_flagged_pair_is_previewed_and_retired_from_the_queue(admin_client):
    batch, [pair] = queue_pairs(kind=TaskKind.STS, n_pairs=1, ratings_per_pair=3)
    flagger = UserFactory(roles=["rater"], qualified_for=["STS"])
    Flag.objects.create(pair=pair, rater=flagger, reason=FlagReason.UNREADABLE_CAPTION, note="garbled")
    holder = UserFactory(roles=["rater"], qualified_for=["STS"])
    assert slot_claim(rater=holder, dataset=batch.dataset.name) is not None
    listing = admin_client.get("/admin/annotation/flag/").content.decode()
    assert pair.caption_a.text in listing and "garbled" in listing
    assert QueueCounter.objects.get(kind="STS").pairs_open == 1

    flag = Flag.objects.get()
    response = admin_client.post(
        "/admin/annotation/flag/", {"action": "retire_pairs", "_selected_action": [flag.pk]}, follow=True
    )
    assert "Retired 1 pair(s)" in response.content.decode()
    pair.refresh_from_db()
    assert pair.retired_at is not None
    assert not RatingSlot.objects.filter(pair=pair).exclude(state=SlotState.DONE).exists()
    assert QueueCounter.objects.get(kind="STS").pairs_open == 0
    assert Flag.objects.get().resolved
    assert slot_claim(rater=UserFactory(roles=["rater"], qualified_for=["STS"]), dataset=batch.dataset.name) is None
    assert Rating.objects.count() == 0


def test_the_jobs_list_shows_dataset_and_target(admin_client):
    from annotation.models import Job

    Job.objects.create(kind=Job.Kind.EXPORT_DATASET, params={"dataset": "coco", "out": "/exports/coco-1"})
    Job.objects.create(
        kind=Job.Kind.IMPORT_EMBEDDINGS, params={"dataset": "coco", "space": "clip", "modality": "image"}
    )
    page = admin_client.get("/admin/annotation/job/").content.decode()
    assert "/exports/coco-1" in page and "space clip (image)" in page
    assert page.count(">coco<") == 2


def test_the_batch_list_shows_how_much_is_rated(admin_client):
    rate(TaskKind.STS, 3.0)
    page = admin_client.get("/admin/sampling/samplingbatch/").content.decode()
    assert "0 of 1 pairs" in page and "1 of 3 ratings" in page


def test_a_retired_pair_stays_out_of_counters_progress_exports_and_pivots(tmp_path):
    batch, pairs = queue_pairs(kind=TaskKind.SIS, n_pairs=3, ratings_per_pair=2)
    name = batch.dataset.name
    complete, flagged, _open = pairs
    rate_pair(complete, [4.0, 4.5])
    rater_of_flagged = UserFactory(roles=["rater"], qualified_for=["SIS"])
    rate_pair(flagged, [1.0], raters=[rater_of_flagged])
    flagger = UserFactory(roles=["rater"], qualified_for=["SIS"])
    held = slot_claim(rater=flagger, dataset=name)
    assert held.pair_id == flagged.pk  # closest to completion
    slot_flag(rater=flagger, dataset=name, slot_id=held.slot_id, reason="broken_image")
    assert pairs_retire(pair_ids=[complete.pk, flagged.pk]) == 2
    assert pairs_retire(pair_ids=[complete.pk]) == 0  # already retired

    queue_counters_rebuild()  # the beat's recount agrees with the retire
    assert QueueCounter.objects.get(kind="SIS").pairs_open == 1
    # Whoever rated or flagged the retired pair still has the open one left.
    for user in (flagger, rater_of_flagged, UserFactory(roles=["rater"], qualified_for=["SIS"])):
        assert rater_progress(rater=user, dataset=name).pairs_left_by_kind == {"SIS": 1}

    dataset_export(dataset_name=name, out_dir=tmp_path / "e", formats="cxc")
    manifest = json.loads((tmp_path / "e" / "manifest.json").read_text())
    assert manifest["totals"]["pairs"] == 0  # the complete pair was retired
    assert manifest["retired"] == {batch.split.name: {"SIS": 2}}
    assert sum(e["pairs"] for e in manifest["left_out"][batch.split.name]["SIS"].values()) == 1
    items = split_items(split=batch.split)
    assert len(pivots(split=batch.split, items=items).sis) == 0
