"""The end of a crowd run for a participant who failed the quiz, and the link settings
around the end: the link's screen-out code shows only after a quiz failed in every
attempt (never for work left undone, never the completion or partial code instead), the
admin and the participants CSV record the run as screened out, the code is checked like
the link's other codes, the end pages stay (no timed redirect) with a way back to the
platform, and the link form holds a quota against the pairs a participant could rate."""

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from annotation.models import CampaignLink, Participant, ParticipantOutcome, Qualification
from annotation.people.crowd.completion import PROLIFIC_COMPLETE, PROLIFIC_HOME, completion_url
from annotation.people.crowd.links import (
    CampaignLinkError,
    QuotaOverPairs,
    campaign_link_create,
    campaign_link_quota_check,
)
from annotation.quality.quiz import quiz_failed_kinds, quiz_state
from tests.factories import UserFactory
from tests.support.crowd_support import (
    GOLD_PER_KIND,
    SIS_PAIRS,
    STS_PAIRS,
    ParticipantClient,
    crowd_dataset,
    quiz_fail_every_attempt,
    sts_quiz,
)

pytestmark = pytest.mark.django_db

FULL, PART, SCREEN = "FULL-1", "PART-1", "SCREEN-1"


@pytest.fixture
def dataset(tmp_path):
    """SIS free of a quiz (the link grants it), STS behind a quiz of one question a go."""
    made = crowd_dataset(tmp_path, gold_one_in=2)
    sts_quiz(made)
    return made


def make_link(dataset, **extra) -> CampaignLink:
    values = {
        "name": "wave",
        "kinds": ["STS"],
        "quota": 3,
        "completion_code": FULL,
        "partial_code": PART,
        "screenout_code": SCREEN,
        **extra,
    }
    return campaign_link_create(dataset=dataset, **values)


def joined(link, name: str = "p1") -> ParticipantClient:
    browser = ParticipantClient(link, name)
    assert browser.join().status_code == 302
    return browser


def fail_the_quiz(browser: ParticipantClient, kind: str = "STS") -> Participant:
    participant = Participant.objects.get(link=browser.link, external_id=browser.external_id)
    quiz_fail_every_attempt(participant.user, browser.link.dataset, kind)
    return participant


def test_a_failed_quiz_ends_with_the_screen_out_code_and_the_way_back_to_prolific(dataset):
    browser = joined(make_link(dataset))
    participant = fail_the_quiz(browser)
    page = browser.done_page().content.decode()
    assert 'data-testid="crowd-screened_out"' in page and "You did not pass the qualification quiz" in page
    assert f'data-testid="completion-code">{SCREEN}<' in page and "Your screen-out code" in page
    assert FULL not in page and PART not in page, "failing earns neither code of the work"
    assert f'href="{PROLIFIC_COMPLETE}?cc={SCREEN}"' in page
    assert 'http-equiv="refresh"' not in page, "the page stays until the participant leaves it"
    participant.refresh_from_db()
    assert (participant.outcome, participant.items_done) == (ParticipantOutcome.SCREENED_OUT, 0)
    # The run is over: no pair is served, and the page says the same every time.
    assert browser._post("claim/", {"kind": "STS"}).status_code == 403
    assert f">{SCREEN}<" in browser.done_page().content.decode()


def test_a_link_without_a_screen_out_code_asks_a_failed_participant_to_return_the_study(dataset):
    browser = joined(make_link(dataset, screenout_code=""))
    participant = fail_the_quiz(browser)
    page = browser.done_page().content.decode()
    assert 'data-testid="crowd-screened_out"' in page and "Please return the study on the platform" in page
    assert "completion-code" not in page and FULL not in page
    assert f'href="{PROLIFIC_HOME}"' in page, "a way back to return the study"
    participant.refresh_from_db()
    assert participant.outcome == ParticipantOutcome.SCREENED_OUT, "told apart from pairs that ran out"


def test_a_participant_who_did_the_work_never_sees_the_screen_out_code(dataset):
    """Qualified for one kind of the link (SIS needs no quiz), a failed STS quiz screens
    nobody out: the quota rated earns the completion code."""
    browser = joined(make_link(dataset, kinds=["SIS", "STS"]))
    fail_the_quiz(browser)
    assert browser.rate_all("SIS", limit=3) == 3
    page = browser.done_page().content.decode()
    assert f'data-testid="completion-code">{FULL}<' in page
    assert SCREEN not in page
    assert Participant.objects.get().outcome == ParticipantOutcome.COMPLETED


def test_pairs_that_run_out_earn_the_partial_code_not_the_screen_out_code(dataset):
    browser = joined(make_link(dataset, kinds=["SIS"], quota=100))
    assert browser.rate_all("SIS") >= SIS_PAIRS
    page = browser.done_page().content.decode()
    assert f'data-testid="completion-code">{PART}<' in page and SCREEN not in page
    assert Participant.objects.get().outcome == ParticipantOutcome.PARTIAL


