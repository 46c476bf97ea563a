"""How a participant's run ends, with gold on and links of two kinds: the completion code
only once the quota's items (ratings and gold ratings) are in; a run whose pairs ran out
first sees what it rated of the quota and the link's partial code, earned only with at
least one rating and no more skips than ratings; else a request to return the study.
The outcome is recorded once, for the admin's participant list. A link with a
quiz-gated kind sends the participant through the quiz before its other kinds."""

import re

import pytest
from rest_framework.test import APIClient

from annotation.models import CampaignLink, Participant, ParticipantOutcome
from annotation.people.crowd.completion import completion_url
from annotation.people.crowd.links import CampaignLinkError, campaign_link_create, link_stats, study_url
from tests.factories import UserFactory
from tests.support.crowd_support import SIS_PAIRS, ParticipantClient, crowd_dataset, items_rated, sts_quiz
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db

FULL, PART = "FULL-CODE-1", "PART-CODE-1"


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path, gold_one_in=2)


def make_link(dataset, **extra) -> CampaignLink:
    values = {"name": "wave", "kinds": ["SIS"], "quota": 5, "completion_code": FULL, "partial_code": PART, **extra}
    return campaign_link_create(dataset=dataset, **values)


def joined(link, external_id: str = "p1") -> ParticipantClient:
    browser = ParticipantClient(link, external_id)
    assert browser.join().status_code == 302
    return browser


def end_state(page: str) -> str:
    return re.search(r'data-testid="crowd-([a-z_]+)"', page).group(1)


def test_a_participant_who_skips_until_the_queue_is_empty_gets_no_code(dataset):
    browser = joined(make_link(dataset))
    skipped = browser.skip_all("SIS")
    assert skipped >= SIS_PAIRS  # every ordinary pair, and the gold ones served between them
    response = browser.done_page()
    page = response.content.decode()
    assert response.status_code == 200 and end_state(page) == "returned"
    assert FULL not in page and PART not in page
    assert "you rated 0 of 5 items" in page and "return the study" in page
    participant = Participant.objects.get()
    assert (participant.outcome, participant.items_done, participant.skips_done) == ("returned", 0, skipped)
    # The run is over: nothing more is served, and the page stays the same.
    assert browser._post("claim/", {"kind": "SIS"}).status_code == 403
    assert end_state(browser.done_page().content.decode()) == "returned"


def test_a_participant_who_finds_no_work_at_all_gets_no_partial_code(dataset):
    # No SITS pairs are queued: the queue is dry from the start, no skip, no rating.
    link = make_link(dataset, kinds=["SITS"])
    browser = ParticipantClient(link, "idle-1")
    assert browser.join()["Location"] == f"/join/{link.token}/done/"
    page = browser.done_page().content.decode()
    assert end_state(page) == "returned" and PART not in page and FULL not in page
    assert "you rated 0 of 5 items" in page
    assert Participant.objects.get().outcome == ParticipantOutcome.RETURNED


def test_more_skips_than_ratings_earn_no_partial_code(dataset):
    browser = joined(make_link(dataset, quota=50))
    for _ in range(2):
        assert browser.submit(browser.claim("SIS")).status_code == 201
    skipped = browser.skip_all("SIS")
    assert skipped > 2
    page = browser.done_page().content.decode()
    assert end_state(page) == "returned" and PART not in page and FULL not in page
    assert f"You skipped {skipped} and rated 2" in page
    assert Participant.objects.get().outcome == ParticipantOutcome.RETURNED


def test_a_participant_whose_pairs_run_out_sees_what_they_rated_and_the_partial_code(dataset):
    link = make_link(dataset, quota=50)
    browser = joined(link)
    rated = browser.rate_all("SIS")
    assert rated == items_rated(browser_user(browser), dataset) and SIS_PAIRS <= rated < 50
    # The rating page of a participant with nothing left sends them to the end page.
    assert browser.http.get(f"/rate/{dataset.name}/sis/")["Location"] == f"/join/{link.token}/done/"
    page = browser.done_page().content.decode()
    assert end_state(page) == "partial" and PART in page and FULL not in page
    assert f"you rated {rated} of 50 items" in page
    assert f'data-reload-url="https://app.prolific.com/submissions/complete?cc={PART}"' in page
    participant = Participant.objects.get()
    assert (participant.outcome, participant.items_done, participant.skips_done) == ("partial", rated, 0)
    # New pairs later do not reopen a finished run, nor turn its code into the full one.
    queue_pairs(split=dataset.splits.first(), n_pairs=3, ratings_per_pair=3)
    again = browser.done_page().content.decode()
    assert end_state(again) == "partial" and FULL not in again
    assert browser._post("claim/", {"kind": "SIS"}).status_code == 403


