"""Serializer fields shared by the API modules."""

import copy
import functools
import hashlib

from django.conf import settings
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.core.opaque_ids import ID_LIMIT, OpaqueIds
from annotation.runs.lifecycle import RunKind, run_is_stale

# The ids a rater receives and sends (annotation.core.opaque_ids): rating slots (gold leases
# among them), pairs (gold pairs among them), ratings (gold ratings among them), flags.
# "review": a failure to review's slot or gold lease, which only the review endpoints take
# (a review's marks are stored with its score, so the plain submit must not find it).
RATER_ID_KINDS = ("slot", "pair", "rating", "flag", "question", "review")
OPAQUE_ID_PATTERN = r"^[0-9]{1,19}$"


class SharedFieldsMixin:
    """For the serializers of the rating cycle, on every request: each instance takes a
    shallow copy of every declared field, where DRF re-instantiates each one (a deep copy,
    so that an instance may change its fields alone; these never do). A field holds no
    request's state until bound, and binding sets attributes of the copy only; what the
    copies share (validators, choices) is only read. Profiled: the deep copies were an
    eighth of the web process's CPU per claim and submit."""

    def get_fields(self):
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}


# Unbound: it only formats; for what datetime_text does not take.
_DATETIME = serializers.DateTimeField()


def datetime_text(value, answer_tz=None) -> str:
    """What DRF's DateTimeField answers for ``value`` (ISO 8601 in the current time zone,
    "Z" for UTC). ``answer_tz``: that zone, when the caller looked it up once for its
    whole answer (``timezone.get_current_timezone()``): the lookup was most of the
    field's cost, four times per rated item. A naive value goes to the field itself."""
    if timezone.is_naive(value):
        return _DATETIME.to_representation(value)
    text = value.astimezone(answer_tz or timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


@functools.cache
def _rater_ids(secret_key: str) -> OpaqueIds:
    # A salt, not a module path: changing it changes every id raters hold (open pages,
    # API clients' slot ids, cursors), so it stays as it was when the ids were first made.
    key = hashlib.sha256(b"annotation.opaque_ids\0" + secret_key.encode()).digest()
    return OpaqueIds(key, RATER_ID_KINDS)


def rater_ids() -> OpaqueIds:
    """The permutation of the ids raters see, keyed by the settings' SECRET_KEY (so a
    rater's ids stay valid across restarts and workers, and change with the key)."""
    return _rater_ids(settings.SECRET_KEY)


def rater_id_decode(kind: str, text: str) -> int | None:
    """The database id of an opaque id a rater sent (digits), or None when it is no id."""
    if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) >= ID_LIMIT:
        return None
    return rater_ids().decode(kind, int(text))


@extend_schema_field({"type": "string", "pattern": OPAQUE_ID_PATTERN, "description": "An opaque id."})
class OpaqueIdField(serializers.Field):
    """A database id as the rater sees it: the decimal digits of its opaque id, a string
    (63-bit values are beyond the whole numbers a JavaScript number holds exactly).
    Written: the opaque id; read: the database id, or invalid."""

    default_error_messages = {"invalid": "Not an id of this kind: send the id as the API gave it."}

    def __init__(self, id_kind: str, **kwargs):
        if id_kind not in RATER_ID_KINDS:
            raise ValueError(f"unknown id kind {id_kind!r}")
        self.id_kind = id_kind
        super().__init__(**kwargs)

    def to_representation(self, value) -> str:
        return str(rater_ids().encode(self.id_kind, value))

    def to_internal_value(self, data) -> int:
        decoded = rater_id_decode(self.id_kind, data) if isinstance(data, str) else None
        if decoded is None:
            self.fail("invalid")
        return decoded


class StrictFloatField(serializers.FloatField):
    """A JSON number: strings and booleans are refused rather than converted."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON whole number: strings, booleans and fractions are refused."""

    def to_internal_value(self, data):
        if (
            isinstance(data, bool)
            or not isinstance(data, int | float)
            or (isinstance(data, float) and not data.is_integer())
        ):
            self.fail("invalid")
        return super().to_internal_value(int(data))


@extend_schema_field(OpenApiTypes.BOOL)
class StaleRunField(serializers.Field):
    """Read only: the run (job, sampling batch) is marked running but the process running
    it is gone. Reads never write; the beat task or the next start marks it failed."""

    def __init__(self, run_kind: RunKind, **kwargs):
        self.run_kind = run_kind
        kwargs.setdefault(
            "help_text",
            "Marked running, but the process running it is gone (the beat task or the next start marks it failed).",
        )
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, run) -> bool:
        return run_is_stale(self.run_kind, run)
