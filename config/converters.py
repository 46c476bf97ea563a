"""Path converters of the API's URL patterns.

``<id:...>``: a database id, a whole number of at most 64 bits. Django's ``<int:...>``
takes any number of digits, and an id beyond PostgreSQL's bigint reached the database (a
500 from the queue's raw SQL). With this converter such a URL matches nothing and is a
404, like any other unknown id.

``<slot_ref:...>``: a rating slot (or gold lease) as the rater knows it, its opaque id
(annotation.core.opaque_ids): the view gets the database id, ``reverse`` writes the opaque
one. A number that is no opaque id matches nothing (404).

Importing this module registers both; the URL modules that use them import it.
"""

from django.urls import register_converter

from annotation.apis.fields import rater_id_decode, rater_ids
from annotation.core.inputs import BIGINT_MAX


class DatabaseIdConverter:
    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > BIGINT_MAX:
            raise ValueError(f"{value} is beyond the largest id, {BIGINT_MAX}")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


class SlotRefConverter:
    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        slot_id = rater_id_decode("slot", value)
        if slot_id is None:
            raise ValueError(f"{value} is no rating slot id")
        return slot_id

    def to_url(self, value: int) -> str:
        return str(rater_ids().encode("slot", value))


class ReviewRefConverter(SlotRefConverter):
    """``<review_ref:...>``: a review's slot (or gold lease) as its rater knows it: an
    opaque id of its own kind, so no rating endpoint takes it, nor a review one a slot's."""

    def to_python(self, value: str) -> int:
        slot_id = rater_id_decode("review", value)
        if slot_id is None:
            raise ValueError(f"{value} is no review id")
        return slot_id

    def to_url(self, value: int) -> str:
        return str(rater_ids().encode("review", value))


register_converter(DatabaseIdConverter, "id")
register_converter(ReviewRefConverter, "review_ref")
register_converter(SlotRefConverter, "slot_ref")
