"""The sign-in settings, from the environment (config/settings.py takes them in): password
rules, password guessing (django-axes), the client's address behind a reverse proxy, the
limits on new crowd participant accounts, and how long API tokens and invitation links
last. A value out of its range stops start-up with a message naming the variable."""

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from config.environment import env, int_at_least

__all__ = [
    "API_TOKEN_TTL_HOURS",
    "AUTHENTICATION_BACKENDS",
    "AUTH_PASSWORD_VALIDATORS",
    "AXES_CLIENT_IP_CALLABLE",
    "AXES_COOLOFF_MINUTES",
    "AXES_COOLOFF_TIME",
    "AXES_FAILURE_LIMIT",
    "AXES_HANDLER",
    "AXES_LOCKOUT_CALLABLE",
    "AXES_LOCKOUT_PARAMETERS",
    "AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT",
    "AXES_RESET_ON_SUCCESS",
    "CLIENT_IP_HEADER",
    "CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES",
    "CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES",
    "CROWD_NEW_PARTICIPANTS_PER_ADDRESS",
    "CROWD_NEW_PARTICIPANTS_PER_LINK",
    "INVITATION_DOWNLOAD_TTL_MINUTES",
    "INVITATION_TTL_HOURS",
    "REST_KNOX",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Password guessing (django-axes, attempts in the database in both run modes). The axes
# backend comes first so a locked-out attempt is refused before the password is checked,
# the right password included.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = int_at_least("AXES_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_MINUTES = int_at_least("AXES_COOLOFF_MINUTES", 15, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=AXES_COOLOFF_MINUTES)
# Per username and address together: guesses at someone's password from one address
# lock out that address for that account only, so nobody can lock all raters out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# A locked-out attempt does not restart the cool-off, so "try again in N minutes" holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "frontend.lockout.lockout_response"
# Behind a reverse proxy every request comes from the proxy's address: name the header
# in which the proxy passes the client's address (e.g. HTTP_X_REAL_IP).
CLIENT_IP_HEADER = env.str("CLIENT_IP_HEADER", default="")
if CLIENT_IP_HEADER and not CLIENT_IP_HEADER.startswith("HTTP_"):
    raise ImproperlyConfigured(
        f"CLIENT_IP_HEADER names a request.META key such as HTTP_X_REAL_IP, got {CLIENT_IP_HEADER!r}"
    )
# None: axes' own default, the request's REMOTE_ADDR.
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip" if CLIENT_IP_HEADER else None

# New crowd participant accounts (annotation.people.crowd.signup_limits): at most so many
# per client address and per campaign link in a sliding window; a participant coming back
# is never counted. Behind a proxy the address is CLIENT_IP_HEADER's, else every new
# participant would seem to come from the proxy.
CROWD_NEW_PARTICIPANTS_PER_ADDRESS = int_at_least("CROWD_NEW_PARTICIPANTS_PER_ADDRESS", 3, minimum=1)
CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES = int_at_least(
    "CROWD_NEW_PARTICIPANTS_ADDRESS_WINDOW_MINUTES", 24 * 60, minimum=1
)
CROWD_NEW_PARTICIPANTS_PER_LINK = int_at_least("CROWD_NEW_PARTICIPANTS_PER_LINK", 500, minimum=1)
CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES = int_at_least("CROWD_NEW_PARTICIPANTS_LINK_WINDOW_MINUTES", 60, minimum=1)

# API tokens (django-rest-knox): stored as SHA-512 digests, each with its expiry.
API_TOKEN_TTL_HOURS = int_at_least("API_TOKEN_TTL_HOURS", 30 * 24, minimum=1)
# How long a rater's invitation link (set your password) stays valid.
INVITATION_TTL_HOURS = int_at_least("INVITATION_TTL_HOURS", 7 * 24, minimum=1)
# How long the one-time CSV download of a bulk add's invitation links stays open.
INVITATION_DOWNLOAD_TTL_MINUTES = int_at_least("INVITATION_DOWNLOAD_TTL_MINUTES", 60, minimum=1)
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=API_TOKEN_TTL_HOURS),
    "AUTH_HEADER_PREFIX": "Token",
    # A fixed expiry: renewing on use would write a row on the rating queue's hot path.
    "AUTO_REFRESH": False,
}
