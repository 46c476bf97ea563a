"""Roles are Django groups: rater, admin, researcher. Staff users count as admins."""

from rest_framework.permissions import BasePermission

RATER = "rater"
ADMIN = "admin"
RESEARCHER = "researcher"
# Crowd-platform participants (annotation.crowd): raters who came through a campaign link.
PARTICIPANT = "participant"
ROLES = (RATER, ADMIN, RESEARCHER, PARTICIPANT)


def remember_roles(user, roles) -> None:
    """Attach the user's role names to this user object (for the current request), so
    has_role needs no query; authentication that already read them calls this."""
    user._role_names = frozenset(roles)


def has_role(user, role: str) -> bool:
    if not user or not user.is_authenticated:
        return False
    if role == ADMIN and (user.is_staff or user.is_superuser):
        return True
    names = getattr(user, "_role_names", None)
    if names is None:
        # One query for all roles: a request often checks more than one.
        names = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        remember_roles(user, names)
    return role in names


def user_roles(user) -> list[str]:
    """The role names the user effectively has, sorted: their groups, plus ``admin`` for
    staff and superusers (as ``has_role`` counts them). Researcher permission checks also
    let admins through, but an admin is not listed as a researcher unless in that group."""
    return sorted(role for role in ROLES if has_role(user, role))


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