def test_a_link_without_a_partial_code_asks_a_participant_whose_pairs_ran_out_to_return_it(dataset):
    browser = joined(make_link(dataset, quota=50, partial_code=""))
    rated = browser.rate_all("SIS")
    page = browser.done_page().content.decode()
    assert end_state(page) == "returned" and FULL not in page
    assert f"you rated {rated} of 50 items" in page and "no completion code for unfinished work" in page
    assert "data-reload-url" not in page  # nowhere to be sent: they return the study on the platform
    assert Participant.objects.get().outcome == ParticipantOutcome.RETURNED


def test_a_partial_code_is_never_sent_to_a_links_own_return_url(dataset):
    browser = joined(make_link(dataset, quota=50, return_url="https://example.org/back?cc=FULL-CODE-1"))
    browser.rate_all("SIS")
    page = browser.done_page().content.decode()
    assert end_state(page) == "partial" and PART in page
    assert "example.org" not in page and "data-reload-url" not in page


def test_the_completion_code_comes_once_the_quotas_items_are_in_over_both_kinds(dataset):
    link = make_link(dataset, kinds=["SIS", "STS"], quota=5)
    browser = joined(link)
    for _ in range(3):
        assert browser.submit(browser.claim("SIS")).status_code == 201
    # Four items short: no code yet, the end page sends them back to work.
    assert browser.done_page()["Location"] == f"/join/{link.token}/next/"
    assert browser.submit(browser.claim("STS")).status_code == 201
    assert browser.done_page().status_code == 302
    assert browser.submit(browser.claim("STS")).status_code == 201
    page = browser.done_page().content.decode()
    assert end_state(page) == "done" and FULL in page and PART not in page
    participant = Participant.objects.get()
    assert (participant.outcome, participant.items_done) == ("completed", 5)
    assert items_rated(participant.user, dataset) == 5


def test_a_link_with_a_quiz_gated_kind_sends_the_participant_through_the_quiz_first(dataset):
    sts_quiz(dataset)
    link = make_link(dataset, kinds=["SIS", "STS"])
    browser = ParticipantClient(link, "q1")
    response = browser.join()
    assert response.status_code == 302 and response["Location"] == f"/rate/{dataset.name}/sts/"
    # The quiz-free kind's page leads back to the quiz until it is taken.
    assert browser.http.get(f"/rate/{dataset.name}/sis/")["Location"] == f"/rate/{dataset.name}/sts/"
    quiz_page = browser.http.get(f"/rate/{dataset.name}/sts/")
    assert quiz_page.status_code == 200 and "quiz-intro" in quiz_page.content.decode()


def test_the_admin_lists_participants_with_their_external_ids_and_outcomes(dataset, admin_client):
    link = make_link(dataset, quota=50)
    worker, skipper = joined(link, "worker-1"), joined(link, "skipper-1")
    worker.rate_all("SIS")
    skipper.skip_all("SIS")
    worker.done_page(), skipper.done_page()
    listing = admin_client.get("/admin/annotation/participant/").content.decode()
    assert worker.external_id in listing and skipper.external_id in listing
    assert "partial (pairs ran out" in listing and "returned (no code" in listing
    filtered = admin_client.get("/admin/annotation/participant/?outcome=returned").content.decode()
    assert skipper.external_id in filtered and worker.external_id not in filtered
    detail = admin_client.get(f"/admin/annotation/campaignlink/{link.pk}/change/").content.decode()
    assert worker.external_id in detail and "partial (pairs ran out" in detail


