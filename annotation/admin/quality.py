"""Quality control in the admin: gold pairs (retire, serve again), quality settings (an
inline of the dataset page), exclusions and pauses: exclude a rater's ratings (the add form calls the
service, never ``save()``), read each exclusion's record, undo selected ones; a user
action that opens the exclusion form for a rater; pause raters and lift pauses."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from annotation.admin.accounts import AccountUserAdmin
from annotation.admin.gold import GoldPagesMixin
from annotation.core.errors import DomainError
from annotation.models import (
    Dataset,
    ExclusionPause,
    ExclusionState,
    GoldPair,
    QualitySettings,
    RaterPause,
    RatingExclusion,
)
from annotation.quality.exclusion.services import (
    MAX_REASON,
    rating_exclusion_check,
    rating_exclusion_create,
    rating_exclusion_undo,
)
from annotation.quality.pauses import pause_refusal, rater_pause, rater_pause_lift
from annotation.quality.quiz import quiz_pools, quiz_set
from annotation.serving.pauses import is_paused

User = get_user_model()


class ExclusionForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=MAX_REASON,
        help_text="Kept with every excluded rating and listed (with the rater's pseudonym) in export manifests.",
    )
    keep_active = forms.BooleanField(
        required=False,
        label="Keep the rater active",
        help_text="Unticked (the default): the rater is paused in the dataset and claims nothing more there "
        "until the pause is lifted under Rater pauses.",
    )

    class Meta:
        model = RatingExclusion
        fields = ["dataset", "rater", "window_start", "window_end", "reason"]
        help_texts = {
            "window_start": "Empty: from the rater's first rating.",
            "window_end": "Empty: every rating given until now.",
        }

    def _post_clean(self):
        # The service checks the exclusion (and later writes it); the model's own
        # full_clean would ask for what the service fills in (state, created_by ...).
        data = self.cleaned_data
        if self.errors or not all(data.get(name) for name in ("dataset", "rater", "reason")):
            return
        try:
            rating_exclusion_check(
                dataset=data["dataset"],
                rater=data["rater"],
                reason=data["reason"],
                window_start=data.get("window_start"),
                window_end=data.get("window_end"),
                keep_active=data.get("keep_active", False),
                now=timezone.now(),
            )
        except DomainError as error:
            self.add_error(None, ValidationError(str(error)))


@admin.register(RatingExclusion)
class RatingExclusionAdmin(admin.ModelAdmin):
    form = ExclusionForm
    list_display = [
        "id",
        "dataset",
        "rater",
        "state",
        "ratings_excluded",
        "slots_reopened",
        "ratings_restored",
        "ratings_superseded",
        "created_by",
        "created_at",
        "pause",
        "reason",
    ]
    list_filter = ["dataset", "state"]
    search_fields = ["rater__username", "reason"]
    actions = ["undo_exclusions"]
    autocomplete_fields = ["rater"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [field.name for field in RatingExclusion._meta.fields]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the record stays; undo is the way back

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        rater = request.GET.get("rater")
        if rater and rater.isdigit():
            initial["rater"] = int(rater)
        return initial

    def save_model(self, request, obj, form, change):
        if change:
            return
        data = form.cleaned_data
        created = rating_exclusion_create(
            dataset=data["dataset"],
            rater=data["rater"],
            reason=data["reason"],
            window_start=data.get("window_start"),
            window_end=data.get("window_end"),
            keep_active=data.get("keep_active", False),
            created_by=request.user,
        )
        obj.pk = created.pk

    def log_addition(self, request, obj, message):
        obj.refresh_from_db()
        return super().log_addition(request, obj, message)

    def response_add(self, request, obj, post_url_continue=None):
        standing = {
            ExclusionPause.PAUSED: f"{obj.rater} is paused in {obj.dataset} until the pause is lifted",
            ExclusionPause.ALREADY_PAUSED: f"{obj.rater} was paused in {obj.dataset} already and stays paused",
            ExclusionPause.KEPT_ACTIVE: f"{obj.rater} was kept active in {obj.dataset} (not paused)",
        }[obj.pause]
        self.message_user(
            request,
            f"Excluding the ratings of {obj.rater}: each affected pair gets a new slot per excluded rating. "
            f"{standing}.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:annotation_ratingexclusion_changelist"))

    @admin.action(description="Undo the selected exclusions (restores their ratings)")
    def undo_exclusions(self, request, queryset):
        undone = 0
        for exclusion in queryset.filter(state=ExclusionState.APPLIED):
            rating_exclusion_undo(exclusion_id=exclusion.id, undone_by=request.user, reason="undone in the admin")
            undone += 1
        skipped = queryset.count() - undone
        note = f" ({skipped} not applied, left as they are)" if skipped else ""
        self.message_user(request, f"Undoing {undone} exclusion(s){note}.", messages.SUCCESS)


class ExclusionUserAdmin(AccountUserAdmin):
    actions = [*AccountUserAdmin.actions, "exclude_ratings"]

    @admin.action(description="Exclude ratings of the selected rater…")
    def exclude_ratings(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one rater to exclude.", messages.WARNING)
            return None
        url = reverse("admin:annotation_ratingexclusion_add") + f"?rater={queryset.get().pk}"
        return HttpResponseRedirect(url)


admin.site.unregister(User)
admin.site.register(User, ExclusionUserAdmin)


class PauseForm(forms.ModelForm):
    class Meta:
        model = RaterPause
        fields = ["rater", "dataset", "reason"]

    def _post_clean(self):
        # rater_pause writes the row; the model's full_clean would ask for created_at.
        data = self.cleaned_data
        if self.errors:
            return
        if refusal := pause_refusal(data["rater"]):
            self.add_error("rater", ValidationError(str(refusal)))
        elif is_paused(rater=data["rater"], dataset_id=data["dataset"].pk):
            self.add_error(None, ValidationError(f"{data['rater']} is already paused in {data['dataset']}"))


@admin.register(RaterPause)
class RaterPauseAdmin(admin.ModelAdmin):
    """Pause a rater in a dataset (they claim nothing until lifted) and lift pauses."""

    form = PauseForm

    list_display = ["rater", "dataset", "active", "automatic", "reason", "created_by", "created_at", "lifted_by"]
    list_filter = ["dataset", "automatic", ("lifted_at", admin.EmptyFieldListFilter)]
    search_fields = ["rater__username", "reason"]
    autocomplete_fields = ["rater"]
    fields = ["rater", "dataset", "reason"]
    actions = ["lift_pauses"]

    @admin.display(boolean=True, description="active")
    def active(self, pause: RaterPause) -> bool:
        return pause.lifted_at is None

    def get_readonly_fields(self, request, obj=None):
        return (
            [] if obj is None else ["rater", "dataset", "reason", "automatic", "created_at", "lifted_at", "lift_note"]
        )

    def get_fields(self, request, obj=None):
        return self.fields if obj is None else self.get_readonly_fields(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # lifted pauses stay as the record

    def save_model(self, request, obj, form, change):
        if change:
            return
        data = form.cleaned_data
        created = rater_pause(
            rater=data["rater"], dataset=data["dataset"], reason=data["reason"], created_by=request.user
        )
        obj.pk, obj.rater, obj.dataset = created.pk, created.rater, created.dataset

    @admin.action(description="Lift the selected pauses (the raters may rate again)")
    def lift_pauses(self, request, queryset):
        lifted = 0
        for pause in queryset.filter(lifted_at__isnull=True):
            rater_pause_lift(pause_id=pause.pk, lifted_by=request.user, note="lifted in the admin")
            lifted += 1
        self.message_user(request, f"Lifted {lifted} pause(s).", messages.SUCCESS)


@admin.register(GoldPair)
class GoldPairAdmin(GoldPagesMixin, admin.ModelAdmin):
    """Gold pairs: added by upload (with a preview) or promotion on the pages of
    ``GoldPagesMixin`` or the API, put in or out of the quiz, retired or brought back."""

    change_list_template = "admin/annotation/goldpair/change_list.html"

    list_display = [
        "id",
        "dataset",
        "kind",
        "split",
        "gold_score",
        "source",
        "active",
        "in_quiz",
        "ratings",
        "flags",
        "explanation",
    ]
    list_filter = ["dataset", "kind", "source", "active", "in_quiz"]
    search_fields = ["explanation", "caption_a__key", "caption_b__key", "image_a__key", "image_b__key"]
    actions = ["retire", "activate", "quiz_add", "quiz_remove"]
    readonly_fields = [
        field.name for field in GoldPair._meta.fields if field.name not in ("active", "explanation", "in_quiz")
    ]

    def has_add_permission(self, request) -> bool:
        return False  # ids come from the pairs' sequence: "Upload gold CSV" and "Promote" add them

    def changelist_view(self, request, extra_context=None):
        # Where quiz pairs are chosen, say which kinds' quiz pools are too small (on the
        # page itself, not again after an action's redirect).
        if request.method == "GET":
            for text in small_quiz_pools():
                self.message_user(request, text, messages.WARNING)
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request):
        flagged = Count("leases", filter=~Q(leases__flag_reason=""), distinct=True)
        return super().get_queryset(request).annotate(rated=Count("ratings", distinct=True), flagged=flagged)

    @admin.display(description="ratings", ordering="rated")
    def ratings(self, gold: GoldPair) -> int:
        return gold.rated

    @admin.display(description="flags (raters' reports)", ordering="flagged")
    def flags(self, gold: GoldPair) -> int:
        return gold.flagged

    @admin.action(description="Retire the selected gold pairs (no longer served; their ratings stay)")
    def retire(self, request, queryset):
        self.message_user(request, f"Retired {queryset.update(active=False)} gold pair(s).", messages.SUCCESS)

    @admin.action(description="Serve the selected gold pairs again")
    def activate(self, request, queryset):
        self.message_user(request, f"{queryset.update(active=True)} gold pair(s) served again.", messages.SUCCESS)

    @admin.action(description="Ask the selected gold pairs in their kind's qualification quiz")
    def quiz_add(self, request, queryset):
        changed = _quiz_set_selected(queryset, in_quiz=True)
        self.message_user(request, f"{changed} gold pair(s) put in the quiz (no longer served in the queue).")

    @admin.action(description="Take the selected gold pairs out of the quiz (served in the queue again)")
    def quiz_remove(self, request, queryset):
        changed = _quiz_set_selected(queryset, in_quiz=False)
        self.message_user(request, f"{changed} gold pair(s) taken out of the quiz.")


def small_quiz_pools() -> list[str]:
    """One line per dataset and kind whose quiz pool is too small to run (under five times the quiz length)."""
    dataset_ids = GoldPair.objects.filter(in_quiz=True, active=True).values_list("dataset_id", flat=True).distinct()
    names = dict(Dataset.objects.filter(pk__in=dataset_ids).values_list("pk", "name"))
    return [
        f"Dataset {names[dataset_id]}, {pool.describe()}"
        for dataset_id in sorted(names, key=names.get)
        for pool in quiz_pools(dataset_id=dataset_id)
        if pool.too_small
    ]


def _quiz_set_selected(queryset, *, in_quiz: bool) -> int:
    """quiz_set for selected gold pairs of any datasets; how many changed."""
    groups: dict[int, list[int]] = {}
    for pk, dataset_id in queryset.values_list("pk", "dataset_id"):
        groups.setdefault(dataset_id, []).append(pk)
    return sum(
        quiz_set(dataset_id=dataset_id, gold_pair_ids=ids, in_quiz=in_quiz) for dataset_id, ids in groups.items()
    )


class QualitySettingsInline(admin.StackedInline):
    """The dataset's gold rate and automatic pause (defaults while there is no row)."""

    model = QualitySettings
    can_delete = False
    verbose_name = "quality control"
    verbose_name_plural = "quality control settings"
    readonly_fields = ["quiz_pools"]

    @admin.display(description="quiz pools")
    def quiz_pools(self, settings: QualitySettings) -> str:
        """Each kind's quiz pool against quiz_length, saying when one is too small."""
        if settings is None or settings.dataset_id is None:
            return "-"
        pools = quiz_pools(dataset_id=settings.dataset_id)
        return " ".join(pool.describe() for pool in pools) or "No quiz: no gold pair is in a quiz."
