"""The study steps of a campaign link, over HTTP as a participant's browser or
script meets them: the consent text first (claims before it: 403 consent_required;
declining ends the run without a code), the questions before rating (403
questions_first; answers checked against each question), the questions after rating
before the code, "Rated n of N" counting gold as the quota does, and "Leave the study"
releasing the held pair to other raters at once. The new pages refuse everyone but the
link's own participant."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import (
    GoldLease,
    GoldLeaseState,
    Participant,
    ParticipantAnswer,
    QualitySettings,
    RatingSlot,
    SlotState,
    StudyQuestion,
)
from annotation.people.crowd.completion import Step, participant_next
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import CampaignLinkError, campaign_link_create
from annotation.people.crowd.questions import (
    MAX_ANSWER_CHARS,
    MAX_OPTION_CHARS,
    MAX_OPTIONS,
    AnswersInvalid,
    AnswersNotExpected,
    QuestionInvalid,
    answers_save,
    phase_questions,
    question_check,
    study_question_add,
)
from annotation.people.crowd.study import (
    StudyStepInvalid,
    participant_consent,
    questions_owed,
    study_gate,
    with_study_facts,
)
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import ParticipantClient, crowd_dataset, items_rated, platform_id
from tests.support.queue_support import api_claim, client_for, queue_pairs

pytestmark = pytest.mark.django_db

CONSENT = "Welcome!\n\nYou rate pictures.\n\n- It takes 10 minutes\n- You may **leave** at any time"


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path)


def make_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS"], "quota": 4, "completion_code": "FULL-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def with_questions(link):
    """A required free-text and an optional choice question before rating, a required
    choice question after."""
    age = study_question_add(link, phase="pre", prompt="How old are you?", required=True)
    eyes = study_question_add(
        link, phase="pre", prompt="Do you wear glasses?", answer_type="choice", options=["yes", "no"]
    )
    hard = study_question_add(
        link, phase="post", prompt="Was it hard?", answer_type="choice", options=["easy", "hard"], required=True
    )
    return age, eyes, hard


def joined(link, external_id="p1") -> ParticipantClient:
    browser = ParticipantClient(link, external_id)
    assert browser.join().status_code == 302
    return browser


def claim_response(browser, kind="SIS"):
    return browser._post("claim/", {"kind": kind})


# --- consent -----------------------------------------------------------------------------


def test_a_participant_who_has_not_agreed_cannot_claim_nor_open_the_rating_page(dataset):
    link = make_link(dataset, consent_text=CONSENT)
    browser = ParticipantClient(link, "p1")
    response = browser.join()
    assert response["Location"] == f"/join/{link.token}/consent/"
    refused = claim_response(browser)
    assert refused.status_code == 403 and refused.json()["code"] == "consent_required"
    assert "consent" in refused.json()["detail"]
    page = browser.http.get(f"/rate/{dataset.name}/sis/")
    assert page.status_code == 302 and page["Location"] == f"/join/{link.token}/next/"
    assert browser.http.get(page["Location"])["Location"] == f"/join/{link.token}/consent/"
    consent = browser.http.get(f"/join/{link.token}/consent/").content.decode()
    assert "<li>You may <strong>leave</strong> at any time</li>" in consent and "I do not agree" in consent

    agreed = browser.http.post(f"/join/{link.token}/consent/", {"consent": "agree"})
    assert agreed.status_code == 302
    assert browser.http.get(agreed["Location"])["Location"] == f"/rate/{dataset.name}/sis/"
    assert Participant.objects.get(link=link).consented_at is not None
    assert claim_response(browser).status_code == 200


def test_the_consent_text_reaches_the_page_escaped(dataset):
    link = make_link(dataset, consent_text='<script>alert("x")</script> **agreed** <b>raw</b>')
    browser = joined(link)
    page = browser.http.get(f"/join/{link.token}/consent/").content.decode()
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "<b>raw</b>" not in page and "<strong>agreed</strong>" in page


def test_declining_ends_the_run_without_a_code_and_without_rights_to_rate(dataset):
    link = make_link(dataset, consent_text=CONSENT, leave_url="https://platform.example/return")
    browser = joined(link)
    declined = browser.http.post(f"/join/{link.token}/consent/", {"consent": "decline"})
    assert declined["Location"] == f"/join/{link.token}/next/"
    end = browser.done_page()
    page = end.content.decode()
    assert end.status_code == 200 and 'data-testid="crowd-declined"' in page
    assert "FULL-1" not in page and "https://platform.example/return" in page
    participant = Participant.objects.get(link=link)
    assert participant.outcome == "declined" and participant.finished_at is not None
    refused = claim_response(browser)
    assert refused.status_code == 403 and refused.json()["code"] == "study_ended"
    # Agreeing afterwards changes nothing: the page has moved on to the end.
    again = browser.http.post(f"/join/{link.token}/consent/", {"consent": "agree"})
    assert again["Location"] == f"/join/{link.token}/next/"
    assert Participant.objects.get(link=link).consented_at is None


def test_a_consent_answer_that_is_neither_agree_nor_decline_is_refused(dataset):
    link = make_link(dataset, consent_text=CONSENT)
    browser = joined(link)
    response = browser.http.post(f"/join/{link.token}/consent/", {"consent": "maybe"})
    assert response.status_code == 400 and "I agree" in response.content.decode()
    assert Participant.objects.get(link=link).consented_at is None


# --- questions ---------------------------------------------------------------------------


def test_the_questions_before_rating_gate_the_claim_and_the_rating_page(dataset):
    link = make_link(dataset, consent_text=CONSENT)
    age, eyes, _ = with_questions(link)
    browser = joined(link)
    browser.http.post(f"/join/{link.token}/consent/", {"consent": "agree"})
    assert browser.http.get(f"/join/{link.token}/next/")["Location"] == f"/join/{link.token}/questions/pre/"
    refused = claim_response(browser)
    assert refused.status_code == 403 and refused.json()["code"] == "questions_first"
    page = browser.http.get(f"/rate/{dataset.name}/sis/")
    assert page.status_code == 302 and page["Location"] == f"/join/{link.token}/next/"
    # The questions after rating are not open yet.
    early = browser.http.get(f"/join/{link.token}/questions/post/")
    assert early["Location"] == f"/join/{link.token}/next/"

    sent = browser.http.post(f"/join/{link.token}/questions/pre/", {f"q{age.pk}": " 34 ", f"q{eyes.pk}": ""})
    assert sent.status_code == 302
    stored = ParticipantAnswer.objects.get(participant__link=link)
    assert (stored.question_id, stored.answer) == (age.pk, "34")
    assert claim_response(browser).status_code == 200


def test_answers_are_checked_against_their_question_and_nothing_is_stored_when_one_is_wrong(dataset):
    link = make_link(dataset)
    age, eyes, _ = with_questions(link)
    browser = joined(link)
    response = browser.http.post(f"/join/{link.token}/questions/pre/", {f"q{age.pk}": "", f"q{eyes.pk}": "maybe"})
    page = response.content.decode()
    assert response.status_code == 400
    assert "“How old are you?” needs an answer" in page
    assert "“Do you wear glasses?”: choose one of yes, no" in page
    assert not ParticipantAnswer.objects.exists()
    assert Participant.objects.get(link=link).pre_answered_at is None
    too_long = browser.http.post(f"/join/{link.token}/questions/pre/", {f"q{age.pk}": "x" * 2001})
    assert too_long.status_code == 400 and "at most 2000 characters" in too_long.content.decode()
    fine = browser.http.post(f"/join/{link.token}/questions/pre/", {f"q{age.pk}": "40", f"q{eyes.pk}": "no"})
    assert fine.status_code == 302
    assert sorted(ParticipantAnswer.objects.values_list("answer", flat=True)) == ["40", "no"]
    # Sent once: a second send is not taken.
    participant = Participant.objects.get(link=link)
    with pytest.raises(AnswersNotExpected):
        answers_save(participant, phase="pre", answers={str(age.pk): "41"})
    assert ParticipantAnswer.objects.get(question=age).answer == "40"


def test_the_questions_after_rating_come_before_the_code(dataset):
    QualitySettings.objects.filter(dataset=dataset).update(gold_one_in=0)
    link = make_link(dataset, quota=2)
    age, _, hard = with_questions(link)
    study_question_add(link, phase="post", prompt="Anything else?")
    browser = joined(link)
    browser.http.post(f"/join/{link.token}/questions/pre/", {f"q{age.pk}": "30"})
    for _ in range(2):
        assert browser.submit(browser.claim("SIS")).status_code == 201
    done = browser.done_page()
    assert done["Location"] == f"/join/{link.token}/next/"
    assert browser.http.get(done["Location"])["Location"] == f"/join/{link.token}/questions/post/"
    missing = browser.http.post(f"/join/{link.token}/questions/post/", {})
    assert missing.status_code == 400 and "“Was it hard?” needs an answer" in missing.content.decode()
    sent = browser.http.post(f"/join/{link.token}/questions/post/", {f"q{hard.pk}": "easy"})
    assert sent["Location"] == f"/join/{link.token}/next/"
    end = browser.done_page()
    assert end.status_code == 200 and "FULL-1" in end.content.decode()
    assert Participant.objects.get(link=link).outcome == "completed"


@pytest.mark.parametrize(
    ("answer_type", "options", "message"),
    [
        ("text", ["a"], "free-text question has no options"),
        ("choice", ["only"], "needs 2 to 20 options"),
        ("choice", ["a", " "], "an option is empty"),
        ("choice", ["a", "a "], "the option 'a' is given twice"),
        ("choice", [str(n) for n in range(21)], "needs 2 to 20 options"),
        ("scale", [], "answer type must be one of text, choice"),
    ],
)
def test_a_bad_question_is_refused_naming_the_problem(answer_type, options, message):
    with pytest.raises(QuestionInvalid, match=message):
        question_check(prompt="Q?", answer_type=answer_type, options=options)


def test_the_admin_adds_questions_to_a_link_and_is_told_what_is_wrong(dataset, admin_client):
    form = {
        "name": "wave 2",
        "dataset": dataset.pk,
        "kinds": ["SIS"],
        "quota": 5,
        "completion_code": "CODE8",
        "id_param": "PROLIFIC_PID",
        "consent_text": CONSENT,
        "active": "on",
        "questions-TOTAL_FORMS": 1,
        "questions-INITIAL_FORMS": 0,
        "questions-0-phase": "pre",
        "questions-0-position": 1,
        "questions-0-prompt": "Your field of work?",
        "questions-0-answer_type": "choice",
        "questions-0-options_text": "science",
        "participants-TOTAL_FORMS": 0,
        "participants-INITIAL_FORMS": 0,
    }
    refused = admin_client.post("/admin/annotation/campaignlink/add/", form)
    assert refused.status_code == 200 and "needs 2 to 20 options, one per line; got 1" in refused.content.decode()
    form["questions-0-options_text"] = "science\r\narts\r\n\r\nother"
    made = admin_client.post("/admin/annotation/campaignlink/add/", form)
    assert made.status_code == 302, made.content.decode()[:3000]
    question = made_link = None
    made_link = dataset.campaign_links.get(name="wave 2")
    question = made_link.questions.get()
    assert made_link.consent_text == CONSENT
    assert (question.answer_type, question.options) == ("choice", ["science", "arts", "other"])
    with_code = {**form, "name": "wave 3", "leave_url": "https://platform.example/?cc=CODE8"}
    with_code.update({"questions-TOTAL_FORMS": 0})
    refused = admin_client.post("/admin/annotation/campaignlink/add/", with_code)
    assert "must not carry the completion code" in refused.content.decode()


def test_a_leave_url_carrying_the_completion_code_is_refused(dataset):
    with pytest.raises(CampaignLinkError, match="must not carry the completion code"):
        make_link(dataset, leave_url="https://platform.example/done?cc=FULL-1")


# --- progress ----------------------------------------------------------------------------


def test_rated_n_of_the_quota_counts_gold_items_as_the_quota_does(dataset):
    QualitySettings.objects.filter(dataset=dataset).update(gold_one_in=1)  # gold first, while any is left
    link = make_link(dataset, quota=6)
    browser = joined(link)
    progress = browser.http.get(f"/api/rate/{dataset.name}/progress/").json()
    assert progress["study"] == {"items_done": 0, "quota": 6}
    for _ in range(5):
        assert browser.submit(browser.claim("SIS")).status_code == 201
    gold = GoldLease.objects.filter(rater__participations__link=link, state=GoldLeaseState.DONE).count()
    assert gold >= 1, "the run rated gold items"
    progress = browser.http.get(f"/api/rate/{dataset.name}/progress/").json()
    assert progress["study"] == {"items_done": 5, "quota": 6}
    assert items_rated(Participant.objects.get(link=link).user, dataset) == 5


def test_a_rater_who_came_through_no_link_has_no_study_progress(dataset):
    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    assert client_for(rater).get(f"/api/rate/{dataset.name}/progress/").json()["study"] is None


def test_the_rating_page_names_nobody_and_offers_to_leave(dataset):
    link = make_link(dataset)
    browser = joined(link, "5f1a2b3c4d")
    page = browser.http.get(f"/rate/{dataset.name}/sis/").content.decode()
    assert "5f1a2b3c4d" not in page and "prolific-" not in page
    assert "Log out" not in page and "Study participant" in page
    assert f'href="/join/{link.token}/leave/"' in page


# --- leaving -----------------------------------------------------------------------------


def test_leaving_releases_the_held_pair_to_another_rater_at_once(tmp_path):
    split = SplitFactory()
    _, (pair,) = queue_pairs(split=split, n_pairs=1, ratings_per_pair=1)
    link = make_link(split.dataset, leave_url="https://platform.example/return")
    browser = joined(link)
    held = browser.claim("SIS")
    other = client_for(UserFactory(roles=["rater"], qualified_for=["SIS"]))
    assert api_claim(other, split.dataset, kind="SIS").status_code == 204, "the only slot is held"

    confirm = browser.http.get(f"/join/{link.token}/leave/")
    assert confirm.status_code == 200 and "Leave the study?" in confirm.content.decode()
    assert RatingSlot.objects.get(pair=pair).state == SlotState.LEASED, "asking to confirm releases nothing"
    left = browser.http.post(f"/join/{link.token}/leave/")
    assert left["Location"] == f"/join/{link.token}/done/"
    taken = api_claim(other, split.dataset, kind="SIS")
    assert taken.status_code == 200 and taken.json()["pair_id"] == held["pair_id"]

    participant = Participant.objects.get(link=link)
    assert participant.outcome == "left" and participant.finished_at is not None
    end = browser.done_page().content.decode()
    assert 'data-testid="crowd-left"' in end and "marked as returned" in end and "FULL-1" not in end
    assert "https://platform.example/return" in end
    refused = claim_response(browser)
    assert refused.status_code == 403 and refused.json()["code"] == "study_ended"
    # Leaving again changes nothing.
    assert browser.http.post(f"/join/{link.token}/leave/")["Location"] == f"/join/{link.token}/done/"


def test_leaving_releases_a_held_gold_pair(dataset):
    QualitySettings.objects.filter(dataset=dataset).update(gold_one_in=1)
    link = make_link(dataset)
    browser = joined(link)
    held = browser.claim("SIS")
    lease = GoldLease.objects.get(rater__participations__link=link)
    assert lease.state == GoldLeaseState.LEASED and held is not None
    browser.http.post(f"/join/{link.token}/leave/")
    lease.refresh_from_db()
    assert lease.state == GoldLeaseState.SKIPPED
    assert Participant.objects.get(link=link).outcome == "left"


def test_a_prolific_link_without_a_leave_url_sends_the_leaver_to_prolific(dataset):
    link = make_link(dataset)
    browser = joined(link)
    browser.http.post(f"/join/{link.token}/leave/")
    assert "https://app.prolific.com/" in browser.done_page().content.decode()


# --- refused -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["consent/", "questions/pre/", "questions/post/", "leave/"])
def test_the_study_pages_refuse_anyone_but_the_links_participant(dataset, path):
    link = make_link(dataset, consent_text=CONSENT)
    with_questions(link)
    owner = joined(link, "owner")
    other_link = make_link(dataset, consent_text=CONSENT)
    stranger = joined(other_link, "stranger")
    rater = Client()
    rater.force_login(UserFactory(roles=["rater"], qualified_for=["SIS"], password=None))
    admin = Client()
    admin.force_login(UserFactory(roles=["admin"], is_staff=True, password=None))
    for visitor in (Client(), stranger.http, rater, admin):
        for method in (visitor.get, visitor.post):
            response = method(f"/join/{link.token}/{path}", {"consent": "agree"} if path == "consent/" else {})
            assert response.status_code == 403, (path, response.status_code)
            assert 'data-testid="crowd-refused"' in response.content.decode()
    participant = Participant.objects.get(link=link)
    assert (participant.consented_at, participant.finished_at) == (None, None)
    assert owner.http.get(f"/join/{link.token}/consent/").status_code == 200


def test_a_rater_from_no_link_has_nothing_to_leave(dataset):
    from annotation.rating import policy

    rater = UserFactory(roles=["rater"], qualified_for=["SIS"])
    with pytest.raises(policy.NotAParticipant, match="nothing to leave"):
        policy.participant_leave(rater=rater, dataset=dataset.name)


def test_a_participant_who_started_long_ago_keeps_the_steps_of_their_link(dataset):
    """A consent text added after someone joined asks them too: nobody rates without it."""
    link = make_link(dataset)
    browser = joined(link)
    assert claim_response(browser).status_code == 200
    link.consent_text = CONSENT
    link.save(update_fields=["consent_text"])
    Participant.objects.filter(link=link).update(started_at=timezone.now() - timedelta(hours=1))
    refused = claim_response(browser)
    assert refused.status_code == 403 and refused.json()["code"] == "consent_required"


# --- export ------------------------------------------------------------------------------


def test_the_answers_are_exported_beside_the_ratings_under_the_rating_files_pseudonym(tmp_path):
    import csv

    from annotation.export import dataset_export
    from annotation.export.study import STUDY_ANSWERS
    from tests.support.export_data import rated_factory_dataset

    rated = rated_factory_dataset(n_images=6)
    link = make_link(rated.dataset)
    age, eyes, _ = with_questions(link)
    who = rated.raters[0]
    participant = Participant.objects.create(link=link, user=who, external_id="x1", started_at=timezone.now())
    answers_save(participant, phase="pre", answers={str(age.pk): "29", str(eyes.pk): "yes"})
    summary = dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "out", formats="cxc")
    assert STUDY_ANSWERS in [entry["name"] for entry in summary.files]
    rows = list(csv.DictReader((tmp_path / "out" / STUDY_ANSWERS).open()))
    assert [(row["phase"], row["question"], row["answer"]) for row in rows] == [
        ("pre", "How old are you?", "29"),
        ("pre", "Do you wear glasses?", "yes"),
    ]
    assert {row["link"] for row in rows} == {"wave"} and {row["answer_type"] for row in rows} == {"text", "choice"}
    # The pseudonym is the one the rater's ratings carry in the raw files.
    raw = [r for f in (tmp_path / "out").glob("*_raw.csv") for r in csv.DictReader(f.open())]
    their_pairs = {pair.pk for pair in rated.complete if pair.ratings.filter(rater=who).exists()}
    assert their_pairs, "the participant rated complete pairs"
    pseudonym = rows[0]["rater_id"]
    assert sum(1 for r in raw if r["rater_id"] == pseudonym) == len(their_pairs)
    assert "x1" not in (tmp_path / "out" / STUDY_ANSWERS).read_text()
    manifest = (tmp_path / "out" / "manifest.json").read_text()
    assert STUDY_ANSWERS in manifest


def test_a_dataset_without_answers_gets_no_answers_file(tmp_path):
    from annotation.export import dataset_export
    from annotation.export.study import STUDY_ANSWERS
    from tests.support.export_data import rated_factory_dataset

    rated = rated_factory_dataset(n_images=6)
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "out", formats="cxc")
    assert not (tmp_path / "out" / STUDY_ANSWERS).exists()


# Folded from test_crowd_study_mutants.py:
# The study steps of a campaign link, the details `make mutation` found untested: the exact
# text of each refusal (a participant or an admin reads it), the limits of a question and
# of an answer at their edge, the order and numbering of a link's questions, and that
# agreeing, declining and sending answers touch only the participant's own run, once
# (annotation.people.crowd.questions, annotation.people.crowd.study).


SHORT_CONSENT = "You rate pictures for ten minutes."
T0 = timezone.now().replace(microsecond=0)


@pytest.fixture
def pairless_dataset():
    """A dataset without pairs: a participant goes from the steps before rating straight
    to the questions after it (their pairs ran out)."""
    return SplitFactory().dataset


def make_quota_3_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS"], "quota": 3, "completion_code": "FULL-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def join(link, external_id="p1") -> Participant:
    return participant_join(token=link.token, params={"PROLIFIC_PID": platform_id(external_id)})


def refusal(message: str) -> str:
    """A pattern matching exactly ``message``."""
    return f"^{re.escape(message)}$"


# --- the questions as the admin writes them ---------------------------------------------


@pytest.mark.parametrize("prompt", ["", "   ", None])
def test_a_question_without_a_prompt_is_refused(prompt):
    with pytest.raises(QuestionInvalid, match=refusal("a question needs a prompt")):
        question_check(prompt=prompt, answer_type="text", options=[])


def test_a_free_text_question_with_options_is_refused_saying_how_to_give_some():
    message = "a free-text question has no options; choose 'one of the options' to give some"
    with pytest.raises(QuestionInvalid, match=refusal(message)):
        question_check(prompt="Q?", answer_type="text", options=["a"])


def test_an_empty_option_is_refused_saying_one_per_line():
    with pytest.raises(QuestionInvalid, match=refusal("an option is empty; write one option per line")):
        question_check(prompt="Q?", answer_type="choice", options=["a", "  "])


def test_the_most_options_and_the_longest_option_are_taken():
    options = [f"option {n}" for n in range(MAX_OPTIONS - 1)] + ["o" * MAX_OPTION_CHARS]
    assert question_check(prompt="Q?", answer_type="choice", options=options) == options


def test_an_option_one_character_too_long_is_refused_quoting_its_first_forty():
    long_option = "".join(chr(ord("a") + n % 26) for n in range(MAX_OPTION_CHARS + 1))
    message = f"the option {long_option[:40]!r}... is longer than {MAX_OPTION_CHARS} characters"
    with pytest.raises(QuestionInvalid, match=refusal(message)):
        question_check(prompt="Q?", answer_type="choice", options=["short", long_option])


def test_a_question_of_an_unknown_phase_is_refused_naming_the_phases(pairless_dataset):
    link = make_quota_3_link(pairless_dataset)
    with pytest.raises(QuestionInvalid, match=refusal("the phase must be one of pre, post, got 'during'")):
        study_question_add(link, phase="during", prompt="Q?")
    assert not StudyQuestion.objects.exists()


def test_questions_are_numbered_from_one_per_link_and_phase(pairless_dataset):
    """A new question is asked last in its own link's phase, whatever other links and the
    other phase hold."""
    other = make_quota_3_link(pairless_dataset, name="other")
    for n in range(3):
        study_question_add(other, phase="pre", prompt=f"Other {n}?")
    link = make_quota_3_link(pairless_dataset)
    pre = [study_question_add(link, phase="pre", prompt=f"Pre {n}?") for n in range(3)]
    post = study_question_add(link, phase="post", prompt="Post?")
    assert [question.position for question in pre] == [1, 2, 3]
    assert post.position == 1


def test_a_phase_lists_its_own_links_questions_in_their_order(pairless_dataset):
    """The admin may reorder the questions: they are asked by position, not by age."""
    link, other = make_quota_3_link(pairless_dataset), make_quota_3_link(pairless_dataset, name="other")
    first = study_question_add(link, phase="pre", prompt="First?")
    second = study_question_add(link, phase="pre", prompt="Second?")
    study_question_add(other, phase="pre", prompt="Another link's?")
    study_question_add(link, phase="post", prompt="After?")
    StudyQuestion.objects.filter(pk=first.pk).update(position=5)
    assert [question.prompt for question in phase_questions(link.pk, "pre")] == [second.prompt, first.prompt]


# --- the participant's answers -----------------------------------------------------------


def test_the_refusal_of_answers_names_every_problem(pairless_dataset):
    link = make_quota_3_link(pairless_dataset)
    study_question_add(link, phase="pre", prompt="Age?", required=True)
    eyes = study_question_add(link, phase="pre", prompt="Glasses?", answer_type="choice", options=["yes", "no"])
    participant = join(link)
    with pytest.raises(AnswersInvalid) as refused:
        answers_save(participant, phase="pre", answers={str(eyes.pk): "maybe"})
    assert str(refused.value) == "“Age?” needs an answer; “Glasses?”: choose one of yes, no"


def test_the_longest_answer_is_stored(pairless_dataset):
    link = make_quota_3_link(pairless_dataset)
    question = study_question_add(link, phase="pre", prompt="Tell us")
    answers_save(join(link), phase="pre", answers={str(question.pk): "a" * MAX_ANSWER_CHARS})
    assert ParticipantAnswer.objects.get().answer == "a" * MAX_ANSWER_CHARS


def test_a_question_left_out_of_the_answers_is_unanswered(pairless_dataset):
    link = make_quota_3_link(pairless_dataset)
    answered = study_question_add(link, phase="pre", prompt="Age?")
    study_question_add(link, phase="pre", prompt="Anything else?")
    answers_save(join(link), phase="pre", answers={str(answered.pk): "30"})
    assert list(ParticipantAnswer.objects.values_list("question_id", "answer")) == [(answered.pk, "30")]


def test_answers_of_an_unknown_phase_or_another_step_are_refused_saying_so(pairless_dataset):
    link = make_quota_3_link(pairless_dataset)
    study_question_add(link, phase="pre", prompt="Age?")
    study_question_add(link, phase="post", prompt="Hard?")
    participant = join(link)
    with pytest.raises(AnswersNotExpected, match=refusal("unknown question phase 'during'; use pre or post")):
        answers_save(participant, phase="during", answers={})
    message = "this study does not ask its after rating questions now"
    with pytest.raises(AnswersNotExpected, match=refusal(message)):
        answers_save(participant, phase="post", answers={})


def test_sending_answers_moves_this_participant_on_and_no_other(pairless_dataset):
    link = make_quota_3_link(pairless_dataset)
    question = study_question_add(link, phase="pre", prompt="Age?")
    participant, other = join(link), join(link, "p2")
    answers_save(participant, phase="pre", answers={str(question.pk): "30"}, now=T0)
    assert participant.pre_answered_at == T0
    assert participant_next(participant)[0] == Step.NO_WORK, "rating comes next, and there is nothing to rate"
    other.refresh_from_db()
    assert other.pre_answered_at is None and participant_next(other)[0] == Step.PRE


def test_answers_sent_from_a_second_tab_are_refused_and_the_first_are_kept(pairless_dataset):
    """Both tabs showed the questions; the first send is the participant's answers."""
    link = make_quota_3_link(pairless_dataset)
    age = study_question_add(link, phase="pre", prompt="Age?")
    job = study_question_add(link, phase="pre", prompt="Job?")
    first_tab, second_tab = join(link), join(link)
    answers_save(first_tab, phase="pre", answers={str(age.pk): "30"}, now=T0)
    with pytest.raises(AnswersNotExpected, match=refusal("you sent these answers already")):
        answers_save(second_tab, phase="pre", answers={str(job.pk): "baker"}, now=T0 + timedelta(minutes=1))
    assert list(ParticipantAnswer.objects.values_list("question_id", "answer")) == [(age.pk, "30")]
    assert Participant.objects.get().pre_answered_at == T0


