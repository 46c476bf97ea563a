"""The failure review's worked examples: each is a review the API would store (known
marks, a fair alternative alone), its slider goes near a named level of the scale, every
mark is shown ticked by one of them, and none carries a digit (the slider never shows a
number, nor do its examples). No database."""

import pytest

from annotation.core.cxc import LEVEL_NAMES
from annotation.evaluation.review.marks import MARKS, MarksError, marks_bits
from frontend.review_examples import REVIEW_EXAMPLES, ReviewExample


def test_each_example_is_a_review_the_api_would_store_at_a_named_level():
    for example in REVIEW_EXAMPLES:
        assert marks_bits(example.marks) > 0
        assert example.level in LEVEL_NAMES


def test_every_mark_is_shown_ticked_by_an_example():
    shown = {name for example in REVIEW_EXAMPLES for name in example.marks}
    assert shown == set(MARKS)


def test_no_example_carries_a_digit():
    for example in REVIEW_EXAMPLES:
        texts = [example.query, example.expected, example.retrieved, example.level, example.why, *example.mark_labels]
        assert not [text for text in texts if any(ch.isdigit() for ch in text)], example


@pytest.mark.parametrize(
    ("marks", "level", "problem"),
    [
        (("object_shape",), "Equivalent", MarksError),
        (("fair_alternative", "size"), "Equivalent", MarksError),
        ((), "Equivalent", ValueError),
        (("size",), "Almost equivalent", ValueError),
    ],
)
def test_an_example_the_api_would_refuse_is_refused_when_written(marks, level, problem):
    with pytest.raises(problem):
        ReviewExample(query="q", expected="e", retrieved="r", marks=marks, level=level, why="w")