def test_qualified_for_nothing_without_a_failed_quiz_is_no_screen_out(dataset):
    """A kind closed for another reason (a grant withdrawn, a quiz pool shrunk) is no
    failure of the participant's: no screen-out code, and a request to return the study."""
    browser = joined(make_link(dataset, kinds=["SIS"]))
    Qualification.objects.filter(rater__participations__link=browser.link).delete()
    page = browser.done_page().content.decode()
    assert 'data-testid="crowd-returned"' in page and "This study has nothing for you to rate" in page
    assert SCREEN not in page and "completion-code" not in page
    assert Participant.objects.get().outcome == ParticipantOutcome.RETURNED


def test_one_failed_attempt_of_two_screens_nobody_out(dataset):
    browser = joined(make_link(dataset))
    participant = Participant.objects.get()
    quiz_fail_every_attempt(participant.user, dataset, "STS", attempts=1)
    response = browser.done_page()
    assert response.status_code == 302 and response.url.endswith("/next/"), "the quiz is still owed"
    participant.refresh_from_db()
    assert participant.finished_at is None


@pytest.mark.parametrize(
    ("screenout_code", "problem"),
    [
        ("no spaces!", "the screen-out code must be empty or 1-100 letters, digits, '-' or '_'"),
        ("x" * 101, "the screen-out code must be empty or 1-100 letters"),
        (FULL, "the screen-out code must differ from the completion code"),
        (PART, "the screen-out code must differ from the partial code"),
    ],
)
def test_the_screen_out_code_is_checked_like_the_links_other_codes(dataset, screenout_code, problem):
    with pytest.raises(CampaignLinkError, match=problem.replace("(", r"\(").replace(")", r"\)")) as raised:
        make_link(dataset, screenout_code=screenout_code)
    assert raised.value.field == "screenout_code"
    assert not CampaignLink.objects.exists()


def test_the_database_refuses_a_screen_out_code_equal_to_a_code_of_the_work(dataset):
    link = make_link(dataset)
    for code in (FULL, PART):
        with pytest.raises(IntegrityError), transaction.atomic():
            CampaignLink.objects.filter(pk=link.pk).update(screenout_code=code)
    # Without a partial code, an empty screen-out code is no copy of it.
    CampaignLink.objects.filter(pk=link.pk).update(partial_code="", screenout_code="")


def test_where_each_end_sends_the_participant(dataset):
    prolific = make_link(dataset)
    assert completion_url(prolific, ParticipantOutcome.SCREENED_OUT) == f"{PROLIFIC_COMPLETE}?cc={SCREEN}"
    assert completion_url(prolific, ParticipantOutcome.RETURNED) == PROLIFIC_HOME
    own_return = make_link(dataset, name="own", return_url="https://survey.example.org/done?code=FULL-1")
    assert completion_url(own_return, ParticipantOutcome.SCREENED_OUT) == PROLIFIC_HOME, "never the full code's URL"
    leave = "https://platform.example.org/return"
    mturk = make_link(dataset, name="mturk", id_param="workerId", leave_url=leave)
    assert completion_url(mturk, ParticipantOutcome.SCREENED_OUT) == leave
    assert completion_url(mturk, ParticipantOutcome.RETURNED) == leave
    bare = make_link(dataset, name="bare", id_param="workerId")
    assert completion_url(bare, ParticipantOutcome.SCREENED_OUT) == ""


def test_the_participants_csv_and_the_admin_say_screened_out(dataset, admin_client):
    browser = joined(make_link(dataset))
    fail_the_quiz(browser)
    browser.done_page()
    link = browser.link
    csv_text = admin_client.get(f"/api/datasets/{dataset.name}/campaign-links/{link.pk}/participants/").content
    row = csv_text.decode().splitlines()[1].split(",")
    assert row[:2] == [browser.external_id, "screened_out"]
    listing = admin_client.get("/admin/annotation/participant/?outcome=screened_out").content.decode()
    assert browser.external_id in listing and "screened out (failed the quiz" in listing