def test_an_answer_stored_already_is_never_stored_twice(pairless_dataset):
    """Should a run hold an answer without the time it was sent, a send stores nothing."""
    link = make_quota_3_link(pairless_dataset)
    age = study_question_add(link, phase="pre", prompt="Age?")
    participant = join(link)
    ParticipantAnswer.objects.create(participant=participant, question=age, answer="30", answered_at=T0)
    with pytest.raises(AnswersNotExpected, match=refusal("you sent these answers already")):
        answers_save(participant, phase="pre", answers={str(age.pk): "31"})
    assert list(ParticipantAnswer.objects.values_list("answer", flat=True)) == ["30"]
    assert Participant.objects.get().pre_answered_at is None


# --- consent -----------------------------------------------------------------------------


def test_consent_is_refused_where_there_is_none_to_give_or_the_run_has_ended(pairless_dataset):
    participant = join(make_quota_3_link(pairless_dataset))
    with pytest.raises(StudyStepInvalid, match=refusal("this study asks for no consent")):
        participant_consent(participant, agree=True)
    ended = join(make_quota_3_link(pairless_dataset, name="with consent", consent_text=SHORT_CONSENT), "p2")
    participant_consent(ended, agree=False)
    with pytest.raises(StudyStepInvalid, match=refusal("this study has ended for you")):
        participant_consent(ended, agree=True)


