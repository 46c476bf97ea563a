"""Serializer fields shared by the API modules."""

from rest_framework import serializers


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
