"""Accounts in the admin: raters added in bulk from a CSV (each with an invitation link,
shown once), new invitation links, the kinds a rater is qualified for (an inline and one
action per kind), deactivating users, revoking API tokens. (Single tokens are deleted
under "Knox > Auth tokens"; lockouts are lifted under "Axes > Access attempts".)"""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from annotation.admin.inlines import LabelledTabularInline
from annotation.catalog.upload_limits import limited_upload_view, upload_form_is_valid
from annotation.catalog.uploads import PAIR_LIST
from annotation.core.errors import DomainError
from annotation.core.roles import RATER, has_role
from annotation.models import Qualification, TaskKind
from annotation.people.accounts import tokens_revoke_all, username_holder, username_taken_message
from annotation.people.invitation_csv import invitations_csv_take, raters_add_downloadable
from annotation.people.onboarding import invitation_renew, rater_list_read

User = get_user_model()


class RaterListForm(forms.Form):
    file = forms.FileField(
        label="Rater list (CSV)",
        help_text="Header username,email,kinds; kinds such as 'STS SIS'. One bad row refuses the whole file.",
    )


def _username_free(form, username: str | None) -> str | None:
    """The form's username when no other user holds it in any case (the user table's
    index on lower(username) would refuse it with an error page)."""
    if username:
        holder = username_holder(username)
        if holder is not None and (form.instance.pk is None or holder != form.instance.get_username()):
            raise forms.ValidationError(username_taken_message(username, holder))
    return username


class UserAddForm(AdminUserCreationForm):
    def clean_username(self):
        return _username_free(self, self.cleaned_data.get("username"))


class UserEditForm(UserChangeForm):
    def clean_username(self):
        return _username_free(self, self.cleaned_data.get("username"))


class QualificationInline(LabelledTabularInline):
    """The task kinds this user may be served (only users in the rater group)."""

    model = Qualification
    fk_name = "rater"
    extra = 0
    fields = ["kind", "dataset", "granted_at"]
    readonly_fields = ["granted_at"]
    verbose_name = "qualification (a task kind this rater may rate; no dataset: in every dataset)"
    verbose_name_plural = "qualifications (task kinds this rater may rate; no dataset: in every dataset)"


def _qualify_action(kind: str):
    def qualify(modeladmin, request, queryset):
        raters = [user for user in queryset if has_role(user, RATER)]
        # An admin's grant holds in every dataset (no dataset on the row).
        Qualification.objects.bulk_create([Qualification(rater=u, kind=kind) for u in raters], ignore_conflicts=True)
        skipped = queryset.count() - len(raters)
        note = f"; {skipped} not in the rater group skipped" if skipped else ""
        modeladmin.message_user(
            request, f"{len(raters)} rater(s) qualified for {kind} in every dataset{note}.", messages.SUCCESS
        )

    qualify.__name__ = f"qualify_{kind.lower()}"
    return admin.action(description=f"Qualify the selected raters for {TaskKind(kind).label}")(qualify)


class AccountUserAdmin(UserAdmin):
    add_form = UserAddForm
    form = UserEditForm
    actions = [
        "deactivate",
        *(_qualify_action(kind) for kind in TaskKind.values),
        "new_invitations",
        "revoke_api_tokens",
    ]
    list_display = [*UserAdmin.list_display, "is_active", "kinds"]
    inlines = [*UserAdmin.inlines, QualificationInline]
    # The browser's own multiple selects, labelled: Django's two-box filter widget puts an
    # aria-label on a bare span, which assistive technology may ignore (WCAG 4.1.2).
    filter_horizontal = ()

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("qualifications__dataset")

    @admin.display(description="qualified for")
    def kinds(self, user) -> str:
        """``STS`` for a grant in every dataset, ``SIS (name)`` for one in a dataset."""
        grants = sorted(
            q.kind if q.dataset is None else f"{q.kind} ({q.dataset.name})" for q in user.qualifications.all()
        )
        return " ".join(grants) or "—"

    def get_urls(self):
        view = self.admin_site.admin_view(limited_upload_view(self.add_raters, {"file": PAIR_LIST}))
        download = self.admin_site.admin_view(require_POST(self.invitations_csv))
        return [
            path("add-raters/", view, name="auth_user_add_raters"),
            path("add-raters/download/<str:token>/", download, name="auth_user_invitations_csv"),
            *super().get_urls(),
        ]

    def add_raters(self, request):
        """Upload a rater list; the result page shows each new rater's invitation link."""
        form = RaterListForm(request.POST or None, request.FILES or None)
        added = None
        if request.method == "POST" and upload_form_is_valid(request, form):
            try:
                upload = form.cleaned_data["file"]
                rows = rater_list_read(upload, name=upload.name or "raters.csv")
                added = raters_add_downloadable(rows=rows, created_by=request.user)
            except DomainError as problem:
                form.add_error("file", str(problem))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Add raters from a CSV file",
            "form": form,
            "invited": [_invited_row(request, rater) for rater in added.invited] if added else [],
            "download": (
                {
                    "url": reverse("admin:auth_user_invitations_csv", args=[added.download_token]),
                    "expires_at": added.download_expires_at,
                }
                if added
                else None
            ),
        }
        return TemplateResponse(request, "admin/auth/user/add_raters.html", context)

    def invitations_csv(self, request, token: str):
        """The bulk add's invitation links as CSV, once (a POST: a prefetch must not use
        it up); afterwards, or once expired, a page saying so (410)."""
        try:
            text = invitations_csv_take(
                download_token=token,
                url_of=lambda invitation: request.build_absolute_uri(reverse("invitation", args=[invitation])),
            )
        except DomainError as problem:
            context = {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": "Invitation links: no download",
                "refused": [str(problem)],
            }
            return TemplateResponse(request, "admin/auth/user/add_raters.html", context, status=problem.http_status)
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="invitation-links.csv"'
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Deactivate the selected users (they can no longer sign in; API tokens revoked)")
    def deactivate(self, request, queryset):
        users = list(queryset.exclude(pk=request.user.pk))
        for user in users:
            tokens_revoke_all(user=user)
        queryset.filter(pk__in=[user.pk for user in users]).update(is_active=False)
        note = " (not you: you cannot deactivate yourself)" if len(users) < queryset.count() else ""
        self.message_user(request, f"Deactivated {len(users)} user(s){note}.", messages.SUCCESS)

    @admin.action(description="Make new invitation links for the selected users without a password")
    def new_invitations(self, request, queryset):
        links, refused = [], []
        for user in queryset:
            try:
                links.append(_invited_row(request, invitation_renew(user=user, created_by=request.user)))
            except DomainError as problem:
                refused.append(str(problem))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "New invitation links",
            "invited": links,
            "refused": refused,
        }
        return TemplateResponse(request, "admin/auth/user/add_raters.html", context)

    @admin.action(description="Revoke all API tokens of the selected users")
    def revoke_api_tokens(self, request, queryset):
        revoked = sum(tokens_revoke_all(user=user) for user in queryset)
        self.message_user(request, f"Revoked {revoked} API token(s) of {queryset.count()} user(s).", messages.SUCCESS)


def _invited_row(request, rater) -> dict:
    return {
        "username": rater.username,
        "kinds": " ".join(rater.kinds),
        "url": request.build_absolute_uri(reverse("invitation", args=[rater.token])),
        "expires_at": rater.expires_at,
    }


admin.site.unregister(User)
admin.site.register(User, AccountUserAdmin)