def test_agreeing_again_changes_nothing_and_declining_after_agreeing_is_refused(pairless_dataset):
    participant = join(make_quota_3_link(pairless_dataset, consent_text=SHORT_CONSENT))
    participant_consent(participant, agree=True, now=T0)
    again = participant_consent(participant, agree=True, now=T0 + timedelta(minutes=1))
    assert again.consented_at == T0
    message = "you agreed already; use 'Leave the study' to stop"
    with pytest.raises(StudyStepInvalid, match=refusal(message)):
        participant_consent(participant, agree=False)
    stored = Participant.objects.get()
    assert (stored.consented_at, stored.finished_at, stored.outcome) == (T0, None, participant.outcome)


def test_agreeing_and_declining_touch_only_the_participants_own_run(pairless_dataset):
    link = make_quota_3_link(pairless_dataset, consent_text=SHORT_CONSENT)
    agreeing, declining, waiting = join(link), join(link, "p2"), join(link, "p3")
    participant_consent(agreeing, agree=True, now=T0)
    participant_consent(declining, agree=False, now=T0)
    waiting.refresh_from_db()
    assert (waiting.consented_at, waiting.finished_at) == (None, None)
    assert participant_next(waiting)[0] == Step.CONSENT
    agreeing.refresh_from_db()
    assert agreeing.finished_at is None


