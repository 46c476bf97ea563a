"""The study steps of a campaign link, the details `make mutation` found untested: the exact
text of each refusal (a participant or an admin reads it), the limits of a question and
of an answer at their edge, the order and numbering of a link's questions, and that
agreeing, declining and sending answers touch only the participant's own run, once
(annotation.people.crowd.questions, annotation.people.crowd.study)."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Participant, ParticipantAnswer, StudyQuestion
from annotation.people.crowd.completion import Step, participant_next
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import campaign_link_create
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
from tests.factories import SplitFactory
from tests.support.crowd_support import ParticipantClient

pytestmark = pytest.mark.django_db

CONSENT = "You rate pictures for ten minutes."
T0 = timezone.now().replace(microsecond=0)


@pytest.fixture
def dataset():
    """A dataset without pairs: a participant goes from the steps before rating straight
    to the questions after it (their pairs ran out)."""
    return SplitFactory().dataset


def make_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS"], "quota": 3, "completion_code": "FULL-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def join(link, external_id="p1") -> Participant:
    return participant_join(token=link.token, params={"PROLIFIC_PID": external_id})


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


def test_a_question_of_an_unknown_phase_is_refused_naming_the_phases(dataset):
    link = make_link(dataset)
    with pytest.raises(QuestionInvalid, match=refusal("the phase must be one of pre, post, got 'during'")):
        study_question_add(link, phase="during", prompt="Q?")
    assert not StudyQuestion.objects.exists()


def test_questions_are_numbered_from_one_per_link_and_phase(dataset):
    """A new question is asked last in its own link's phase, whatever other links and the
    other phase hold."""
    other = make_link(dataset, name="other")
    for n in range(3):
        study_question_add(other, phase="pre", prompt=f"Other {n}?")
    link = make_link(dataset)
    pre = [study_question_add(link, phase="pre", prompt=f"Pre {n}?") for n in range(3)]
    post = study_question_add(link, phase="post", prompt="Post?")
    assert [question.position for question in pre] == [1, 2, 3]
    assert post.position == 1


def test_a_phase_lists_its_own_links_questions_in_their_order(dataset):
    """The admin may reorder the questions: they are asked by position, not by age."""
    link, other = make_link(dataset), make_link(dataset, name="other")
    first = study_question_add(link, phase="pre", prompt="First?")
    second = study_question_add(link, phase="pre", prompt="Second?")
    study_question_add(other, phase="pre", prompt="Another link's?")
    study_question_add(link, phase="post", prompt="After?")
    StudyQuestion.objects.filter(pk=first.pk).update(position=5)
    assert [question.prompt for question in phase_questions(link.pk, "pre")] == [second.prompt, first.prompt]


# --- the participant's answers -----------------------------------------------------------


def test_the_refusal_of_answers_names_every_problem(dataset):
    link = make_link(dataset)
    study_question_add(link, phase="pre", prompt="Age?", required=True)
    eyes = study_question_add(link, phase="pre", prompt="Glasses?", answer_type="choice", options=["yes", "no"])
    participant = join(link)
    with pytest.raises(AnswersInvalid) as refused:
        answers_save(participant, phase="pre", answers={str(eyes.pk): "maybe"})
    assert str(refused.value) == "“Age?” needs an answer; “Glasses?”: choose one of yes, no"


def test_the_longest_answer_is_stored(dataset):
    link = make_link(dataset)
    question = study_question_add(link, phase="pre", prompt="Tell us")
    answers_save(join(link), phase="pre", answers={str(question.pk): "a" * MAX_ANSWER_CHARS})
    assert ParticipantAnswer.objects.get().answer == "a" * MAX_ANSWER_CHARS


def test_a_question_left_out_of_the_answers_is_unanswered(dataset):
    link = make_link(dataset)
    answered = study_question_add(link, phase="pre", prompt="Age?")
    study_question_add(link, phase="pre", prompt="Anything else?")
    answers_save(join(link), phase="pre", answers={str(answered.pk): "30"})
    assert list(ParticipantAnswer.objects.values_list("question_id", "answer")) == [(answered.pk, "30")]


def test_answers_of_an_unknown_phase_or_another_step_are_refused_saying_so(dataset):
    link = make_link(dataset)
    study_question_add(link, phase="pre", prompt="Age?")
    study_question_add(link, phase="post", prompt="Hard?")
    participant = join(link)
    with pytest.raises(AnswersNotExpected, match=refusal("unknown question phase 'during'; use pre or post")):
        answers_save(participant, phase="during", answers={})
    message = "this study does not ask its after rating questions now"
    with pytest.raises(AnswersNotExpected, match=refusal(message)):
        answers_save(participant, phase="post", answers={})


def test_sending_answers_moves_this_participant_on_and_no_other(dataset):
    link = make_link(dataset)
    question = study_question_add(link, phase="pre", prompt="Age?")
    participant, other = join(link), join(link, "p2")
    answers_save(participant, phase="pre", answers={str(question.pk): "30"}, now=T0)
    assert participant.pre_answered_at == T0
    assert participant_next(participant)[0] == Step.NO_WORK, "rating comes next, and there is nothing to rate"
    other.refresh_from_db()
    assert other.pre_answered_at is None and participant_next(other)[0] == Step.PRE


def test_answers_sent_from_a_second_tab_are_refused_and_the_first_are_kept(dataset):
    """Both tabs showed the questions; the first send is the participant's answers."""
    link = make_link(dataset)
    age = study_question_add(link, phase="pre", prompt="Age?")
    job = study_question_add(link, phase="pre", prompt="Job?")
    first_tab, second_tab = join(link), join(link)
    answers_save(first_tab, phase="pre", answers={str(age.pk): "30"}, now=T0)
    with pytest.raises(AnswersNotExpected, match=refusal("you sent these answers already")):
        answers_save(second_tab, phase="pre", answers={str(job.pk): "baker"}, now=T0 + timedelta(minutes=1))
    assert list(ParticipantAnswer.objects.values_list("question_id", "answer")) == [(age.pk, "30")]
    assert Participant.objects.get().pre_answered_at == T0


