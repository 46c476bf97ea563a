"""What a crowd participant may read: their study's progress and ratings, never another
dataset's, never the lab's dataset list; and the quiz's errors name no database id."""

import pytest

from tests.support.policy_actions import claim, join, submit, two_kind_dataset

pytestmark = pytest.mark.django_db


def test_a_participant_reads_their_study_only():
    own, other = two_kind_dataset(), two_kind_dataset()
    browser, _ = join(own, kinds=["SIS"], quota=3)
    held = claim(browser, own, "SIS").json()
    assert submit(browser, own, held["slot_id"], "first").status_code == 201
    assert browser.get(f"/api/rate/{own.name}/progress/").status_code == 200
    assert browser.get(f"/api/rate/{own.name}/ratings/").status_code == 200
    for path in (f"/api/rate/{other.name}/progress/", f"/api/rate/{other.name}/ratings/", "/api/datasets/"):
        answer = browser.get(path)
        assert answer.status_code == 403, (path, answer.content)
        assert other.name not in answer.content.decode()


def test_raters_still_list_the_datasets(admin_api):
    from tests.support.queue_support import client_for, rater

    dataset = two_kind_dataset()
    listed = client_for(rater()).get("/api/datasets/")
    assert listed.status_code == 200 and dataset.name in {row["name"] for row in listed.json()}
    assert admin_api.get("/api/datasets/").status_code == 200