def test_the_first_answer_of_two_tabs_is_the_one_recorded(pairless_dataset):
    """The consent page open in two tabs: the second agreement or decline changes neither
    the time of the first nor how the run ended."""
    link = make_quota_3_link(pairless_dataset, consent_text=SHORT_CONSENT)
    first_tab, second_tab = join(link), join(link)
    participant_consent(first_tab, agree=True, now=T0)
    assert participant_consent(second_tab, agree=True, now=T0 + timedelta(minutes=1)).consented_at == T0
    first_tab, second_tab = join(link, "p2"), join(link, "p2")
    participant_consent(first_tab, agree=False, now=T0)
    participant_consent(second_tab, agree=False, now=T0 + timedelta(minutes=1))
    assert Participant.objects.get(external_id=platform_id("p2")).finished_at == T0


# --- the refusals of the claim ------------------------------------------------------------


def claim_detail(browser: ParticipantClient) -> str:
    response = browser._post("claim/", {"kind": "SIS"})
    assert response.status_code == 403
    return response.json()["detail"]


def test_the_claim_says_which_step_comes_first(pairless_dataset):
    link = make_quota_3_link(pairless_dataset, consent_text=SHORT_CONSENT)
    study_question_add(link, phase="pre", prompt="Age?")
    browser = ParticipantClient(link, "p1")
    browser.join()
    assert claim_detail(browser) == "agree to this study's consent text first: it comes before anything else"
    browser.http.post(f"/join/{link.token}/consent/", {"consent": "agree"})
    assert claim_detail(browser) == "answer this study's questions first: they come before any rating"


