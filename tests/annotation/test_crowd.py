"""Campaign links: one external id is one participant, bad links and ids get clear pages
with nothing made, the quota is held by the claim (gold items counted), a link of two
kinds moves from one to the next, the per-link numbers, the admin. Gold is on throughout
(uploaded gold pairs served at one claim in two), as in a real study."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import CampaignLink, Participant, Qualification
from annotation.people.crowd.completion import QuotaReached, Step, participant_next
from annotation.people.crowd.join import JoinRefused, participant_join
from annotation.people.crowd.links import CampaignLinkError, campaign_link_create, link_stats, study_url
from annotation.rating.policy import rating_submit_and_claim_next, slot_claim
from tests.factories import UserFactory
from tests.support.crowd_support import SIS_PAIRS, crowd_dataset, items_rated

pytestmark = pytest.mark.django_db

PID = "60a1b2c3d4e5f60718293a4b"


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
        ({}, "PROLIFIC_PID=a%20b%3Cscript%3E", 400, "is not valid"),
        ({}, "PROLIFIC_PID=" + "x" * 65, 400, "is not valid"),
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
        participant_join(token=link.token, params={"PROLIFIC_PID": "someone-else"})
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
    assert "DONE-1" in page and 'content="8;url=https://example.org/back"' in page
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
    participant_join(token=link.token, params={"PROLIFIC_PID": "second"}, now=start)
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
    pids = [f"pid{n}AAAAAAAAAAAAAAAAAAAAA" for n in range(3)]
    for pid in pids:
        participant = participant_join(token=link.token, params={"PROLIFIC_PID": pid})
        slot = slot_claim(rater=participant.user, dataset=dataset.name, kind="SIS")
        while slot is not None:
            _, slot = rate(participant, slot)
    summary = dataset_export(dataset_name=dataset.name, out_dir=tmp_path / "out", formats=["cxc", "jsonl"])
    assert summary.ratings > 0
    written = "".join(
        path.read_text() for path in (tmp_path / "out").iterdir() if path.suffix in (".csv", ".jsonl", ".json")
    )
    assert not any(pid in written for pid in pids) and "prolific" not in written
