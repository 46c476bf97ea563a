"""Campaign links: one external id is one participant, bad links and ids get clear pages
with nothing made, the quota is held by the claim (gold items counted), a link of two
kinds moves from one to the next, the per-link numbers, the admin. Gold is on throughout
(uploaded gold pairs served at one claim in two), as in a real study."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import (
    CampaignLink,
    GoldLease,
    GoldLeaseState,
    GoldPurpose,
    GoldRating,
    PairSkip,
    Participant,
    ParticipantOutcome,
    Qualification,
)
from annotation.people.crowd.completion import (
    QuotaReached,
    Step,
    completion_outcome,
    completion_url,
    participant_code,
    participant_end,
    participant_finish,
    participant_next,
    participant_skips,
)
from annotation.people.crowd.join import JoinRefused, participant_join
from annotation.people.crowd.links import CampaignLinkError, campaign_link_create, link_stats, study_url
from annotation.quality.quiz import quiz_answer, quiz_set, quiz_state
from annotation.rating.policy import rating_submit_and_claim_next, slot_claim
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import (
    GOLD_PER_KIND,
    SIS_PAIRS,
    ParticipantClient,
    crowd_dataset,
    gold_upload,
    items_rated,
    sts_quiz,
)
from tests.support.crowd_support import (
    platform_id as pid,
)
from tests.support.queue_support import queue_pairs

pytestmark = pytest.mark.django_db

PID = "60a1b2c3d4e5f60718293a4b"
NOT_PROLIFIC = "The participant id in this link (PROLIFIC_PID) is not a Prolific id (24 hexadecimal characters"
NOT_MTURK = "(workerId) is not an MTurk worker id (12-14 capital letters and digits, starting with A)."
NOT_THE_PATTERN = "The participant id in this link (Uid) is not the form this study expects."


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path, gold_one_in=2)


def make_link(dataset, **extra) -> CampaignLink:
    values = {"name": "pilot", "kinds": ["SIS"], "quota": 2, "completion_code": "DONE-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def rate(participant, slot, next_kind: str = "SIS"):
    return rating_submit_and_claim_next(
        rater=participant.user,
        dataset=participant.link.dataset.name,
        slot_id=slot.slot_id,
        next_kind=next_kind,
        score=2.0,
        time_on_item_ms=3000,
        time_to_first_move_ms=500,
        adjustments=1,
        idempotency_key=f"k{slot.slot_id}",
    )


def test_one_external_id_is_one_rater_however_often_the_link_is_opened(dataset):
    link = make_link(dataset)
    first = participant_join(token=link.token, params={"PROLIFIC_PID": PID, "STUDY_ID": "s", "SESSION_ID": "x"})
    again = participant_join(token=link.token, params={"PROLIFIC_PID": PID, "SESSION_ID": "y"})
    other = participant_join(token=link.token, params={"PROLIFIC_PID": PID[::-1]})
    assert first.pk == again.pk and first.user_id == again.user_id and other.user_id != first.user_id
    assert get_user_model().objects.filter(username=f"prolific-{link.pk}-{PID}").count() == 1
    user = first.user
    assert not user.has_usable_password()
    # The participant role only: no rater group, so no rater list or rater action takes them in.
    assert set(user.groups.values_list("name", flat=True)) == {"participant"}
    # No quiz for SIS in this dataset: the link itself qualifies them.
    assert list(Qualification.objects.filter(rater=user).values_list("kind", flat=True)) == ["SIS"]
    # A second link of the same dataset refuses the platform id: one study per dataset.
    second_link = make_link(dataset, name="second wave")
    with pytest.raises(JoinRefused, match="already take part in a study on this data set"):
        participant_join(token=second_link.token, params={"PROLIFIC_PID": PID})


def test_the_claim_holds_the_quota_and_the_submit_stops_serving_at_it(dataset):
    participant = participant_join(token=make_link(dataset).token, params={"PROLIFIC_PID": PID})
    slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
    _, second = rate(participant, slot)
    assert second is not None
    _, third = rate(participant, second)
    assert third is None, "the quota is two items: the submit serves no third"
    with pytest.raises(QuotaReached, match="the 2 items"):
        slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
    assert participant_next(participant) == (Step.DONE, None)


def test_a_participant_with_nothing_left_is_done_early_and_one_who_failed_every_quiz_is_screened_out(dataset):
    participant = participant_join(token=make_link(dataset, quota=100).token, params={"PROLIFIC_PID": PID})
    assert participant_next(participant) == (Step.RATE, "SIS")
    slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
    while slot is not None:
        _, slot = rate(participant, slot)
    assert items_rated(participant.user, dataset) >= SIS_PAIRS
    assert participant_next(participant) == (Step.NO_WORK, None)
    Qualification.objects.filter(rater=participant.user).delete()
    assert participant_next(participant) == (Step.SCREENED_OUT, None)


def test_a_link_of_two_kinds_moves_on_to_the_second_and_counts_the_quota_over_both(dataset):
    participant = participant_join(
        token=make_link(dataset, kinds=["SIS", "STS"], quota=SIS_PAIRS + 3).token, params={"PROLIFIC_PID": PID}
    )
    assert participant_next(participant) == (Step.RATE, "SIS")
    slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
    while slot is not None and items_rated(participant.user, dataset) < SIS_PAIRS + 3:
        _, slot = rate(participant, slot)
    if items_rated(participant.user, dataset) < SIS_PAIRS + 3:
        # SIS ran dry first (fewer gold items came): the link sends them on to STS.
        assert participant_next(participant) == (Step.RATE, "STS")
        slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="STS")
        while items_rated(participant.user, dataset) < SIS_PAIRS + 3:
            _, slot = rate(participant, slot, next_kind="STS")
    assert participant_next(participant) == (Step.DONE, None)
    with pytest.raises(QuotaReached):
        slot_claim(rater=participant.user, dataset=dataset.name, kind="STS")


@pytest.mark.parametrize(
    ("change", "query", "status", "text"),
    [
        ({}, "", 400, "needs your participant id (PROLIFIC_PID)"),
        ({}, "PROLIFIC_PID=", 400, "needs your participant id"),
        ({}, "PROLIFIC_PID=a%20b%3Cscript%3E", 400, NOT_PROLIFIC),
        ({}, "PROLIFIC_PID=" + "x" * 65, 400, NOT_PROLIFIC),
        ({}, "PROLIFIC_PID=throwaway-a", 400, NOT_PROLIFIC),
        ({}, f"PROLIFIC_PID={PID[:-1]}", 400, NOT_PROLIFIC),
        ({}, f"PROLIFIC_PID={PID}a", 400, NOT_PROLIFIC),
        ({}, f"PROLIFIC_PID={'g' * 24}", 400, NOT_PROLIFIC),
        ({"id_param": "workerId"}, f"workerId={PID}", 400, NOT_MTURK),
        ({"id_param": "workerId"}, "workerId=a1b2c3d4e5f6g7", 400, NOT_MTURK),
        ({"id_param": "workerId"}, "workerId=A1B2C3D4E5F", 400, NOT_MTURK),
        ({"id_param": "workerId"}, "workerId=A1B2C3D4E5F6G7H", 400, NOT_MTURK),
        ({"id_param": "Uid", "id_pattern": r"lab-\d{4}"}, "Uid=lab-12345", 400, NOT_THE_PATTERN),
        ({"id_param": "Uid", "id_pattern": r"lab-\d{4}"}, "Uid=LAB-1234", 400, NOT_THE_PATTERN),
        ({"active": False}, f"PROLIFIC_PID={PID}", 410, "This study is closed"),
        ({"expires_at": "past"}, f"PROLIFIC_PID={PID}", 410, "This study is closed"),
        ({"max_participants": 1}, f"PROLIFIC_PID={PID}", 410, "This study is full"),
        ({"id_param": "workerId"}, f"PROLIFIC_PID={PID}", 400, "needs your participant id (workerId)"),
    ],
)
def test_bad_links_and_ids_get_a_clear_page_and_nothing_is_made(dataset, change, query, status, text):
    link = make_link(dataset)
    if change.get("expires_at") == "past":
        change = {"expires_at": timezone.now() - timedelta(minutes=1)}
    if "max_participants" in change:
        participant_join(token=link.token, params={"PROLIFIC_PID": pid("someone-else")})
    CampaignLink.objects.filter(pk=link.pk).update(**change)
    users_before, participants_before = get_user_model().objects.count(), Participant.objects.count()
    response = Client().get(f"/join/{link.token}/?{query}")
    assert response.status_code == status
    assert text in response.content.decode()
    assert (get_user_model().objects.count(), Participant.objects.count()) == (users_before, participants_before)


def test_an_unknown_link_is_a_404_page_and_a_known_participant_may_come_back_after_closing(dataset):
    response = Client().get(f"/join/not-a-token/?PROLIFIC_PID={PID}")
    assert response.status_code == 404 and "This study link is not known" in response.content.decode()
    link = make_link(dataset)
    participant_join(token=link.token, params={"PROLIFIC_PID": PID})
    CampaignLink.objects.filter(pk=link.pk).update(active=False)
    response = Client().get(f"/join/{link.token}/?PROLIFIC_PID={PID}")
    assert response.status_code == 302 and response["Location"] == f"/rate/{dataset.name}/sis/"


def test_the_join_pages_lead_to_the_task_then_to_the_code(dataset):
    link = make_link(dataset, return_url="https://example.org/back")
    client = Client()
    response = client.get(f"/join/{link.token}/?PROLIFIC_PID={PID}", follow=True)
    assert response.redirect_chain[-1][0] == f"/rate/{dataset.name}/sis/"
    participant = Participant.objects.get()
    slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
    _, slot = rate(participant, slot)
    rate(participant, slot)
    # The rating page of a participant at their quota sends them to the code.
    response = client.get(f"/rate/{dataset.name}/sis/", follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/join/{link.token}/done/"
    assert "DONE-1" in page and 'data-reload-seconds="8" data-reload-url="https://example.org/back"' in page
    participant.refresh_from_db()
    assert participant.items_done == 2 and participant.finished_at is not None
    # Another signed-in user cannot read this link's code.
    stranger = Client()
    stranger.force_login(UserFactory(roles=["rater"]))
    response = stranger.get(f"/join/{link.token}/done/")
    assert response.status_code == 403 and "DONE-1" not in response.content.decode()


def test_link_numbers_and_the_prolific_url(dataset):
    link = make_link(dataset)
    start = timezone.now()
    early = participant_join(token=link.token, params={"PROLIFIC_PID": PID}, now=start)
    participant_join(token=link.token, params={"PROLIFIC_PID": pid("second")}, now=start)
    slot = slot_claim(rater=early.user, dataset=dataset.name, kind="SIS")
    rate(early, slot)
    Participant.objects.filter(pk=early.pk).update(finished_at=start + timedelta(minutes=12), outcome="completed")
    stats = link_stats(link)
    # The item may have been a gold pair: it counts the same.
    assert (stats.started, stats.finished, stats.median_minutes, stats.ratings) == (2, 1, 12.0, 1)
    url = study_url(link, "https://rate.example.org/")
    assert url == (
        f"https://rate.example.org/join/{link.token}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kinds": ["XYZ"]}, "kinds must be one or more"),
        ({"kinds": []}, "kinds must be one or more"),
        ({"quota": 0}, "quota must be at least 1"),
        ({"completion_code": "has space"}, "completion code must be"),
        ({"return_url": "javascript:alert(1)"}, "return URL must start with http"),
        ({"id_param": "bad param"}, "id parameter must be"),
    ],
)
def test_a_bad_link_is_refused_naming_the_value(dataset, values, message):
    with pytest.raises(CampaignLinkError, match=message):
        make_link(dataset, **values)
    assert not CampaignLink.objects.exists()


def test_the_admin_makes_a_link_and_shows_its_numbers(dataset, admin_client):
    response = admin_client.post(
        "/admin/annotation/campaignlink/add/",
        {
            "name": "wave 1",
            "dataset": dataset.pk,
            "kinds": ["SIS"],
            "quota": 20,
            "completion_code": "CODE7",
            "return_url": "",
            "id_param": "PROLIFIC_PID",
            "active": "on",
            "questions-TOTAL_FORMS": 0,
            "questions-INITIAL_FORMS": 0,
            "participants-TOTAL_FORMS": 0,
            "participants-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    link = CampaignLink.objects.get()
    assert link.kinds == ["SIS"] and len(link.token) >= 32
    participant_join(token=link.token, params={"PROLIFIC_PID": PID})
    listing = admin_client.get("/admin/annotation/campaignlink/").content.decode()
    assert "wave 1" in listing and "CODE7" not in listing
    detail = admin_client.get(f"/admin/annotation/campaignlink/{link.pk}/change/").content.decode()
    assert f"/join/{link.token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in detail and PID in detail
    bad = admin_client.post(
        "/admin/annotation/campaignlink/add/",
        {
            "name": "bad",
            "dataset": dataset.pk,
            "kinds": ["SIS"],
            "quota": 5,
            "completion_code": "no spaces!",
            "id_param": "PROLIFIC_PID",
            "participants-TOTAL_FORMS": 0,
            "participants-INITIAL_FORMS": 0,
        },
    )
    assert bad.status_code == 200 and "completion code must be" in bad.content.decode()
    assert CampaignLink.objects.count() == 1


def test_the_claim_api_answers_quota_reached_with_its_code(dataset):
    from rest_framework.test import APIClient

    participant = participant_join(token=make_link(dataset, quota=1).token, params={"PROLIFIC_PID": PID})
    rate(participant, slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS"))
    client = APIClient()
    client.force_authenticate(participant.user)
    response = client.post(f"/api/rate/{dataset.name}/claim/", {"kind": "SIS"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "quota_reached"


def test_exports_carry_pseudonyms_never_the_external_ids(dataset, tmp_path):
    from annotation.export import dataset_export

    link = make_link(dataset, quota=8)
    pids = [pid(f"exported {n}") for n in range(3)]
    for external_id in pids:
        participant = participant_join(token=link.token, params={"PROLIFIC_PID": external_id})
        slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
        while slot is not None:
            _, slot = rate(participant, slot)
    summary = dataset_export(dataset_name=dataset.name, out_dir=tmp_path / "out", formats=["cxc", "jsonl"])
    assert summary.ratings > 0
    written = "".join(
        path.read_text() for path in (tmp_path / "out").iterdir() if path.suffix in (".csv", ".jsonl", ".json")
    )
    assert not any(external_id in written for external_id in pids) and "prolific" not in written


# Folded from test_crowd_run_mutants.py:
# A participant's run through a campaign link, the details `make mutation` found
# untested: the partial code's rule at its edge, what leaving records (for this run only,
# once), the exact page of a refused join, the study URL under a base with a path, the
# items a link's numbers count, and a new link's checks and stored settings
# (annotation.people.crowd.completion, .join, .links).


T0 = timezone.now().replace(microsecond=0)


def make_run_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS"], "quota": 3, "completion_code": "FULL-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def refusal(message: str) -> str:
    return f"^{re.escape(message)}$"


# --- how a run ends ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "items_done", "skips_done", "partial_code", "outcome"),
    [
        (Step.DONE, 0, 0, "", ParticipantOutcome.COMPLETED),
        # One rating and as many skips is real work: the partial code.
        (Step.NO_WORK, 1, 1, "PART-1", ParticipantOutcome.PARTIAL),
        (Step.NO_WORK, 1, 2, "PART-1", ParticipantOutcome.RETURNED),
        (Step.NO_WORK, 0, 0, "PART-1", ParticipantOutcome.RETURNED),
        (Step.NO_WORK, 5, 0, "", ParticipantOutcome.RETURNED),
        (Step.SCREENED_OUT, 2, 0, "PART-1", ParticipantOutcome.RETURNED),
    ],
)
def test_the_partial_code_needs_a_rating_and_no_more_skips_than_ratings(
    step, items_done, skips_done, partial_code, outcome
):
    assert completion_outcome(step=step, items_done=items_done, skips_done=skips_done, partial_code=partial_code) == (
        outcome
    )


def test_a_run_ends_only_at_an_end_step_and_on_the_participants_word_only_as_left_or_declined():
    participant = Participant(finished_at=None)
    with pytest.raises(ValueError, match=refusal("a run cannot end at step 'rate'")):
        participant_finish(participant, step=Step.RATE)
    with pytest.raises(ValueError, match=refusal("a participant ends a run as left or declined, not 'completed'")):
        participant_end(participant, outcome="completed")


@pytest.fixture
def small_dataset():
    """Three SIS pairs of one rating each, no gold."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=1)
    return split.dataset


