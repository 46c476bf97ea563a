"""``<id:...>`` in URL patterns: a database id, a whole number of at most 64 bits.

Django's ``<int:...>`` takes any number of digits, and an id beyond PostgreSQL's bigint
reached the database (a 500 from the queue's raw SQL). With this converter such a URL
matches nothing and is a 404, like any other unknown id. Importing this module
registers it; the URL modules that use it import it.
"""

from django.urls import register_converter

from annotation.inputs import BIGINT_MAX


class DatabaseIdConverter:
    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > BIGINT_MAX:
            raise ValueError(f"{value} is beyond the largest id, {BIGINT_MAX}")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(DatabaseIdConverter, "id")
