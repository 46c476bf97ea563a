"""Gold pairs, quality settings and pauses in the admin."""

import pytest

from annotation.models import GoldLease, GoldPair, RaterPause
from annotation.quality.gold.upload import gold_pairs_upload
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support.queue_support import rater

pytestmark = pytest.mark.django_db


def test_gold_pairs_are_retired_and_served_again(admin_client, tmp_path):
    split = SplitFactory()
    a, b = ImageFactory(split=split, dataset=split.dataset), ImageFactory(split=split, dataset=split.dataset)
    (tmp_path / "g.csv").write_text(f"image1,image2,gold_score\n{a.key},{b.key},3\n")
    gold_pairs_upload(dataset=split.dataset, path=tmp_path / "g.csv")
    gold = GoldPair.objects.get()
    lease = GoldLease.objects.create(
        id=9_000_001, gold_pair=gold, rater=rater(), dataset=split.dataset, kind="SIS", state="skipped",
        leased_at=gold.created_at, flag_reason="broken_image",
    )  # fmt: skip
    listing = admin_client.get("/admin/annotation/goldpair/")
    assert listing.status_code == 200 and "Add gold pair" not in listing.content.decode()
    assert '<td class="field-flags">1</td>' in listing.content.decode(), lease
    admin_client.post("/admin/annotation/goldpair/", {"action": "retire", "_selected_action": [gold.pk]})
    assert GoldPair.objects.get().active is False
    admin_client.post("/admin/annotation/goldpair/", {"action": "activate", "_selected_action": [gold.pk]})
    assert GoldPair.objects.get().active is True


def test_the_dataset_page_edits_quality_settings(admin_client):
    split = SplitFactory()
    page = admin_client.get(f"/admin/annotation/dataset/{split.dataset.pk}/change/").content.decode()
    assert "quality_settings-0-gold_one_in" in page


def test_a_pause_is_made_and_lifted_in_the_admin(admin_client):
    split = SplitFactory()
    user = rater()
    answer = admin_client.post(
        "/admin/annotation/raterpause/add/", {"rater": user.pk, "dataset": split.dataset.pk, "reason": "check"}
    )
    assert answer.status_code == 302
    pause = RaterPause.objects.get()
    assert pause.created_by is not None and pause.lifted_at is None
    again = admin_client.post(
        "/admin/annotation/raterpause/add/", {"rater": user.pk, "dataset": split.dataset.pk, "reason": "check"}
    )
    assert "is already paused in" in again.content.decode()
    admin_client.post("/admin/annotation/raterpause/", {"action": "lift_pauses", "_selected_action": [pause.pk]})
    pause.refresh_from_db()
    assert pause.lifted_at is not None and pause.lift_note == "lifted in the admin"


def test_an_admin_cannot_be_paused_in_the_admin(admin_client):
    split = SplitFactory()
    boss = UserFactory(is_staff=True)
    answer = admin_client.post(
        "/admin/annotation/raterpause/add/", {"rater": boss.pk, "dataset": split.dataset.pk, "reason": "check"}
    )
    assert answer.status_code == 200
    assert "is an admin (or staff or superuser) and cannot be paused" in answer.content.decode()
    assert not RaterPause.objects.exists()