def test_leaving_records_the_items_rated_and_skipped_of_this_run_only(small_dataset):
    link = make_run_link(small_dataset)
    leaving, staying = ParticipantClient(link, "leaving"), ParticipantClient(link, "staying")
    leaving.join(), staying.join()
    assert leaving.submit(leaving.claim("SIS")).status_code == 201
    assert leaving.skip(leaving.claim("SIS")).status_code == 200
    leaving.http.post(f"/join/{link.token}/leave/")
    assert "You left the study after rating 1 of 3 items." in leaving.done_page().content.decode()
    left = Participant.objects.get(external_id=pid("leaving"))
    assert (left.outcome, left.items_done, left.skips_done) == ("left", 1, 1)
    assert participant_code(left) == "", "no code for a run the participant left"
    still = Participant.objects.get(external_id=pid("staying"))
    assert (still.finished_at, still.outcome) == (None, "")
    assert staying.claim("SIS") is not None, "the other participant still rates"


def test_a_run_ended_in_one_tab_keeps_its_first_end(small_dataset):
    link = make_run_link(small_dataset, consent_text="Agree?")
    first_tab = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1")})
    second_tab = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1")})
    participant_end(first_tab, outcome=ParticipantOutcome.LEFT, now=T0)
    participant_end(second_tab, outcome=ParticipantOutcome.DECLINED, now=T0 + timedelta(minutes=1))
    stored = Participant.objects.get()
    assert (stored.outcome, stored.finished_at) == ("left", T0)
    assert (second_tab.outcome, second_tab.finished_at) == ("left", T0)


