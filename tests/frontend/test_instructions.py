"""The instruction texts, checked without a database."""

import re

import pytest

from frontend.instructions import INSTRUCTIONS, LEVEL_NAMES, levels_for


@pytest.mark.parametrize("kind", sorted(INSTRUCTIONS))
def test_instructions_describe_a_horizontal_slider(kind):
    """The slider runs left to right: no text may send the rater up or down it."""
    text = " ".join([INSTRUCTIONS[kind]["task"], *INSTRUCTIONS[kind]["points"]])
    assert not re.search(r"\b(top|bottom|above|below|up|down)\b", text, re.IGNORECASE), text


def test_sits_instructions_name_the_ends_of_the_slider():
    text = " ".join(INSTRUCTIONS["SITS"]["points"])
    assert "right end" in text and "left end" in text


@pytest.mark.parametrize("kind", sorted(INSTRUCTIONS))
def test_level_texts_carry_no_digits(kind):
    for level in levels_for(kind):
        assert level["name"] in LEVEL_NAMES
        assert not re.search(r"\d", level["name"] + level["detail"])
