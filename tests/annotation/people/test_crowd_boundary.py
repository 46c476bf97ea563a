"""The crowd boundary seen by a participant who wants pay without the work it stands for:
the quiz comes first through the API as on the pages; one platform id takes part in one
study of a data set; and a campaign link signs in only the account it made itself, never
the account another link made for the same platform id."""

import pytest
from django.contrib.auth import get_user_model

from annotation import serving as queue
from annotation.models import Participant, Qualification, Rating
from annotation.people.crowd.links import campaign_link_create
from tests.support.crowd_support import ParticipantClient, crowd_dataset, items_rated, sts_quiz

pytestmark = pytest.mark.django_db

FULL, PART = "FULL-CODE-1", "PART-CODE-1"


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path, gold_one_in=2)


def signed_in_as(browser: ParticipantClient):
    return browser.http.session.get("_auth_user_id")


def test_the_quiz_comes_first_through_the_api_too(dataset):
    """STS is quiz-gated; the participant never opens the quiz and scripts SIS claims."""
    sts_quiz(dataset)
    link = campaign_link_create(
        dataset=dataset, name="w", kinds=["SIS", "STS"], quota=5, completion_code=FULL, partial_code=PART
    )
    cheat = ParticipantClient(link, "cheat1")
    joined = cheat.join()
    assert joined.status_code == 302 and joined["Location"].endswith("/sts/")
    for body in ({"kind": "SIS"}, {}):
        refused = cheat._post("claim/", body)
        assert refused.status_code == 403, refused.content
        assert refused.json()["code"] == "quiz_first"
        assert "STS" in refused.json()["detail"] and "quiz" in refused.json()["detail"]
    # The SIS page sends them to the quiz as well; the quiz itself opens.
    page = cheat.http.get(f"/rate/{dataset.name}/sis/")
    assert page.status_code == 302 and page["Location"].endswith("/sts/")
    assert cheat._post("quiz/sts/", {}).status_code in (200, 201)
    assert items_rated(get_user_model().objects.get(participations__link=link), dataset) == 0
    done = cheat.done_page()
    assert FULL not in done.content.decode()
    assert Participant.objects.get().outcome == ""


def test_the_quiz_first_rule_lifts_once_the_quiz_is_passed(dataset):
    sts_quiz(dataset)
    link = campaign_link_create(dataset=dataset, name="w", kinds=["SIS", "STS"], quota=5, completion_code=FULL)
    browser = ParticipantClient(link, "honest1")
    browser.join()
    user = get_user_model().objects.get(participations__link=link)
    Qualification.objects.create(rater=user, dataset=dataset, kind="STS")
    slot = browser.claim("SIS")
    assert slot is not None and browser.submit(slot).status_code == 201


def test_one_platform_id_takes_part_in_one_study_of_a_data_set(dataset):
    first = campaign_link_create(dataset=dataset, name="A", kinds=["SIS"], quota=3, completion_code="CODE-A")
    second = campaign_link_create(dataset=dataset, name="C", kinds=["SIS"], quota=3, completion_code="CODE-C")
    in_first = ParticipantClient(first, "dup")
    assert in_first.join().status_code == 302
    in_second = ParticipantClient(second, "dup")
    refused = in_second.join()
    page = refused.content.decode()
    assert refused.status_code == 409
    assert "already take part in a study on this data set" in page
    assert first.token not in page and first.name not in page.replace("CODE-A", "")
    assert signed_in_as(in_second) is None
    assert not Participant.objects.filter(link=second).exists()
    assert in_second._post("claim/", {"kind": "SIS"}).status_code in (401, 403)
    # Their own link still lets them in and rate.
    assert in_first.join().status_code == 302
    for _ in range(3):
        assert in_first.submit(in_first.claim("SIS")).status_code == 201
    assert "CODE-A" in in_first.done_page().content.decode()
    assert "CODE-C" not in in_second.done_page().content.decode()


def test_another_links_participant_id_opens_only_a_run_of_that_link(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a_data, b_data = crowd_dataset(tmp_path / "a"), crowd_dataset(tmp_path / "b")
    link_a = campaign_link_create(dataset=a_data, name="A", kinds=["SIS"], quota=5, completion_code="CODE-A")
    link_b = campaign_link_create(dataset=b_data, name="B", kinds=["SIS"], quota=5, completion_code="CODE-B")
    alice = ParticipantClient(link_a, "alice")
    assert alice.join().status_code == 302
    assert alice.submit(alice.claim("SIS")).status_code == 201
    alice_id = signed_in_as(alice)
    # The attacker knows only link B and Alice's platform id.
    attacker = ParticipantClient(link_b, "alice")
    assert attacker.join().status_code == 302
    assert signed_in_as(attacker) not in (None, alice_id)
    attacker.dataset = a_data.name
    assert attacker._post("claim/", {"kind": "SIS"}).status_code == 403
    assert not Rating.objects.filter(pair__dataset=a_data, rater_id=signed_in_as(attacker)).exists()
    assert items_rated(get_user_model().objects.get(pk=alice_id), a_data) == 1
    # Alice's run goes on untouched.
    assert alice.join().status_code == 302 and signed_in_as(alice) == alice_id
    accounts = Participant.objects.values_list("link_id", "user__username")
    assert {username for _, username in accounts} == {
        f"prolific-{link_a.pk}-{alice.external_id}",
        f"prolific-{link_b.pk}-{alice.external_id}",
    }


def test_a_quota_rated_around_an_owed_quiz_earns_no_code(dataset):
    """Ratings stored before the quiz came first (through the queue itself, as the hole
    let them in) fill the quota; the end page still asks for the quiz, not the code."""
    sts_quiz(dataset)
    link = campaign_link_create(dataset=dataset, name="w", kinds=["SIS", "STS"], quota=3, completion_code=FULL)
    browser = ParticipantClient(link, "early1")
    browser.join()
    user = get_user_model().objects.get(participations__link=link)
    for number in range(3):
        slot = queue.slot_claim(rater=user, dataset=dataset.name, kind="SIS")
        queue.rating_submit(
            rater=user,
            dataset=dataset.name,
            slot_id=slot.slot_id,
            score=2.0,
            time_on_item_ms=4000,
            time_to_first_move_ms=500,
            adjustments=1,
            idempotency_key=f"early-{number}",
        )
    assert items_rated(user, dataset) == 3
    done = browser.done_page()
    assert done.status_code == 302
    assert browser.http.get(done["Location"])["Location"].endswith("/sts/")
    assert FULL not in browser.done_page().content.decode()
    assert Participant.objects.get().finished_at is None