# --- refused joins -----------------------------------------------------------------------


def test_a_second_link_of_the_dataset_refuses_the_id_with_a_409_page_saying_where_to_go(small_dataset):
    first, second = make_run_link(small_dataset, name="A"), make_run_link(small_dataset, name="B")
    assert ParticipantClient(first, "dup").join().status_code == 302
    refused = ParticipantClient(second, "dup").join()
    assert refused.status_code == 409
    assert (
        "With this participant id (PROLIFIC_PID) you already take part in a study on this data set, so this link "
        "cannot be used. Nobody was signed in. Please go on through the study you joined first."
    ) in refused.content.decode()


def test_an_id_whose_name_another_account_holds_gets_a_409_page_naming_whom_to_ask(small_dataset):
    link = make_run_link(small_dataset)
    UserFactory(username=f"prolific-{link.pk}-{pid('alice')}", roles=["rater"])
    refused = ParticipantClient(link, "alice").join()
    assert refused.status_code == 409
    assert (
        "This participant id (PROLIFIC_PID) cannot be used for this study: it is taken by another account. "
        "Nobody was signed in. Please contact the researcher of the study."
    ) in refused.content.decode()


# --- the link's URL and numbers ------------------------------------------------------------


def test_the_study_url_keeps_the_path_of_its_base(small_dataset):
    """Only the base's trailing slashes go: a site served under /LAB-X/ keeps it."""
    link = make_run_link(small_dataset, id_param="workerId")
    assert study_url(link, "https://uni.example/LAB-X/") == f"https://uni.example/LAB-X/join/{link.token}/"
    assert study_url(link, "https://uni.example//") == f"https://uni.example/join/{link.token}/"


