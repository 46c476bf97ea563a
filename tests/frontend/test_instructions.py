"""The instruction texts, checked without a database, and as the task and quiz pages show them."""

import re

import pytest

from frontend.instructions import INSTRUCTIONS, LEVEL_NAMES, levels_for, review_levels


@pytest.mark.parametrize("kind", sorted(INSTRUCTIONS))
def test_instructions_describe_a_horizontal_slider(kind):
    """The slider runs left to right: no text may send the rater up or down it."""
    points = INSTRUCTIONS[kind]["points"]
    text = " ".join([INSTRUCTIONS[kind]["task"], *(p.text for p in points), *(p.touch for p in points)])
    assert not re.search(r"\b(top|bottom|above|below|up|down)\b", text, re.IGNORECASE), text


def test_sits_instructions_name_the_ends_of_the_slider():
    text = " ".join(p.text for p in INSTRUCTIONS["SITS"]["points"])
    assert "right end" in text and "left end" in text


@pytest.mark.parametrize("kind", sorted(INSTRUCTIONS))
def test_level_texts_carry_no_digits(kind):
    for level in review_levels() if kind == "REV" else levels_for(kind):
        assert level["name"] in LEVEL_NAMES
        assert not re.search(r"\d", level["name"] + level["detail"])


@pytest.mark.parametrize("kind", sorted(INSTRUCTIONS))
def test_touch_wording_never_asks_to_hover_or_click(kind):
    """Nothing hovers on a touch screen: a point that says so has a touch wording."""
    for point in INSTRUCTIONS[kind]["points"]:
        shown_on_touch = point.touch or point.text
        assert not re.search(r"\b(hover|click)", shown_on_touch, re.IGNORECASE), shown_on_touch
    assert any("Tap a level name" in p.touch for p in INSTRUCTIONS["SITS"]["points"])


@pytest.mark.parametrize("kind", sorted(INSTRUCTIONS))
def test_skip_and_flag_are_named_only_in_task_only_points(kind):
    """The quiz has no Skip or Flag: the points naming them are left out there."""
    for point in INSTRUCTIONS[kind]["points"]:
        names_them = bool(re.search(r"\b(skip|flag)\b", point.text, re.IGNORECASE))
        assert names_them == point.task_only, point.text


@pytest.mark.django_db
def test_the_quiz_page_leaves_out_skip_and_flag_and_the_task_page_keeps_them(demo):
    """Through the pages: the quiz has no Skip or Flag, so its instructions do not name them."""
    from django.test import Client

    from tests.frontend.crowd_setup import sis_quiz
    from tests.frontend.rating_setup import rater

    newcomer = rater("rater2")
    newcomer.qualifications.filter(kind="SIS").delete()
    sis_quiz(demo)
    client = Client()
    client.force_login(newcomer)
    quiz = client.get("/rate/demo/sis/").content.decode()
    assert "quiz-intro" in quiz and 'id="skip"' not in quiz
    assert "Skip a pair" not in quiz
    task = client.get("/rate/demo/sts/").content.decode()
    assert 'id="skip"' in task and "Skip a pair you cannot judge" in task
