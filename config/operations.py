"""The operator's settings, from the environment (config/settings.py takes them in): the
Prometheus endpoint (on or off, who may read it, the folder its worker processes share)
and the log format. A value that cannot be used stops start-up with a message naming the
variable; the endpoint is off unless METRICS_ENABLED says otherwise, and once on it is
never open to all: it needs a bearer token, an address allow list, or both."""

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

from config.environment import env, flag

__all__ = [
    "LOG_FORMAT",
    "METRICS_ALLOWED_NETWORKS",
    "METRICS_ENABLED",
    "METRICS_MULTIPROC_DIR",
    "METRICS_TOKEN",
]

LOG_FORMATS = ("plain", "json")
# A token shorter than this is guessable at a scrape a second (secrets.token_urlsafe(32)
# gives 43 characters).
METRICS_TOKEN_MIN_CHARS = 32


def _networks(name: str) -> tuple:
    """The comma-separated addresses or networks (CIDR) of ``name``; a bad one stops start-up."""
    found = []
    for part in env.list(name, default=[]):
        try:
            found.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must list addresses or networks (as 10.0.0.0/8,127.0.0.1), got {part!r}"
            ) from None
    return tuple(found)


def _log_format() -> str:
    value = env.str("LOG_FORMAT", default="plain").strip().lower()
    if value not in LOG_FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {value!r}")
    return value


METRICS_ENABLED = flag("METRICS_ENABLED", False)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = _networks("METRICS_ALLOWED_NETWORKS")
# prometheus-client's own variable: every process that counts writes its figures there
# (web workers, Celery's worker processes) and the endpoint sums them. Unset, a process
# counts in its memory alone (runserver, a single process).
METRICS_MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
LOG_FORMAT = _log_format()


def metrics_problem(*, enabled: bool, token: str, networks: tuple, folder: str) -> str | None:
    """What stops the start in these metrics settings, or None."""
    if token and len(token) < METRICS_TOKEN_MIN_CHARS:
        return f"METRICS_TOKEN must have at least {METRICS_TOKEN_MIN_CHARS} characters"
    if enabled and not (token or networks):
        return (
            "METRICS_ENABLED is true but neither METRICS_TOKEN nor METRICS_ALLOWED_NETWORKS is set: "
            "the metrics endpoint is never open to all"
        )
    if folder:
        try:
            os.makedirs(folder, exist_ok=True)  # the web server or the worker, whichever starts first
        except OSError as problem:
            return f"PROMETHEUS_MULTIPROC_DIR {folder!r} cannot be used as a folder: {problem}"
    return None


_problem = metrics_problem(
    enabled=METRICS_ENABLED, token=METRICS_TOKEN, networks=METRICS_ALLOWED_NETWORKS, folder=METRICS_MULTIPROC_DIR
)
if _problem:
    raise ImproperlyConfigured(_problem)
