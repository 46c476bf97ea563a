"""Exclusions in the admin: exclude a rater's ratings (the add form calls the service,
never ``save()``), read each exclusion's record, undo selected ones; and a user action
that opens the exclusion form for a rater."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from annotation.admin_accounts import AccountUserAdmin
from annotation.errors import DomainError
from annotation.exclusion.services import (
    MAX_REASON,
    rating_exclusion_check,
    rating_exclusion_create,
    rating_exclusion_undo,
)
from annotation.models import ExclusionState, RatingExclusion

User = get_user_model()


class ExclusionForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=MAX_REASON,
        help_text="Kept with every excluded rating and listed (with the rater's pseudonym) in export manifests.",
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
            created_by=request.user,
        )
        obj.pk = created.pk

    def log_addition(self, request, obj, message):
        obj.refresh_from_db()
        return super().log_addition(request, obj, message)

    def response_add(self, request, obj, post_url_continue=None):
        self.message_user(
            request,
            f"Excluding the ratings of {obj.rater}: each affected pair gets a new slot per excluded rating.",
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
