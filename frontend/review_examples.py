"""Worked examples of the failure review (the REV kind), shown under its instructions: a
query, what the expected and the retrieved picture show, the marks a careful reviewer
ticks and the level of the scale the slider goes near, with why. Described in words,
since no picture of a dataset comes with its review; a level is named, never numbered
(the slider never shows a number, nor do its examples)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.core.cxc import LEVEL_NAMES
from annotation.evaluation.review.marks import MARK_LABELS, marks_bits


@dataclass(frozen=True)
class ReviewExample:
    query: str
    expected: str
    retrieved: str
    marks: tuple[str, ...]  # mark names (annotation.evaluation.review.marks)
    level: str  # one of cxc.LEVEL_NAMES
    why: str

    def __post_init__(self):
        marks_bits(self.marks)  # an example must be a review the API would store
        if not self.marks:
            raise ValueError(f"an example ticks at least one mark: {self.query!r}")
        if self.level not in LEVEL_NAMES:
            raise ValueError(f"{self.level!r} is not a level of the scale: {', '.join(LEVEL_NAMES)}")

    @property
    def mark_labels(self) -> list[str]:
        return [MARK_LABELS[name] for name in self.marks]


REVIEW_EXAMPLES = (
    ReviewExample(
        query="Two dogs running through deep snow.",
        expected="Two dogs running side by side through snow.",
        retrieved="One dog running through snow.",
        marks=("object_count",),
        level="Roughly equivalent",
        why="The scene and the action are right; the query asks for two dogs and only one is there.",
    ),
    ReviewExample(
        query="A man in a red jacket riding a bicycle down a street.",
        expected="A man in a red jacket cycling on a city street.",
        retrieved="A man in a blue jacket cycling on a city street.",
        marks=("object_color",),
        level="Roughly equivalent",
        why="Everything matches but the colour the query names, which matters to whoever searched for it.",
    ),
    ReviewExample(
        query="A woman throwing a frisbee in a park.",
        expected="A woman in mid-throw, a frisbee leaving her hand, on a lawn.",
        retrieved="A woman sitting on the grass with a frisbee in her lap.",
        marks=("action",),
        level="Some shared details",
        why="The woman, the frisbee and the park are there, but she is not throwing it.",
    ),
    ReviewExample(
        query="A plate of pasta with broccoli.",
        expected="A plate of pasta with broccoli on a table.",
        retrieved="A pizza on a plate.",
        marks=("object_class",),
        level="Same topic only",
        why="Food on a plate is all the two share: the dish is the wrong one.",
    ),
    ReviewExample(
        query="A small rowing boat on a calm lake.",
        expected="A rowing boat alone on a still lake.",
        retrieved="A large passenger ferry crossing a lake.",
        marks=("size",),
        level="Some shared details",
        why="A boat on a lake, but the query asks for a small one and this one carries hundreds of people.",
    ),
    ReviewExample(
        query="A bathroom with a white sink and a round mirror.",
        expected="A white sink under a round mirror in a tiled bathroom.",
        retrieved="A white sink under a square mirror in a tiled bathroom.",
        marks=("details",),
        level="Roughly equivalent",
        why="Only the mirror's shape is wrong, but the query names it: an important detail, in an otherwise "
        "matching room.",
    ),
    ReviewExample(
        query="A cat sleeping on a couch.",
        expected="A grey cat asleep on a leather sofa.",
        retrieved="A ginger cat asleep on a fabric couch.",
        marks=("fair_alternative",),
        level="Equivalent",
        why="It answers the query as well as the expected picture does; the cat's colour was not asked for. "
        "A fair alternative is ticked alone.",
    ),
)
