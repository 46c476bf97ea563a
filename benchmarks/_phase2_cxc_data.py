"""Pure helpers of bench-phase2-cxc (benchmarks/bench_phase2_cxc.py): the release's scores
per pair, its c2i_intrasim rows, and how far a set of caption-image pairs reaches them.
No Django.

Image level: a caption-image pair (c, i) stands for the ordered image pair (the image c
was written for, i), which is what a pivot decides; the caption drawn for it is chance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

INTRASIM = "c2i_intrasim"
ORIGINAL = "c2i_original"


def first_scores(rows: Iterable[dict[str, str]], columns: tuple[str, str]) -> dict[tuple[str, str], float]:
    """Each unordered pair's agg_score, from the first row naming it (the upload merges
    later repeats into that row's pair)."""
    scores: dict[tuple[str, str], float] = {}
    for row in rows:
        scores.setdefault(tuple(sorted((row[columns[0]], row[columns[1]]))), float(row["agg_score"]))
    return scores


def caption_images(sits_rows: Iterable[dict[str, str]]) -> dict[str, str]:
    """Caption id -> the image it was written for, from the c2i_original rows."""
    return {row["caption"]: row["image"] for row in sits_rows if row["sampling_method"] == ORIGINAL}


def intrasim_rows(sits_rows: Iterable[dict[str, str]]) -> list[tuple[str, str]]:
    """The release's c2i_intrasim rows as (caption, image), in file order."""
    return [(row["caption"], row["image"]) for row in sits_rows if row["sampling_method"] == INTRASIM]


def image_pairs(pairs: Iterable[tuple[str, str]], image_of: Mapping[str, str]) -> set[tuple[str, str]]:
    """The distinct ordered image pairs (caption's image, image) behind caption-image pairs."""
    return {(image_of[caption], image) for caption, image in pairs}


def overlap(ours: list[tuple[str, str]], release: list[tuple[str, str]], image_of: Mapping[str, str]) -> dict:
    """Exact and image-level overlap of our pairs with the release's rows; reach is the
    share of the release's image pairs that ours include."""
    release_images = image_pairs(release, image_of)
    shared_images = image_pairs(ours, image_of) & release_images
    return {
        "pairs": len(ours),
        "exact_overlap": len(set(ours) & set(release)),
        "image_level_overlap": len(shared_images),
        "release_image_pairs": len(release_images),
        "image_level_reach": round(len(shared_images) / len(release_images), 4) if release_images else None,
    }


def pivot_image_pairs(
    sts_rows: Iterable[dict[str, str]], sis_rows: Iterable[dict[str, str]], image_of: Mapping[str, str]
) -> dict[str, set[tuple[str, str]]]:
    """The image pairs each kind of pivot can give in the paper's direction: pivot (a, b)
    as listed gives (b's image, a's image); co-caption pivots give none."""
    sts = {(image_of[row["caption2"]], image_of[row["caption1"]]) for row in sts_rows}
    sis = {(row["image2"], row["image1"]) for row in sis_rows}
    return {"sts": {pair for pair in sts if pair[0] != pair[1]}, "sis": sis}


def release_by_pivot_kind(
    release: list[tuple[str, str]], image_of: Mapping[str, str], pivots: Mapping[str, set[tuple[str, str]]]
) -> dict[str, int]:
    """How many of the release's image pairs an STS pivot, an SIS pivot, both or neither
    gives in the paper's direction (the release does not say which half a row is from)."""
    counts = {"sts_only": 0, "sis_only": 0, "both": 0, "neither": 0}
    for pair in image_pairs(release, image_of):
        in_sts, in_sis = pair in pivots["sts"], pair in pivots["sis"]
        counts["both" if in_sts and in_sis else "sts_only" if in_sts else "sis_only" if in_sis else "neither"] += 1
    return counts