def test_the_links_numbers_count_queue_gold_items_and_no_quiz_answer(tmp_path):
    dataset = crowd_dataset(tmp_path, gold_one_in=1)  # gold first, while any is left
    rating = make_run_link(dataset, quota=2)
    rater = ParticipantClient(rating, "p1")
    rater.join()
    for _ in range(2):
        assert rater.submit(rater.claim("SIS")).status_code == 201
    user = Participant.objects.get(link=rating).user
    assert GoldRating.objects.filter(rater=user, purpose=GoldPurpose.QUEUE).exists(), "a gold item among them"
    assert link_stats(rating).ratings == items_rated(user, dataset) == 2

    sts_quiz(dataset)
    quizzed = make_run_link(dataset, name="quiz", kinds=["STS"])
    ParticipantClient(quizzed, "p2").join()
    taker = get_user_model().objects.get(participations__link=quizzed)
    asked = quiz_state(rater=taker, dataset=dataset.name, kind="STS")
    quiz_answer(
        rater=taker,
        dataset=dataset.name,
        kind="STS",
        gold_pair_id=asked.gold_pair_id,
        score=2.0,
        time_on_item_ms=3000,
        time_to_first_move_ms=500,
        adjustments=1,
        idempotency_key="quiz-1",
    )
    assert GoldRating.objects.filter(rater=taker, purpose=GoldPurpose.QUIZ).count() == 1
    assert link_stats(quizzed).ratings == 0, "a quiz answer is no item of the study"


