"""What the rater reads above the pairs, per task kind, in the project's own words."""

from dataclasses import dataclass

# The scale's level names and texts are facts of the task that the quiz API tells raters
# too; they live with the other CxC facts (annotation.core.cxc) and the pages take them here.
from annotation.core.cxc import LEVEL_DETAILS, LEVEL_NAMES, level_name, levels_for  # noqa: F401


@dataclass(frozen=True)
class Point:
    """One point of a task's instructions.

    ``touch``: the wording on a touch screen where it differs (nothing hovers there), shown
    in place of ``text`` by the page's CSS. ``task_only``: the point is about controls only
    the task has (Skip, Flag), so the qualification quiz leaves it out.
    """

    text: str
    touch: str = ""
    task_only: bool = False


INSTRUCTIONS = {
    "STS": {
        "title": "Compare two sentences",
        "task": "How close in meaning are the two sentences?",
        "points": [
            Point("Read both sentences in full before you move the slider."),
            Point("Judge meaning, not wording: two sentences can share few words and still mean the same thing."),
            Point(
                "Count who and what is involved, what happens, and where. Missing or different important details "
                "lower the similarity; small details matter less."
            ),
            Point("The scale is continuous: place the handle anywhere between the levels, wherever the pair belongs."),
            Point(
                "Skip a pair you cannot judge; flag it if something is wrong with it (unreadable, inappropriate).",
                task_only=True,
            ),
        ],
    },
    "SIS": {
        "title": "Compare two pictures",
        "task": "How similar are the scenes in the two pictures?",
        "points": [
            Point(
                "Look at both pictures as a whole: the people or animals, what they do, the objects and the setting."
            ),
            Point("Near-duplicate scenes seen from another viewpoint count as equivalent."),
            Point("Colours and image quality matter little; what the scene shows matters most."),
            Point("The scale is continuous: place the handle anywhere between the levels, wherever the pair belongs."),
            Point("Skip a pair you cannot judge; flag it if a picture is broken or inappropriate.", task_only=True),
        ],
    },
    "SITS": {
        "title": "Compare a sentence with a picture",
        "task": "How well does the sentence describe the picture?",
        "points": [
            Point("Read the sentence, then look for each thing it says in the picture."),
            Point(
                "A sentence that describes the picture almost perfectly belongs at the right end of the slider; one "
                "about something else entirely belongs at the left end."
            ),
            Point(
                "Hover over a level name under the slider to read its full description; once you place the handle, "
                "the description of the nearest level shows.",
                touch="Tap a level name under the slider to read its full description; once you place the handle, "
                "the description of the nearest level shows.",
            ),
            Point("The scale is continuous: place the handle anywhere between the levels, wherever the pair belongs."),
            Point(
                "Skip a pair you cannot judge; flag it if the picture is broken or the sentence is unreadable.",
                task_only=True,
            ),
        ],
    },
    "REV": {
        "title": "Review a retrieval failure",
        "task": "Given the query, how close does the retrieved picture come to the expected one?",
        "points": [
            Point(
                "A search for the query should have found the expected picture; it found the retrieved picture "
                "first. Read the query, then look at both pictures."
            ),
            Point(
                "Tick what the retrieved picture clearly gets wrong about what the query asks for: the kind of "
                "object, its colour, how many there are, the action, the size, or other details."
            ),
            Point(
                "Tick \u201ca fair alternative\u201d instead when the retrieved picture matches the query as well as "
                "the expected one does: then nothing is misread."
            ),
            Point(
                "Then place the slider: how close the retrieved picture is to the expected one, given the query. "
                "The scale is continuous: place the handle anywhere between the levels."
            ),
            Point("Skip a failure you cannot judge.", task_only=True),
        ],
    },
}

# The review's scale: the CxC level names, with what each means for a retrieved picture.
REVIEW_LEVEL_DETAILS = (
    "The retrieved picture has nothing to do with the query.",
    "Only the query's general topic is in the retrieved picture.",
    "Some of what the query asks for is there, but important parts are wrong or missing.",
    "Roughly what the query asks for, but an important detail is wrong or missing.",
    "What the query asks for; only unimportant details differ from the expected picture.",
    "As good an answer to the query as the expected picture.",
)


def review_levels() -> list[dict]:
    """The review slider's levels, as ``levels_for`` gives a CxC task's."""
    return [
        {"level": level, "name": name, "detail": detail}
        for level, (name, detail) in enumerate(zip(LEVEL_NAMES, REVIEW_LEVEL_DETAILS, strict=True))
    ]
