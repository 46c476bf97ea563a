"""A campaign link's short questions before and after the ratings, and each
participant's answers to them. The checks of a question's options and of an answer live
in ``annotation.people.crowd.questions``; what the database can hold, it holds here."""

from django.db import models
from django.db.models import Q

from annotation.models.onboarding import CampaignLink, Participant


class QuestionPhase(models.TextChoices):
    PRE = "pre", "before rating"
    POST = "post", "after rating"


class AnswerType(models.TextChoices):
    TEXT = "text", "free text"
    CHOICE = "choice", "one of the options"


class StudyQuestion(models.Model):
    """One question of a link, asked before (``pre``) or after (``post``) the ratings, in
    ``position`` order: free text, or one of ``options`` (a JSON list of strings)."""

    link = models.ForeignKey(CampaignLink, on_delete=models.CASCADE, related_name="questions")
    phase = models.CharField(max_length=4, choices=QuestionPhase.choices)
    position = models.PositiveSmallIntegerField(default=1, help_text="Questions of a phase are asked in this order.")
    prompt = models.CharField(max_length=500)
    answer_type = models.CharField(max_length=6, choices=AnswerType.choices, default=AnswerType.TEXT)
    options = models.JSONField(
        default=list, blank=True, help_text='The choices of a choice question, e.g. ["yes", "no"]; none for free text.'
    )
    required = models.BooleanField(default=False, help_text="The participant must answer it to go on.")

    class Meta:
        # "pre" before "post", then in their order.
        ordering = ["link", "-phase", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["link", "phase", "position"], name="study_question_position_once"),
            models.CheckConstraint(condition=Q(phase__in=QuestionPhase.values), name="study_question_phase_known"),
            models.CheckConstraint(
                condition=Q(answer_type__in=AnswerType.values), name="study_question_answer_type_known"
            ),
            models.CheckConstraint(condition=~Q(prompt=""), name="study_question_has_prompt"),
            # Free text has no options; a choice question has some (how many, the service checks).
            models.CheckConstraint(
                condition=(Q(answer_type=AnswerType.TEXT) & Q(options=[]))
                | (Q(answer_type=AnswerType.CHOICE) & ~Q(options=[])),
                name="study_question_options_fit_type",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.phase} question {self.position} of link {self.link_id}"


class ParticipantAnswer(models.Model):
    """A participant's answer to one question of their link: the text typed, or the option
    chosen (as written in the question). An optional question left blank has no row."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="answers")
    question = models.ForeignKey(StudyQuestion, on_delete=models.PROTECT, related_name="answers")
    answer = models.TextField()
    answered_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["participant", "question"], name="participant_answer_once"),
            models.CheckConstraint(condition=~Q(answer=""), name="participant_answer_not_empty"),
        ]

    def __str__(self) -> str:
        return f"answer of participant {self.participant_id} to question {self.question_id}"