# --- making a link -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kinds": ["XYZ"]}, "kinds must be one or more of STS, SIS, SITS, got ['XYZ']"),
        ({"quota": 0}, "quota must be at least 1 item per participant, got 0"),
        ({"completion_code": " "}, "the completion code must be 1-100 letters, digits, '-' or '_'"),
        ({"partial_code": "a b"}, "the partial code must be empty or 1-100 letters, digits, '-' or '_'"),
        ({"partial_code": "FULL-1"}, "the partial code must differ from the completion code"),
        ({"return_url": "ftp://x.org/"}, "the return URL must start with http:// or https://, got 'ftp://x.org/'"),
        ({"leave_url": "ftp://x.org/"}, "the leave URL must start with http:// or https://, got 'ftp://x.org/'"),
        (
            {"leave_url": "https://x.org/?cc=FULL-1"},
            "the leave URL must not carry the completion code: it is for participants who leave without one",
        ),
        ({"id_param": ""}, "the id parameter must be a query parameter name, got ''"),
    ],
)
def test_a_bad_link_is_refused_with_the_whole_message(small_dataset, values, message):
    with pytest.raises(CampaignLinkError, match=refusal(message)):
        make_run_link(small_dataset, **values)
    assert not CampaignLink.objects.exists()


def test_a_new_link_keeps_every_setting_it_was_given_at_the_edge_of_the_rules(small_dataset):
    """A quota of one item and plain http:// URLs are allowed; codes, name and consent
    text lose their surrounding blanks; kinds are upper case, each once."""
    admin = UserFactory(roles=["admin"])
    ends = T0 + timedelta(days=7)
    link = campaign_link_create(
        dataset=small_dataset,
        name="  pilot ",
        kinds=["sts", "SIS", "sis"],
        quota=1,
        completion_code=" FULL-1 ",
        partial_code=" PART-1 ",
        return_url="http://lab.example/back",
        leave_url="http://lab.example/leave",
        consent_text="  Agree?  ",
        id_param="workerId",
        max_participants=2,
        expires_at=ends,
        created_by=admin,
        now=T0,
    )
    stored = CampaignLink.objects.get()
    assert stored.pk == link.pk
    assert (stored.name, stored.kinds, stored.quota) == ("pilot", ["SIS", "STS"], 1)
    assert (stored.completion_code, stored.partial_code) == ("FULL-1", "PART-1")
    assert (stored.return_url, stored.leave_url) == ("http://lab.example/back", "http://lab.example/leave")
    assert (stored.consent_text, stored.id_param) == ("Agree?", "workerId")
    assert (stored.max_participants, stored.expires_at, stored.created_by, stored.created_at) == (2, ends, admin, T0)
    assert stored.active


