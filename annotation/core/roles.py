"""Roles are Django groups: rater, admin, researcher, participant. Staff users count as
admins. A participant (an account a campaign link made) rates like a rater, through
``may_rate`` and ``IsRater``, and is never an admin or a researcher."""

from rest_framework.permissions import BasePermission

RATER = "rater"
ADMIN = "admin"
RESEARCHER = "researcher"
# Crowd-platform participants (annotation.people.crowd): accounts a campaign link made. They
# are not in the rater group, so nothing that lists or manages raters takes them in.
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


def may_rate(user) -> bool:
    """Whether the user may use the rater-facing pages and APIs (rating, quiz): raters
    and crowd participants. What they may rate is the rating policy's question."""
    return has_role(user, RATER) or has_role(user, PARTICIPANT)


class IsTeamMember(BasePermission):
    """Raters, researchers and admins: the people of the lab. A crowd participant sees
    their own study's pages only, never the lab's lists."""

    message = "Participants of a study see their study only."

    def has_permission(self, request, view) -> bool:
        return any(has_role(request.user, role) for role in (RATER, RESEARCHER, ADMIN))


class IsAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, ADMIN)


class IsResearcher(BasePermission):
    message = "Only researchers (or admins) may do this."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, RESEARCHER) or has_role(request.user, ADMIN)


class IsRater(BasePermission):
    """Raters and crowd participants (``may_rate``)."""

    message = "Only raters may do this."

    def has_permission(self, request, view) -> bool:
        return may_rate(request.user)
