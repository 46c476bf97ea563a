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
}