def test_a_link_without_a_name_is_named_after_its_dataset(small_dataset):
    link = make_run_link(small_dataset, name="  ")
    assert CampaignLink.objects.get(pk=link.pk).name == f"{small_dataset.name} link"


# --- the account a link makes ------------------------------------------------------------


def test_an_id_parameter_of_no_known_platform_names_the_account_in_lower_case(small_dataset):
    link = make_run_link(small_dataset, id_param="Uid", id_pattern="[a-z]{3}")
    participant = participant_join(token=link.token, params={"Uid": "abc"})
    assert participant.user.username == f"uid-{link.pk}-abc"


def test_a_quiz_whose_pairs_were_all_retired_gates_nothing(small_dataset, tmp_path):
    """Retired quiz pairs ask nothing: the link grants the kind on joining, as without a quiz."""
    gold_upload(small_dataset.splits.get(), "SIS", 2, tmp_path)
    quiz_set(
        dataset_id=small_dataset.pk,
        gold_pair_ids=list(small_dataset.gold_pairs.values_list("id", flat=True)),
        in_quiz=True,
    )
    small_dataset.gold_pairs.update(active=False)
    browser = ParticipantClient(make_run_link(small_dataset), "p1")
    assert browser.join()["Location"] == f"/rate/{small_dataset.name}/sis/"
    user = Participant.objects.get().user
    assert Qualification.objects.filter(rater=user, dataset=small_dataset, kind="SIS").exists()
    assert browser.claim("SIS") is not None


# --- what the end records and counts --------------------------------------------------------


