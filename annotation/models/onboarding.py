"""Onboarding raters (issue #16): invitations that let a new rater set their password."""

from django.conf import settings
from django.db import models
from django.db.models import Q


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
