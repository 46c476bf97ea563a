"""Onboarding raters: invitations that let a new rater set their password."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.items import TaskKind


class Invitation(models.Model):
    """A one-time link for ``user`` to set a password. Only the SHA-256 of its token is
    stored: the link is shown once, to the admin who made it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations")
    token_digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 (hex) of the link's token.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(expires_at__gt=models.F("created_at")), name="invitation_expires_later")
        ]

    def __str__(self) -> str:
        state = "used" if self.used_at else "open"
        return f"invitation of {self.user_id} ({state})"


class InvitationDownload(models.Model):
    """The one download of a bulk add's invitation links as CSV. Only the SHA-256 of its
    token is stored, and the invitation tokens of ``users`` are derived from that token
    (HMAC-SHA256 of the user id, annotation.people.invitation_csv): the file can be
    made again only by whoever holds the download link, once, until ``expires_at``."""

    token_digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 (hex) of the download token.")
    users = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    downloaded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("created_at")), name="invitation_download_expires_later"
            )
        ]

    def __str__(self) -> str:
        state = "downloaded" if self.downloaded_at else "waiting"
        return f"invitation download #{self.pk} ({state})"


QUIZ_ATTEMPTS = 2


class QuizAttempt(models.Model):
    """One pass of a rater through the qualification quiz of a dataset's task kind: the
    questions in ``order`` (gold pair ids drawn at random from the kind's quiz pool; the
    second attempt never repeats one of the first, see annotation.quality.quiz).
    The answers are GoldRating rows (purpose ``quiz``, this ``number``), never ratings of
    the dataset. Finished when every item is answered; passed when the mean absolute
    error is below the dataset's ``quiz_max_error``, which grants the kind."""

    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quiz_attempts")
    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="quiz_attempts")
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    number = models.PositiveSmallIntegerField(help_text=f"1 to {QUIZ_ATTEMPTS}.")
    order = models.JSONField(help_text="The gold pair ids of this attempt, in the order they are asked.")
    answered = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    mean_error = models.FloatField(null=True, blank=True)
    threshold = models.FloatField(null=True, blank=True, help_text="The dataset's quiz_max_error when finished.")
    passed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rater", "dataset", "kind", "number"], name="quiz_attempt_unique"),
            models.CheckConstraint(
                condition=Q(number__gte=1) & Q(number__lte=QUIZ_ATTEMPTS), name="quiz_attempt_number_in_range"
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True, passed__isnull=True)
                | Q(finished_at__isnull=False, passed__isnull=False, mean_error__isnull=False),
                name="quiz_attempt_result_when_finished",
            ),
        ]

    def __str__(self) -> str:
        state = "open" if self.finished_at is None else ("passed" if self.passed else "failed")
        return f"{self.kind} quiz attempt {self.number} of {self.rater_id} ({state})"


class CampaignLink(models.Model):
    """An entry link for a crowd platform (Prolific, or any platform that appends a
    participant id to a URL): whoever opens ``/join/<token>/?<id_param>=...`` becomes
    (or resumes) the participant of that external id, rates up to ``quota`` items of
    ``kinds`` in ``dataset`` and is shown ``completion_code``; one whose queue runs dry
    first is shown ``partial_code`` (when set and earned, see annotation.people.crowd), and
    one who failed the qualification quiz ``screenout_code`` (when set). The token
    is shown to admins again, so it is stored as is: it lets a visitor in as a
    participant, never as anyone else."""

    dataset = models.ForeignKey("annotation.Dataset", on_delete=models.CASCADE, related_name="campaign_links")
    name = models.CharField(max_length=200, help_text="For the admins, e.g. 'Prolific pilot, 20 people'.")
    token = models.CharField(max_length=64, unique=True)
    kinds = models.JSONField(help_text='Task kinds the participants rate, e.g. ["STS"].')
    quota = models.PositiveIntegerField(help_text="Items (pairs) each participant rates before the completion code.")
    completion_code = models.CharField(max_length=100)
    partial_code = models.CharField(
        max_length=100,
        blank=True,
        help_text="Shown to a participant whose pairs ran out before the quota (after real work); "
        "empty: such participants are asked to return the study.",
    )
    screenout_code = models.CharField(
        "screen-out code",
        max_length=100,
        blank=True,
        help_text="Shown to a participant who failed the qualification quiz (the platform's screen-out code, "
        "e.g. Prolific's 'screened out' completion code); empty: such participants are asked to return the study.",
    )
    return_url = models.URLField(
        max_length=1000,
        blank=True,
        help_text="Where the completion page sends the participant; empty: Prolific's completion URL with the code.",
    )
    id_param = models.CharField(
        max_length=50,
        default="PROLIFIC_PID",
        help_text="The query parameter carrying the participant's platform id (PROLIFIC_PID, workerId, ...).",
    )
    id_pattern = models.CharField(
        max_length=200,
        blank=True,
        help_text="A regular expression (Python syntax) every participant id of this link must match as a whole. "
        "Empty: the platform's own format (PROLIFIC_PID: 24 hexadecimal characters; workerId: an MTurk worker id, "
        "12-14 capital letters and digits starting with A). A link with another id parameter needs one. "
        "Participants whose ids no longer match cannot come back.",
    )
    leave_url = models.URLField(
        max_length=1000,
        blank=True,
        help_text="The platform's page for a participant who leaves the study or does not consent (no code is "
        "given; it must not carry the completion code); empty: Prolific's home for Prolific links, else none.",
    )
    consent_text = models.TextField(
        blank=True,
        help_text="Consent or welcome text shown before anything else; the participant agrees or leaves. Plain "
        "text: blank lines separate paragraphs, lines starting with '- ' make a list, **bold** is bold. "
        "Empty: no consent step.",
    )
    max_participants = models.PositiveIntegerField(
        null=True, blank=True, help_text="Once this many have started, new participants are turned away."
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(quota__gte=1), name="campaign_link_quota_positive"),
            models.CheckConstraint(condition=~Q(completion_code=""), name="campaign_link_has_code"),
            models.CheckConstraint(condition=~Q(id_param=""), name="campaign_link_has_id_param"),
            # An id parameter of no known platform needs the link's own pattern.
            models.CheckConstraint(
                condition=Q(id_param__in=["PROLIFIC_PID", "workerId"]) | ~Q(id_pattern=""),
                name="campaign_link_id_format_known",
            ),
            # The partial code must not be a second copy of the full one.
            models.CheckConstraint(
                condition=~Q(partial_code=models.F("completion_code")), name="campaign_link_partial_code_differs"
            ),
            # The screen-out code pays for a failed quiz: it is neither of the codes for work done.
            models.CheckConstraint(
                condition=~Q(screenout_code=models.F("completion_code"))
                & (Q(screenout_code="") | ~Q(screenout_code=models.F("partial_code"))),
                name="campaign_link_screenout_code_differs",
            ),
            # Who leaves without a code must not be sent to a URL that hands them one.
            models.CheckConstraint(
                condition=~Q(leave_url__contains=models.F("completion_code")),
                name="campaign_link_leave_url_without_code",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.dataset_id})"


