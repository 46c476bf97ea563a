"""Crowd-platform campaign links in the admin: make a link for a dataset and kinds (the
token is drawn by the service, never typed), copy its study URL, read its participants'
numbers (started, finished, median time, ratings); and the participants themselves, with
their external ids and how each run ended, to approve or reject them on the platform."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from annotation.admin.inlines import LabelledTabularInline
from annotation.models import CampaignLink, Participant, ParticipantAnswer, StudyQuestion, TaskKind
from annotation.people.crowd.links import (
    CampaignLinkError,
    campaign_link_check,
    campaign_link_quiz_check,
    campaign_link_quota_check,
    link_stats,
    new_link_token,
    study_url,
)
from annotation.people.crowd.questions import QuestionInvalid, question_check


class CampaignLinkForm(forms.ModelForm):
    kinds = forms.MultipleChoiceField(
        choices=TaskKind.choices, widget=forms.CheckboxSelectMultiple, help_text="The task kinds participants rate."
    )

    keep_quota = forms.BooleanField(
        required=False,
        label="Keep a quota over the pairs left",
        help_text="The form refuses a quota larger than the items a participant can rate of the link's kinds now "
        "(every participant would run out of pairs and end with the partial code, or none), and says how many "
        "that is. Tick to save such a quota anyway.",
    )
    return_url = forms.URLField(
        required=False,
        max_length=1000,
        assume_scheme="https",
        help_text=CampaignLink._meta.get_field("return_url").help_text,
    )
    leave_url = forms.URLField(
        required=False,
        max_length=1000,
        assume_scheme="https",
        help_text=CampaignLink._meta.get_field("leave_url").help_text,
    )

    class Meta:
        model = CampaignLink
        fields = [
            "name",
            "dataset",
            "kinds",
            "quota",
            "keep_quota",
            "completion_code",
            "partial_code",
            "screenout_code",
            "return_url",
            "leave_url",
            "id_param",
            "id_pattern",
            "consent_text",
            "max_participants",
            "expires_at",
            "active",
        ]

    def clean(self):
        data = super().clean()
        for field in ("completion_code", "partial_code", "screenout_code"):
            if field in data:
                data[field] = (data[field] or "").strip()
        self._checked(
            campaign_link_check,
            kinds=data.get("kinds") or [],
            quota=data.get("quota"),
            completion_code=data.get("completion_code") or "",
            partial_code=data.get("partial_code") or "",
            screenout_code=data.get("screenout_code") or "",
            return_url=data.get("return_url") or "",
            leave_url=data.get("leave_url") or "",
            id_param=data.get("id_param") or "",
            id_pattern=(data.get("id_pattern") or "").strip(),
        )
        # A link saved again with its kinds as they were keeps its participants going.
        if data.get("dataset") is not None and {"dataset", "kinds"} & set(self.changed_data):
            self._checked(campaign_link_quiz_check, dataset_id=data["dataset"].pk, kinds=data.get("kinds") or [])
        # The quota is named beside any other problem: the admin fixes both in one go.
        if self._quota_to_check(data):
            self._checked(
                campaign_link_quota_check,
                dataset=data["dataset"],
                kinds=data["kinds"],
                quota=data["quota"],
                hint=f"Lower the quota, or tick “{self.fields['keep_quota'].label}” to save it anyway.",
            )
        return data

    def _checked(self, check, *, hint: str = "", **values) -> None:
        """Run ``check``; a CampaignLinkError (and ``hint``, what to do about it) goes on
        its field where the check knows it (the id pattern, the kinds, the quota, the
        screen-out code), else on the form."""
        try:
            check(**values)
        except CampaignLinkError as problem:
            text = f"{problem} {hint}" if hint else str(problem)
            self.add_error(problem.field if problem.field in self.fields else None, text)

    def _quota_to_check(self, data: dict) -> bool:
        """Whether to hold the quota against the pairs left: a new or changed quota, kinds
        or dataset, not confirmed by the admin (a link saved again as it was is not
        refused for pairs its participants have rated since)."""
        if data.get("keep_quota") or data.get("dataset") is None or not data.get("kinds") or not data.get("quota"):
            return False
        return bool({"dataset", "kinds", "quota"} & set(self.changed_data))


class StudyQuestionForm(forms.ModelForm):
    """A question as the admin writes it: the options one per line."""

    options_text = forms.CharField(
        label="options",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 30}),
        help_text="One per line, for a choice question; empty for free text.",
    )

    class Meta:
        model = StudyQuestion
        fields = ["phase", "position", "prompt", "answer_type", "options_text", "required"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["options_text"].initial = "\n".join(self.instance.options)

    def clean(self):
        data = super().clean()
        lines = [line for line in (data.get("options_text") or "").splitlines() if line.strip()]
        try:
            self.instance.options = question_check(
                prompt=data.get("prompt") or "", answer_type=data.get("answer_type") or "", options=lines
            )
        except QuestionInvalid as problem:
            raise ValidationError(str(problem)) from None
        return data


class StudyQuestionInline(LabelledTabularInline):
    """The link's short questions: "before rating" ones after the consent text, "after
    rating" ones before the end page; free text or one of the options."""

    model = StudyQuestion
    form = StudyQuestionForm
    extra = 0
    verbose_name = "question for the participants"
    verbose_name_plural = "questions for the participants (asked before or after rating)"