def test_an_answer_stored_already_is_never_stored_twice(dataset):
    """Should a run hold an answer without the time it was sent, a send stores nothing."""
    link = make_link(dataset)
    age = study_question_add(link, phase="pre", prompt="Age?")
    participant = join(link)
    ParticipantAnswer.objects.create(participant=participant, question=age, answer="30", answered_at=T0)
    with pytest.raises(AnswersNotExpected, match=refusal("you sent these answers already")):
        answers_save(participant, phase="pre", answers={str(age.pk): "31"})
    assert list(ParticipantAnswer.objects.values_list("answer", flat=True)) == ["30"]
    assert Participant.objects.get().pre_answered_at is None


# --- consent -----------------------------------------------------------------------------


def test_consent_is_refused_where_there_is_none_to_give_or_the_run_has_ended(dataset):
    participant = join(make_link(dataset))
    with pytest.raises(StudyStepInvalid, match=refusal("this study asks for no consent")):
        participant_consent(participant, agree=True)
    ended = join(make_link(dataset, name="with consent", consent_text=CONSENT), "p2")
    participant_consent(ended, agree=False)
    with pytest.raises(StudyStepInvalid, match=refusal("this study has ended for you")):
        participant_consent(ended, agree=True)


def test_agreeing_again_changes_nothing_and_declining_after_agreeing_is_refused(dataset):
    participant = join(make_link(dataset, consent_text=CONSENT))
    participant_consent(participant, agree=True, now=T0)
    again = participant_consent(participant, agree=True, now=T0 + timedelta(minutes=1))
    assert again.consented_at == T0
    message = "you agreed already; use 'Leave the study' to stop"
    with pytest.raises(StudyStepInvalid, match=refusal(message)):
        participant_consent(participant, agree=False)
    stored = Participant.objects.get()
    assert (stored.consented_at, stored.finished_at, stored.outcome) == (T0, None, participant.outcome)


def test_agreeing_and_declining_touch_only_the_participants_own_run(dataset):
    link = make_link(dataset, consent_text=CONSENT)
    agreeing, declining, waiting = join(link), join(link, "p2"), join(link, "p3")
    participant_consent(agreeing, agree=True, now=T0)
    participant_consent(declining, agree=False, now=T0)
    waiting.refresh_from_db()
    assert (waiting.consented_at, waiting.finished_at) == (None, None)
    assert participant_next(waiting)[0] == Step.CONSENT
    agreeing.refresh_from_db()
    assert agreeing.finished_at is None


def test_the_first_answer_of_two_tabs_is_the_one_recorded(dataset):
    """The consent page open in two tabs: the second agreement or decline changes neither
    the time of the first nor how the run ended."""
    link = make_link(dataset, consent_text=CONSENT)
    first_tab, second_tab = join(link), join(link)
    participant_consent(first_tab, agree=True, now=T0)
    assert participant_consent(second_tab, agree=True, now=T0 + timedelta(minutes=1)).consented_at == T0
    first_tab, second_tab = join(link, "p2"), join(link, "p2")
    participant_consent(first_tab, agree=False, now=T0)
    participant_consent(second_tab, agree=False, now=T0 + timedelta(minutes=1))
    assert Participant.objects.get(external_id="p2").finished_at == T0


# --- the refusals of the claim ------------------------------------------------------------


def claim_detail(browser: ParticipantClient) -> str:
    response = browser._post("claim/", {"kind": "SIS"})
    assert response.status_code == 403
    return response.json()["detail"]


def test_the_claim_says_which_step_comes_first(dataset):
    link = make_link(dataset, consent_text=CONSENT)
    study_question_add(link, phase="pre", prompt="Age?")
    browser = ParticipantClient(link, "p1")
    browser.join()
    assert claim_detail(browser) == "agree to this study's consent text first: it comes before anything else"
    browser.http.post(f"/join/{link.token}/consent/", {"consent": "agree"})
    assert claim_detail(browser) == "answer this study's questions first: they come before any rating"


def test_the_claim_says_how_the_participant_ended_the_study(dataset):
    link = make_link(dataset, consent_text=CONSENT)
    declined, left = ParticipantClient(link, "p1"), ParticipantClient(link, "p2")
    declined.join(), left.join()
    declined.http.post(f"/join/{link.token}/consent/", {"consent": "decline"})
    left.http.post(f"/join/{link.token}/leave/")
    assert claim_detail(declined) == "this study has ended for you: you did not agree to its consent text"
    assert claim_detail(left) == "this study has ended for you: you left it"


def test_a_run_read_with_its_study_facts_knows_its_steps_without_a_query(dataset, django_assert_num_queries):
    """The claim's gate runs on every claim: the row read through ``with_study_facts``
    answers it alone; a row read without them asks about its own link only."""
    link, other = make_link(dataset), make_link(dataset, name="other")
    study_question_add(link, phase="post", prompt="Hard?")
    study_question_add(other, phase="pre", prompt="Age?")
    join(link)
    participant = with_study_facts(Participant.objects.select_related("link")).get()
    with django_assert_num_queries(0):
        study_gate(participant)
        assert (questions_owed(participant, "pre"), questions_owed(participant, "post")) == (False, True)
    plain = Participant.objects.get()
    assert (questions_owed(plain, "pre"), questions_owed(plain, "post")) == (False, True)