def test_a_run_left_in_one_tab_is_not_finished_again_by_the_end_page_of_another(small_dataset):
    """The end page of a stale tab keeps the first end: no code for a run that was left."""
    link = make_run_link(small_dataset, partial_code="PART-1")
    leaving_tab = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1")})
    stale_tab = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1")})
    participant_end(leaving_tab, outcome=ParticipantOutcome.LEFT, now=T0)
    finished = participant_finish(stale_tab, step=Step.DONE, now=T0 + timedelta(minutes=1))
    assert (finished.outcome, finished.finished_at) == ("left", T0)
    assert participant_code(finished) == ""


def test_a_run_left_on_a_link_of_no_platform_without_a_leave_page_goes_nowhere(small_dataset):
    """Only a Prolific link sends a leaving participant to Prolific's home."""
    link = make_run_link(small_dataset, id_param="workerId")
    assert completion_url(link, ParticipantOutcome.LEFT) == ""
    assert completion_url(link, ParticipantOutcome.DECLINED) == ""


def test_the_links_ratings_are_its_own_participants_items_in_its_dataset(small_dataset):
    """Another link's participants rating the same data set do not count for this link."""
    ours, theirs = make_run_link(small_dataset, name="ours"), make_run_link(small_dataset, name="theirs")
    mine, other = ParticipantClient(ours, "mine"), ParticipantClient(theirs, "other")
    mine.join(), other.join()
    assert mine.submit(mine.claim("SIS")).status_code == 201
    assert other.rate_all("SIS") == 2
    assert (link_stats(ours).ratings, link_stats(theirs).ratings) == (1, 2)


def test_a_runs_skips_are_its_raters_ordinary_and_gold_skips_since_it_started(tmp_path):
    """The partial code's skip count: another participant's skips, and skips from before
    the run started, are not this run's."""
    dataset = crowd_dataset(tmp_path, gold_one_in=1)  # gold first, while any is left
    link = make_run_link(dataset, partial_code="PART-1")
    few, many = ParticipantClient(link, "few"), ParticipantClient(link, "many")
    few.join(), many.join()
    assert few.skip(few.claim("SIS")).status_code == 200  # one gold pair
    assert many.skip_all("SIS") == GOLD_PER_KIND + SIS_PAIRS
    skipper = Participant.objects.get(external_id=pid("many"))
    assert participant_skips(skipper) == GOLD_PER_KIND + SIS_PAIRS
    assert participant_skips(Participant.objects.get(external_id=pid("few"))) == 1
    Participant.objects.filter(pk=skipper.pk).update(started_at=timezone.now() + timedelta(minutes=1))
    skipper.refresh_from_db()
    assert participant_skips(skipper) == 0, "skips before the run started are not the run's"


def _quiz_fail_every_attempt(user, dataset, kind: str) -> None:
    """Answer every question of every attempt far from its reference score."""
    state = quiz_state(rater=user, dataset=dataset.name, kind=kind)
    for step in range(100):
        if state.result is not None:
            if state.attempt >= state.attempts_allowed:
                assert not state.qualified
                return
            state = quiz_state(rater=user, dataset=dataset.name, kind=kind, start=True)
            continue
        reference = dataset.gold_pairs.get(pk=state.gold_pair_id).gold_score
        quiz_answer(
            rater=user,
            dataset=dataset.name,
            kind=kind,
            gold_pair_id=state.gold_pair_id,
            score=5.0 if reference < 2.5 else 0.0,
            time_on_item_ms=3000,
            time_to_first_move_ms=500,
            adjustments=1,
            idempotency_key=f"fail-{step}",
        )
        state = quiz_state(rater=user, dataset=dataset.name, kind=kind)
    raise AssertionError("the quiz never ended")


def test_a_participant_who_failed_every_attempt_of_the_links_quiz_is_screened_out(tmp_path):
    """Failing the quiz ends the study for them: it is not offered again."""
    dataset = crowd_dataset(tmp_path)
    sts_quiz(dataset)
    link = make_run_link(dataset, kinds=["STS"])
    participant = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1")})
    assert participant_next(participant) == (Step.RATE, "STS"), "the quiz first"
    _quiz_fail_every_attempt(participant.user, dataset, "STS")
    assert participant_next(participant) == (Step.SCREENED_OUT, None)