class ParticipantOutcome(models.TextChoices):
    """How a participant's run ended, fixed when the end page is first shown."""

    COMPLETED = "completed", "completed (quota rated, completion code shown)"
    PARTIAL = "partial", "partial (pairs ran out, partial code shown)"
    RETURNED = "returned", "returned (no code: asked to return the study)"
    LEFT = "left", "left (returned: left the study with the button, no code)"
    DECLINED = "declined", "declined (did not consent: no code, nothing rated)"
    SCREENED_OUT = "screened_out", "screened out (failed the quiz: screen-out code shown, if the link has one)"


class Participant(models.Model):
    """A crowd participant's run through one campaign link. One external id is one rater
    (``user``) however often the link is opened; external ids stay in this table and in
    the user name, while exports carry the usual pseudonyms."""

    link = models.ForeignKey(CampaignLink, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participations")
    external_id = models.CharField(max_length=64)
    study_id = models.CharField(max_length=64, blank=True)
    session_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    items_done = models.PositiveIntegerField(default=0, help_text="Items rated when the end page was shown.")
    skips_done = models.PositiveIntegerField(
        default=0, help_text="Pairs skipped or flagged when the end page was shown."
    )
    consented_at = models.DateTimeField(
        null=True, blank=True, help_text="When the participant agreed to the link's consent text."
    )
    pre_answered_at = models.DateTimeField(
        null=True, blank=True, help_text="When the participant sent the link's questions asked before rating."
    )
    post_answered_at = models.DateTimeField(
        null=True, blank=True, help_text="When the participant sent the link's questions asked after rating."
    )
    outcome = models.CharField(
        max_length=20,
        choices=ParticipantOutcome.choices,
        blank=True,
        help_text="How the run ended (which code, if any, was shown); empty while it goes on.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["link", "external_id"], name="participant_once_per_link"),
            models.UniqueConstraint(fields=["link", "user"], name="participant_user_once_per_link"),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True, outcome="") | (Q(finished_at__isnull=False) & ~Q(outcome="")),
                name="participant_outcome_when_finished",
            ),
        ]
        indexes = [models.Index(fields=["user", "finished_at"], name="participant_user_idx")]

    def __str__(self) -> str:
        return f"participant {self.user_id} of link {self.link_id}"


class ParticipantSignup(models.Model):
    """One participant account a campaign link made: what the rate limits of new accounts
    count (annotation.people.crowd.signup_limits). The client's address is kept only as a
    keyed hash, and rows older than the longest window are deleted as new ones come in."""

    link = models.ForeignKey(CampaignLink, on_delete=models.CASCADE, related_name="signups")
    address_key = models.CharField(
        max_length=64,
        blank=True,
        help_text="HMAC-SHA256 (hex, keyed by SECRET_KEY) of the client's address; empty: no web request.",
    )
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["address_key", "created_at"], name="signup_address_idx"),
            models.Index(fields=["link", "created_at"], name="signup_link_idx"),
            models.Index(fields=["created_at"], name="signup_created_idx"),
        ]

    def __str__(self) -> str:
        return f"signup through link {self.link_id} at {self.created_at:%Y-%m-%d %H:%M}"