def test_the_admin_form_takes_a_partial_code_and_refuses_a_bad_one(dataset, admin_client):
    form = {
        "name": "wave 2",
        "dataset": dataset.pk,
        "kinds": ["SIS", "STS"],
        "quota": 20,
        "completion_code": "CODE7",
        "return_url": "",
        "id_param": "PROLIFIC_PID",
        "active": "on",
        "questions-TOTAL_FORMS": 0,
        "questions-INITIAL_FORMS": 0,
        "participants-TOTAL_FORMS": 0,
        "participants-INITIAL_FORMS": 0,
    }
    for partial, message in (("has space", "partial code must be"), ("CODE7", "partial code must differ")):
        refused = admin_client.post("/admin/annotation/campaignlink/add/", {**form, "partial_code": partial})
        assert refused.status_code == 200 and message in refused.content.decode()
    assert not CampaignLink.objects.exists()
    made = admin_client.post("/admin/annotation/campaignlink/add/", {**form, "partial_code": "PART7"})
    assert made.status_code == 302
    assert CampaignLink.objects.get().partial_code == "PART7"


def test_the_campaign_link_api_takes_a_partial_code_and_only_from_admins(dataset):
    client = APIClient()
    client.force_authenticate(UserFactory(is_staff=True))
    url = f"/api/datasets/{dataset.name}/campaign-links/"
    body = {"name": "api wave", "kinds": ["SIS", "STS"], "quota": 10, "completion_code": "FULL9"}
    made = client.post(url, {**body, "partial_code": "PART9"}, format="json")
    assert made.status_code == 201, made.json()
    assert made.json()["partial_code"] == "PART9" and made.json()["kinds"] == ["SIS", "STS"]
    assert f"/join/{CampaignLink.objects.get().token}/?PROLIFIC_PID=" in made.json()["study_url"]
    for partial, message in (("no spaces!", "partial code must be"), ("FULL9", "partial code must differ")):
        refused = client.post(url, {**body, "partial_code": partial}, format="json")
        assert refused.status_code == 400 and message in refused.json()["detail"]
    assert client.get(url).json()[0]["partial_code"] == "PART9"
    participant = joined(CampaignLink.objects.get(), "p9")
    assert participant.http.post(url, body, content_type="application/json").status_code == 403
    assert CampaignLink.objects.count() == 1


def test_a_bad_partial_code_is_refused_by_the_service(dataset):
    with pytest.raises(CampaignLinkError, match="partial code must differ"):
        make_link(dataset, partial_code=FULL)
    assert not CampaignLink.objects.exists()


def browser_user(browser: ParticipantClient):
    return Participant.objects.get(link=browser.link, external_id=browser.external_id).user


# What `make mutation` found untested: one end page ends one run, the platform URLs, a
# link's numbers.


def rate_quota(browser, quota=2):
    for _ in range(quota):
        assert browser.submit(browser.claim("SIS")).status_code == 201


def test_one_participants_end_page_ends_only_their_run(dataset):
    link = make_link(dataset, quota=2)
    done, busy = joined(link, "done-1"), joined(link, "busy-1")
    rate_quota(done)
    assert FULL in done.done_page().content.decode()
    assert browser_user(busy).participations.get().finished_at is None
    assert busy.claim("SIS") is not None, "the other participant still rates"
    first_end = browser_user(done).participations.get().finished_at
    done.done_page()
    assert browser_user(done).participations.get().finished_at == first_end, "ended once"


def test_the_platform_urls(dataset):
    prolific = make_link(dataset, quota=2)
    assert study_url(prolific, "https://rate.example.org/") == (
        f"https://rate.example.org/join/{prolific.token}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert completion_url(prolific) == f"https://app.prolific.com/submissions/complete?cc={FULL}"
    assert completion_url(prolific, "partial") == f"https://app.prolific.com/submissions/complete?cc={PART}"


def test_the_links_numbers_count_its_own_participants(dataset):
    link = make_link(dataset, quota=2)
    participant = joined(link, "p-1")
    rate_quota(participant)
    outsider = rater(["SIS"])
    submit(outsider, dataset, claim(outsider, dataset).slot_id, "outsider")
    stats = link_stats(link)
    assert (stats.started, stats.ratings) == (1, 2)