def test_the_claim_says_how_the_participant_ended_the_study(pairless_dataset):
    link = make_quota_3_link(pairless_dataset, consent_text=SHORT_CONSENT)
    declined, left = ParticipantClient(link, "p1"), ParticipantClient(link, "p2")
    declined.join(), left.join()
    declined.http.post(f"/join/{link.token}/consent/", {"consent": "decline"})
    left.http.post(f"/join/{link.token}/leave/")
    assert claim_detail(declined) == "this study has ended for you: you did not agree to its consent text"
    assert claim_detail(left) == "this study has ended for you: you left it"


def test_a_run_read_with_its_study_facts_knows_its_steps_without_a_query(pairless_dataset, django_assert_num_queries):
    """The claim's gate runs on every claim: the row read through ``with_study_facts``
    answers it alone; a row read without them asks about its own link only."""
    link, other = make_quota_3_link(pairless_dataset), make_quota_3_link(pairless_dataset, name="other")
    study_question_add(link, phase="post", prompt="Hard?")
    study_question_add(other, phase="pre", prompt="Age?")
    join(link)
    participant = with_study_facts(Participant.objects.select_related("link")).get()
    with django_assert_num_queries(0):
        study_gate(participant)
        assert (questions_owed(participant, "pre"), questions_owed(participant, "post")) == (False, True)
    plain = Participant.objects.get()
    assert (questions_owed(plain, "pre"), questions_owed(plain, "post")) == (False, True)
