"""The failure review's worked examples: each must be a review the API would store (known
marks, a fair alternative alone) at a named level of the scale, every mark is shown
ticked by one of them, and none carries a digit (the slider never shows a
number, nor do its examples). No database."""

import pytest

from annotation.evaluation.review.marks import MARKS
from frontend.review_examples import REVIEW_EXAMPLES, ReviewExample


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
        (("object_shape",), "Equivalent", "unknown mark 'object_shape'"),
        (("fair_alternative", "size"), "Equivalent", "a fair alternative misreads nothing"),
        ((), "Equivalent", "an example ticks at least one mark"),
        (("size",), "Almost equivalent", "'Almost equivalent' is not a level of the scale"),
    ],
)
def test_an_example_the_api_would_refuse_is_refused_when_written(marks, level, problem):
    """Checked when the module is read, so a bad example stops the app's start."""
    with pytest.raises(ValueError, match=problem):
        ReviewExample(query="q", expected="e", retrieved="r", marks=marks, level=level, why="w")
