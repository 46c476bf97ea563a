"""Crowd links, the details `make mutation` found untested: one participant's end page
ends only their own run, the platform URLs, and the link's numbers count its own
participants (annotation.crowd)."""

import pytest

from annotation.crowd import campaign_link_create, completion_url, link_stats, study_url
from annotation.models import Participant
from tests.annotation.crowd_support import ParticipantClient, crowd_dataset
from tests.annotation.queue_support import claim, rater, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path, gold_one_in=0)


def make_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS"], "quota": 2, "completion_code": "FULL-1", "partial_code": "PART-1"}
    return campaign_link_create(dataset=dataset, **{**values, **extra})


def rate_quota(browser, quota=2):
    for _ in range(quota):
        assert browser.submit(browser.claim("SIS")).status_code == 201


def joined(link, external_id):
    browser = ParticipantClient(link, external_id)
    assert browser.join().status_code == 302
    return browser


def test_one_participants_end_page_ends_only_their_run(dataset):
    link = make_link(dataset)
    done, busy = joined(link, "done-1"), joined(link, "busy-1")
    rate_quota(done)
    assert "FULL-1" in done.done_page().content.decode()
    assert Participant.objects.get(external_id="busy-1").finished_at is None
    assert busy.claim("SIS") is not None, "the other participant still rates"
    first_end = Participant.objects.get(external_id="done-1").finished_at
    done.done_page()
    assert Participant.objects.get(external_id="done-1").finished_at == first_end, "ended once"


def test_the_platform_urls(dataset):
    prolific = make_link(dataset)
    assert study_url(prolific, "https://rate.example.org/") == (
        f"https://rate.example.org/join/{prolific.token}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert completion_url(prolific) == "https://app.prolific.com/submissions/complete?cc=FULL-1"
    assert completion_url(prolific, "partial") == "https://app.prolific.com/submissions/complete?cc=PART-1"


def test_the_links_numbers_count_its_own_participants(dataset):
    link = make_link(dataset)
    participant = joined(link, "p-1")
    rate_quota(participant)
    outsider = rater(["SIS"])
    submit(outsider, dataset, claim(outsider, dataset).slot_id, "outsider")
    stats = link_stats(link)
    assert (stats.started, stats.ratings) == (1, 2)
