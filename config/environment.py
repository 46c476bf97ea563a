"""Where the settings come from: the process's environment, with the variables of a ``.env``
file at the repository's root beneath it (the environment wins), and the checked reader
the settings modules share. Imported first by every settings module, so the file is read
before any variable is."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
_env_file = BASE_DIR / ".env"
if _env_file.exists():
    environ.Env.read_env(str(_env_file))


def int_at_least(name: str, default: int, *, minimum: int) -> int:
    """An integer setting from the environment; a value below ``minimum`` stops start-up
    with a message naming the variable."""
    value = env.int(name, default=default)
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def flag(name: str, default: bool) -> bool:
    """A true/false setting from the environment. Any other word stops start-up naming the
    variable: ``env.bool`` reads a misspelt ``ture`` as false, and a switch quietly off is
    the fallback an operator never sees."""
    raw = env.str(name, default="").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")