class ParticipantInline(admin.TabularInline):
    model = Participant
    extra = 0
    can_delete = False
    fields = ["external_id", "user", "study_id", "started_at", "finished_at", "outcome", "items_done", "skips_done"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(CampaignLink)
class CampaignLinkAdmin(admin.ModelAdmin):
    form = CampaignLinkForm
    list_display = [
        "name",
        "dataset",
        "kinds_text",
        "quota",
        "started",
        "finished",
        "median_minutes",
        "ratings",
        "active",
    ]
    list_filter = ["dataset", "active"]
    readonly_fields = ["link_for_the_platform", "participants_csv", "created_by", "created_at"]
    inlines = [StudyQuestionInline, ParticipantInline]

    def get_fields(self, request, obj=None):
        fields = list(CampaignLinkForm.Meta.fields)
        return (
            fields
            if obj is None
            else ["link_for_the_platform", "participants_csv", *fields, "created_by", "created_at"]
        )

    def get_inlines(self, request, obj):
        # No empty participants table before anyone joined (on a phone it would be a
        # scrolling box with nothing in it to reach by keyboard).
        joined = obj is not None and obj.participants.exists()
        return self.inlines if joined else [StudyQuestionInline]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.token = new_link_token()
            obj.created_by = request.user
            obj.created_at = timezone.now()
        obj.kinds = sorted(form.cleaned_data["kinds"])
        super().save_model(request, obj, form, change)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("dataset")

    @admin.display(description="study URL (paste it into the platform)")
    def link_for_the_platform(self, link: CampaignLink) -> str:
        return study_url(link, self._base_url)

    @admin.display(description="participants (CSV)")
    def participants_csv(self, link: CampaignLink) -> str:
        """Download link of the participants CSV (the API's, answered by the session)."""
        url = reverse("campaign-link-participants", args=[link.dataset.name, link.pk])
        return format_html(
            '<a href="{}" download>Download the participants CSV</a> (external id, status, items, gold error, '
            "seconds per item, share under the speed floor, flagged): to approve or reject on the platform.",
            url,
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        self._base_url = request.build_absolute_uri("/")
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description="kinds")
    def kinds_text(self, link: CampaignLink) -> str:
        return ", ".join(link.kinds)

    def _stats(self, link: CampaignLink):
        # One computation per row and request: the four columns share it.
        cache = getattr(self, "_stats_cache", {})
        if link.pk not in cache:
            cache[link.pk] = link_stats(link)
            self._stats_cache = cache
        return cache[link.pk]

    def changelist_view(self, request, extra_context=None):
        self._stats_cache = {}
        return super().changelist_view(request, extra_context)

    @admin.display(description="started")
    def started(self, link: CampaignLink) -> int:
        return self._stats(link).started

    @admin.display(description="finished")
    def finished(self, link: CampaignLink) -> int:
        return self._stats(link).finished

    @admin.display(description="median minutes")
    def median_minutes(self, link: CampaignLink) -> str:
        minutes = self._stats(link).median_minutes
        return "—" if minutes is None else f"{minutes:.1f}"

    @admin.display(description="ratings")
    def ratings(self, link: CampaignLink) -> int:
        return self._stats(link).ratings


class ParticipantAnswerInline(admin.TabularInline):
    """The participant's answers to their link's questions (read only)."""

    model = ParticipantAnswer
    extra = 0
    can_delete = False
    fields = ["question", "answer", "answered_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    """Every participant of every link: read only (a link makes them), filtered by link
    and outcome, searched by external id, as a platform's approve/reject list needs."""

    list_display = [
        "external_id",
        "link",
        "study_id",
        "started_at",
        "finished_at",
        "outcome",
        "items_done",
        "skips_done",
    ]
    list_filter = ["link", "outcome"]
    search_fields = ["external_id", "study_id", "session_id"]
    readonly_fields = [
        "link",
        "user",
        "external_id",
        "study_id",
        "session_id",
        "started_at",
        "finished_at",
        "outcome",
        "items_done",
        "skips_done",
        "consented_at",
        "pre_answered_at",
        "post_answered_at",
    ]
    fields = readonly_fields
    inlines = [ParticipantAnswerInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("link", "user")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
