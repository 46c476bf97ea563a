"""The audit file of gold ratings: ``gold_<split>.csv``, one row per rating of a gold pair
of the split (queue and quiz), never part of the dataset's files. Written only for a
split that has gold ratings (no empty files, as for the tasks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from annotation.core import spreadsheet_csv
from annotation.export.formats import file_stem
from annotation.models import Dataset, GoldRating, Split

GOLD_COLUMNS = (
    "kind",
    "item1",
    "item2",
    "gold_score",
    "rater_id",
    "score",
    "abs_error",
    "purpose",
    "attempt",
    "time_on_item_ms",
    "below_speed_floor",
    "created_at",
)


def gold_file_name(split: Split) -> str:
    file_stem("STS", split.name)  # refuses a split name that is not safe in a file name
    return f"gold_{split.name}.csv"


def write_gold_file(
    folder: Path, dataset: Dataset, split: Split, rater_names: Callable[[set[int]], dict]
) -> dict | None:
    """Write the split's gold ratings; returns the file's entry for the manifest (None
    when the split has none). ``rater_names``: the export's pseudonym mapping, grown to
    cover a set of rater ids."""
    ratings = (
        GoldRating.objects.filter(dataset=dataset, gold_pair__split=split)
        .select_related("gold_pair__caption_a", "gold_pair__caption_b", "gold_pair__image_a", "gold_pair__image_b")
        .order_by("gold_pair_id", "created_at", "id")
    )
    if not ratings.exists():
        return None
    names = rater_names(set(ratings.values_list("rater_id", flat=True)))
    name = gold_file_name(split)
    rows = 0
    with (folder / name).open("w", newline="", encoding="utf-8") as handle:
        writer = spreadsheet_csv.writer(handle, lineterminator="\n")
        writer.writerow(GOLD_COLUMNS)
        for rating in ratings.iterator(chunk_size=2000):
            gold = rating.gold_pair
            items = [i.key for i in (gold.caption_a, gold.caption_b, gold.image_a, gold.image_b) if i is not None]
            if gold.swapped:
                items.reverse()
            writer.writerow(
                [
                    gold.kind,
                    items[0],
                    items[1],
                    repr(rating.gold_score),
                    names[rating.rater_id],
                    repr(rating.score),
                    repr(round(abs(rating.score - rating.gold_score), 4)),
                    rating.purpose,
                    rating.attempt,
                    rating.time_on_item_ms,
                    int(rating.below_speed_floor),
                    rating.created_at.isoformat(),
                ]
            )
            rows += 1
    return {"name": name, "rows": rows, "split": split.name, "task": None}
