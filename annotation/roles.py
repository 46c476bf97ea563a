"""Roles are Django groups: rater, admin, researcher. Staff users count as admins."""

from rest_framework.permissions import BasePermission

RATER = "rater"
ADMIN = "admin"
RESEARCHER = "researcher"
ROLES = (RATER, ADMIN, RESEARCHER)


def has_role(user, role: str) -> bool:
    if not user or not user.is_authenticated:
        return False
    if role == ADMIN and (user.is_staff or user.is_superuser):
        return True
    return user.groups.filter(name=role).exists()


class IsAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, ADMIN)


class IsResearcher(BasePermission):
    message = "Only researchers (or admins) may do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, RESEARCHER) or has_role(request.user, ADMIN)


class IsRater(BasePermission):
    message = "Only raters may do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, RATER)