def test_pairs_left_in_another_data_set_do_not_keep_a_participant_rating(small_dataset):
    """With every pair of the study rated the run is through, though other data sets
    still have SIS pairs open."""
    queue_pairs(split=SplitFactory(), n_pairs=2, ratings_per_pair=1)
    link = make_run_link(small_dataset, quota=10, partial_code="PART-1")
    rater = ParticipantClient(link, "p1")
    rater.join()
    assert rater.rate_all("SIS") == 3
    assert participant_next(Participant.objects.get(link=link)) == (Step.NO_WORK, None)


def test_a_runs_skips_leave_out_the_accounts_skips_in_other_data_sets(tmp_path):
    """Only the link's data set counts: skips its account made elsewhere (an account an
    admin let rate another data set too) are no part of this run."""
    link = make_run_link(crowd_dataset(tmp_path))
    ParticipantClient(link, "p1").join()
    participant = Participant.objects.get(link=link)
    (tmp_path / "other").mkdir()
    other = crowd_dataset(tmp_path / "other")
    now = timezone.now()
    PairSkip.objects.create(pair=other.pairs.first(), rater=participant.user, created_at=now)
    gold = other.gold_pairs.first()
    GoldLease.objects.create(
        gold_pair=gold,
        rater=participant.user,
        dataset=other,
        kind=gold.kind,
        state=GoldLeaseState.SKIPPED,
        leased_at=now,
    )
    assert participant_skips(participant) == 0


# --- who joins ---------------------------------------------------------------------------


def test_a_new_run_keeps_the_platforms_study_and_session_ids_cut_at_64_characters(small_dataset):
    link = make_run_link(small_dataset)
    run = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1"), "STUDY_ID": "s" * 70})
    run.refresh_from_db()
    assert (run.study_id, run.session_id) == ("s" * 64, "")
    other = participant_join(token=link.token, params={"PROLIFIC_PID": pid("p2"), "SESSION_ID": "session-9"})
    other.refresh_from_db()
    assert (other.study_id, other.session_id) == ("", "session-9")


def test_one_platform_id_takes_part_in_studies_on_two_data_sets(small_dataset):
    """One study per data set: a link of another data set takes the same platform id."""
    elsewhere = SplitFactory()
    queue_pairs(split=elsewhere, n_pairs=2, ratings_per_pair=1)
    here = participant_join(token=make_run_link(small_dataset).token, params={"PROLIFIC_PID": pid("p1")})
    there = participant_join(token=make_run_link(elsewhere.dataset).token, params={"PROLIFIC_PID": pid("p1")})
    assert here.pk != there.pk and here.user_id != there.user_id
    assert {here.link.dataset_id, there.link.dataset_id} == {small_dataset.id, elsewhere.dataset_id}


def join_refusal(link_or_token, external_id=PID, now=None) -> tuple[str, int]:
    token = getattr(link_or_token, "token", link_or_token)
    with pytest.raises(JoinRefused) as refused:
        participant_join(token=token, params={"PROLIFIC_PID": external_id}, now=now)
    return str(refused.value), refused.value.http_status


def test_the_refusals_of_an_unknown_a_full_and_a_closed_link_read_whole(small_dataset):
    assert join_refusal("no-such-token") == (
        "This study link is not known. Check that you copied the whole link from the study page.",
        404,
    )
    full = make_run_link(small_dataset, name="full", max_participants=1)
    participant_join(token=full.token, params={"PROLIFIC_PID": pid("first")})
    assert join_refusal(full) == (
        "This study is full: every place is taken. Please return it on the platform.",
        410,
    )
    closed = make_run_link(small_dataset, name="closed")
    CampaignLink.objects.filter(pk=closed.pk).update(active=False)
    assert join_refusal(closed) == (
        "This study is closed: it takes no new participants. Please return it on the platform.",
        410,
    )


def test_a_link_is_closed_from_the_moment_it_expires(small_dataset):
    expiry = T0 + timedelta(days=1)
    link = make_run_link(small_dataset, expires_at=expiry)
    assert join_refusal(link, now=expiry)[1] == 410
    assert participant_join(token=link.token, params={"PROLIFIC_PID": pid("p1")}, now=expiry - timedelta(seconds=1))


def test_a_link_made_without_a_partial_code_has_none(small_dataset):
    assert make_run_link(small_dataset).partial_code == ""


def test_a_link_token_is_32_url_safe_characters_of_192_random_bits(small_dataset):
    tokens = {make_run_link(small_dataset, name=f"wave {n}").token for n in range(3)}
    assert len(tokens) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{32}", token) for token in tokens)