def test_only_the_raters_own_finished_failures_of_the_links_kinds_in_its_dataset_screen_out(dataset, tmp_path):
    """Another rater's failed quiz, a quiz failed in another dataset or of another kind,
    and an attempt not yet finished screen nobody out."""
    me, other = UserFactory(), UserFactory()
    quiz_fail_every_attempt(other, dataset, "STS")
    assert quiz_failed_kinds(rater=other, dataset_id=dataset.pk, kinds=["STS"]) == {"STS"}
    assert quiz_failed_kinds(rater=me, dataset_id=dataset.pk, kinds=["STS"]) == set()
    (tmp_path / "elsewhere").mkdir()
    elsewhere = crowd_dataset(tmp_path / "elsewhere")
    sts_quiz(elsewhere)
    quiz_fail_every_attempt(me, elsewhere, "STS")
    assert quiz_failed_kinds(rater=me, dataset_id=elsewhere.pk, kinds=["STS", "SIS"]) == {"STS"}
    assert quiz_failed_kinds(rater=me, dataset_id=elsewhere.pk, kinds=["SIS"]) == set()
    assert quiz_failed_kinds(rater=me, dataset_id=dataset.pk, kinds=["STS"]) == set()
    # One attempt failed, the second begun and not finished: not yet screened out.
    quiz_fail_every_attempt(me, dataset, "STS", attempts=1)
    assert quiz_state(rater=me, dataset=dataset.name, kind="STS", start=True).result is None
    assert quiz_failed_kinds(rater=me, dataset_id=dataset.pk, kinds=["STS"]) == set()
    # The second attempt passed: every attempt allowed is finished, but not every one failed.
    quiz_fail_every_attempt(me, dataset, "STS", near=True)
    assert quiz_failed_kinds(rater=me, dataset_id=dataset.pk, kinds=["STS"]) == set()


# --- the quota against the pairs a participant could rate ----------------------------------


def test_a_quota_over_the_pairs_left_is_refused_naming_the_numbers(dataset):
    # STS: its open pairs plus the gold the queue serves among them (the quiz's are not served).
    sts = STS_PAIRS + GOLD_PER_KIND - dataset.gold_pairs.filter(kind="STS", in_quiz=True).count()
    with pytest.raises(QuotaOverPairs) as raised:
        campaign_link_quota_check(dataset=dataset, kinds=["STS"], quota=80)
    text = str(raised.value)
    assert f"at most {sts} items" in text and f"(STS: {sts}, gold items included)" in text
    assert "fewer than the quota of 80" in text and raised.value.field == "quota"
    campaign_link_quota_check(dataset=dataset, kinds=["STS"], quota=sts)
    both = sts + SIS_PAIRS + GOLD_PER_KIND
    campaign_link_quota_check(dataset=dataset, kinds=["SIS", "STS"], quota=both)
    with pytest.raises(QuotaOverPairs, match=f"at most {both} items"):
        campaign_link_quota_check(dataset=dataset, kinds=["SIS", "STS"], quota=both + 1)


def _form(dataset, **extra) -> dict:
    return {
        "name": "wave",
        "dataset": dataset.pk,
        "kinds": ["SIS"],
        "quota": 80,
        "completion_code": FULL,
        "screenout_code": SCREEN,
        "id_param": "PROLIFIC_PID",
        "active": "on",
        "questions-TOTAL_FORMS": 0,
        "questions-INITIAL_FORMS": 0,
        "participants-TOTAL_FORMS": 0,
        "participants-INITIAL_FORMS": 0,
        **extra,
    }


def test_the_link_form_warns_of_a_quota_the_data_cannot_fill_and_keeps_it_when_confirmed(dataset, admin_client):
    refused = admin_client.post("/admin/annotation/campaignlink/add/", _form(dataset))
    page = refused.content.decode()
    assert refused.status_code == 200 and "fewer than the quota of 80" in page
    assert f"at most {SIS_PAIRS + GOLD_PER_KIND} items" in page
    assert not CampaignLink.objects.exists()
    kept = admin_client.post("/admin/annotation/campaignlink/add/", _form(dataset, keep_quota="on"))
    assert kept.status_code == 302, kept.content.decode()[:2000]
    link = CampaignLink.objects.get()
    assert (link.quota, link.screenout_code) == (80, SCREEN)
    # Saved again as it was, the link is not held to the pairs rated since.
    again = admin_client.post(f"/admin/annotation/campaignlink/{link.pk}/change/", _form(dataset, name="renamed"))
    assert again.status_code == 302, again.content.decode()[:2000]


def test_the_link_form_checks_the_screen_out_code_on_its_field(dataset, admin_client):
    page = admin_client.post(
        "/admin/annotation/campaignlink/add/", _form(dataset, quota=3, screenout_code=FULL)
    ).content.decode()
    assert "the screen-out code must differ from the completion code" in page
    assert not CampaignLink.objects.exists()


def test_the_api_makes_a_link_with_a_screen_out_code_only_admins_read(dataset):
    url = f"/api/datasets/{dataset.name}/campaign-links/"
    admin, researcher = APIClient(), APIClient()
    admin.force_authenticate(UserFactory(roles=["admin"]))
    researcher.force_authenticate(UserFactory(roles=["researcher"]))
    body = {"kinds": ["STS"], "quota": 3, "completion_code": FULL, "screenout_code": SCREEN}
    made = admin.post(url, body, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["screenout_code"] == SCREEN
    assert researcher.get(url).json()[0]["screenout_code"] is None
    bad = admin.post(url, {**body, "screenout_code": FULL}, format="json")
    assert bad.status_code == 400 and "the screen-out code must differ" in bad.content.decode()
