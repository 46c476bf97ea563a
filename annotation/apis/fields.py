"""Serializer fields shared by the API modules."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.runs import RunKind, run_is_stale


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
