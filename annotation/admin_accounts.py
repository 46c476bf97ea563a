"""Accounts in the admin: revoking a user's API tokens. (Single tokens are deleted under
"Knox > Auth tokens"; lockouts are lifted under "Axes > Access attempts".)"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from annotation.accounts import tokens_revoke_all

User = get_user_model()


class AccountUserAdmin(UserAdmin):
    actions = ["revoke_api_tokens"]

    @admin.action(description="Revoke all API tokens of the selected users")
    def revoke_api_tokens(self, request, queryset):
        revoked = sum(tokens_revoke_all(user=user) for user in queryset)
        self.message_user(request, f"Revoked {revoked} API token(s) of {queryset.count()} user(s).", messages.SUCCESS)


admin.site.unregister(User)
admin.site.register(User, AccountUserAdmin)
