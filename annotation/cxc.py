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
