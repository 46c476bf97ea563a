"""The facts of Crisscrossed Captions (CxC) that several parts of the project share. No Django.

The three rating tasks, the 0-5 score scale, the score from which a rated pair counts as
a positive (the CxC paper's thresholds), and how the release's CSV files are named and
headed: ``<prefix>_<split>.csv`` with the two item columns of the task, then
``agg_score`` and ``sampling_method``.
"""

from __future__ import annotations

STS = "STS"  # caption-caption
SIS = "SIS"  # image-image
SITS = "SITS"  # caption-image
KINDS = (STS, SIS, SITS)

SCORE_MIN = 0.0
SCORE_MAX = 5.0

# A rated pair is a positive when its score reaches its task's threshold.
POSITIVE_THRESHOLDS: dict[str, float] = {STS: 3.0, SIS: 2.5, SITS: 3.0}

# File name prefix and the two item columns of each task, as the public release writes them.
FILE_PREFIX = {STS: "sts", SIS: "sis", SITS: "sits"}
ITEM_COLUMNS: dict[str, tuple[str, str]] = {
    STS: ("caption1", "caption2"),
    SIS: ("image1", "image2"),
    SITS: ("caption", "image"),
}
SCORE_COLUMN = "agg_score"
METHOD_COLUMN = "sampling_method"

# The six levels of the 0-5 scale, lowest first. Names carry no digits: the slider's
# screen-reader text names the nearest level, never a number.
LEVEL_NAMES = (
    "Unrelated",
    "Same topic only",
    "Some shared details",
    "Roughly equivalent",
    "Mostly equivalent",
    "Equivalent",
)

LEVEL_DETAILS = {
    "STS": (
        "The two sentences are about different things.",
        "Not equivalent; they only touch the same topic or a loosely related theme.",
        "Not equivalent, but they share some details: people, actions, objects or setting.",
        "Roughly the same meaning, but an important detail differs or is missing.",
        "Mostly the same meaning; only unimportant details differ.",
        "The two sentences mean the same thing.",
    ),
    "SIS": (
        "The two pictures are completely dissimilar.",
        "Not the same kind of scene; only the general theme is related.",
        "Different scenes that share some details: people, actions, objects or background.",
        "Roughly the same kind of scene, but an important part differs or is missing.",
        "Mostly the same kind of scene; similar participants, actions, objects and background, small differences.",
        "Near-duplicate scenes, possibly seen from another viewpoint.",
    ),
    "SITS": (
        "The sentence and the picture are completely unmatched.",
        "The sentence only shares the picture's general topic or theme.",
        "Not a description of the picture, but it names some of its details: people, actions, objects, background.",
        "The sentence roughly describes the picture, but gets an important detail wrong or leaves it out.",
        "The sentence describes the picture well; only unimportant details are off or missing.",
        "The sentence is an almost perfect description of the picture.",
    ),
}


def levels_for(kind: str) -> list[dict]:
    """[{"level": 0, "name": ..., "detail": ...}, ...] for one task kind."""
    return [
        {"level": level, "name": name, "detail": detail}
        for level, (name, detail) in enumerate(zip(LEVEL_NAMES, LEVEL_DETAILS[kind], strict=True))
    ]


def nearest_level(score: float) -> int:
    """The level (0-5) nearest to a score, halves up as the slider's page rounds
    (round() would take 2.5 to 2)."""
    return min(len(LEVEL_NAMES) - 1, max(0, int(score + 0.5)))


def level_name(score: float) -> str:
    """Name of the level nearest to a score on the 0-5 scale."""
    return LEVEL_NAMES[nearest_level(score)]
