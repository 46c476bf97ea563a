"""The hand-built split of the evaluation tests: every rank and recall known by hand,
as arrays, as ``RatedPairs`` and as files (the command tests use the files)."""

import csv
from pathlib import Path

import numpy as np
import pytest

from annotation.evaluation.inputs import RatedPairs, Space, SplitItems

# --- a hand-built split where every rank is known -------------------------------------
#
# Images i0, i1, i2 are the axes e0, e1, e2; each has two captions. Caption vectors
# (normalized by the evaluation): c0 = e0, c1 = e0 + 2 e1, c2 = e1, c3 = e1 + 2 e2,
# c4 = e2, c5 = 2 e0 + e2. So c0, c2, c4 lie on their image (cosine 1) and c1, c3, c5
# are closer (0.894) to the *next* image than to their own (0.447).

IMAGE_KEYS = [f"COCO_val2014_{n:012d}.jpg" for n in (1, 2, 3)]
CAPTION_KEYS = [f"COCO_val2014:sentid:{n}" for n in range(100, 106)]
CAPTION_OF = [0, 0, 1, 1, 2, 2]
IMAGE_VECTORS = np.eye(3, dtype=np.float32)
CAPTION_VECTORS = np.array([[1, 0, 0], [1, 2, 0], [0, 1, 0], [0, 1, 2], [0, 0, 1], [2, 0, 1]], dtype=np.float32)

STS_ROWS = [(0, 5, 3.5), (2, 4, 3.0), (1, 3, 2.0)]  # positives: (c0, c5) and (c2, c4), 3.0 included
SIS_ROWS = [(0, 1, 2.5), (1, 2, 2.4)]  # positive: (i0, i1), 2.5 included
SITS_ROWS = [(c, CAPTION_OF[c], 4.8) for c in range(6)] + [(1, 1, 4.0), (3, 2, 3.0), (5, 0, 2.9)]


# Expected, worked out by hand from the geometry above (ties count against the model):
# image->text: every image's own axis caption scores 1, so each first correct item is rank 1.
# text->image, original pairs: c1, c3, c5 have the next image ahead of their own: rank 2.
# text->image, CxC: (c1, i1) and (c3, i2) are SITS positives now (rank 1); (c5, i0) at 2.9 is not.
# text->text: c0 <-> c5 (cosine 0.894) rank 1 both ways; c2 <-> c4 have cosine 0 and every
# other caption scores >= 0 for them: rank 5 (4 candidates ahead or tied).
# image->image: i0 <-> i1 have cosine 0, tied with i2: rank 2.
def _figures(queries, candidates, positives, r1, r5, r10, median):
    return {
        "queries": queries,
        "candidates": candidates,
        "positives": positives,
        "R@1": r1,
        "R@5": r5,
        "R@10": r10,
        "median_rank": median,
    }


EXPECTED = {
    "image_to_text": {
        "original": _figures(3, 6, 6, 100.0, 100.0, 100.0, 1.0),
        "cxc": _figures(3, 6, 8, 100.0, 100.0, 100.0, 1.0),
    },
    "text_to_image": {
        "original": _figures(6, 3, 6, 50.0, 100.0, 100.0, 1.5),
        "cxc": _figures(6, 3, 8, 500 / 6, 100.0, 100.0, 1.0),
    },
    "text_to_text": {"cxc": _figures(4, 5, 2, 50.0, 100.0, 100.0, 3.0)},
    "image_to_image": {"cxc": _figures(2, 2, 1, 0.0, 100.0, 100.0, 2.0)},
}


def hand_items() -> SplitItems:
    return SplitItems.from_pairs("val", IMAGE_KEYS, [(CAPTION_KEYS[c], IMAGE_KEYS[CAPTION_OF[c]]) for c in range(6)])


def hand_ratings(source: str = "hand") -> dict[str, RatedPairs]:
    def pairs(kind, rows, first_keys, second_keys):
        return RatedPairs(
            kind=kind,
            source=f"{source}/{kind.lower()}_val.csv",
            first=[first_keys[a] for a, _, _ in rows],
            second=[second_keys[b] for _, b, _ in rows],
            scores=np.array([s for _, _, s in rows], dtype=np.float64),
        )

    return {
        "STS": pairs("STS", STS_ROWS, CAPTION_KEYS, CAPTION_KEYS),
        "SIS": pairs("SIS", SIS_ROWS, IMAGE_KEYS, IMAGE_KEYS),
        "SITS": pairs("SITS", SITS_ROWS, CAPTION_KEYS, IMAGE_KEYS),
    }


def write_hand_files(folder: Path) -> dict[str, Path]:
    """The hand-built case as files: ratings/{sts,sis,sits}_val.csv and vectors with ids."""
    ratings = folder / "ratings"
    ratings.mkdir(parents=True)
    for name, header, rows, first_keys, second_keys in (
        ("sts_val.csv", ["caption1", "caption2"], STS_ROWS, CAPTION_KEYS, CAPTION_KEYS),
        ("sis_val.csv", ["image1", "image2"], SIS_ROWS, IMAGE_KEYS, IMAGE_KEYS),
        ("sits_val.csv", ["caption", "image"], SITS_ROWS, CAPTION_KEYS, IMAGE_KEYS),
    ):
        with (ratings / name).open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow([*header, "agg_score", "sampling_method"])
            writer.writerows([first_keys[a], second_keys[b], f"{s:.2f}", "uploaded"] for a, b, s in rows)
    paths = {"ratings": ratings}
    for modality, keys, vectors in (("image", IMAGE_KEYS, IMAGE_VECTORS), ("caption", CAPTION_KEYS, CAPTION_VECTORS)):
        paths[f"{modality}_vectors"] = folder / f"{modality}s.npy"
        paths[f"{modality}_ids"] = folder / f"{modality}s.txt"
        np.save(paths[f"{modality}_vectors"], vectors)
        paths[f"{modality}_ids"].write_text("".join(f"{key}\n" for key in keys))
    return paths


def import_hand_spaces(dataset, files: dict[str, Path]) -> None:
    """Store the hand-built vectors as the dataset's spaces "image-model" and "caption-model"."""
    from annotation.catalog.services import embedding_space_import

    for modality in ("image", "caption"):
        embedding_space_import(
            dataset_name=dataset.name,
            space_name=f"{modality}-model",
            modality=modality,
            vectors_path=files[f"{modality}_vectors"],
            ids_path=files[f"{modality}_ids"],
        )


def hand_spaces() -> tuple[Space, Space]:
    return (
        Space(vectors=IMAGE_VECTORS, ids=list(IMAGE_KEYS), source="images.npy"),
        Space(vectors=CAPTION_VECTORS, ids=list(CAPTION_KEYS), source="captions.npy"),
    )


def assert_retrieval_matches(retrieval: dict, expected: dict) -> None:
    assert set(retrieval) == set(expected)
    for task, variants in expected.items():
        assert set(retrieval[task]) == set(variants), task
        for variant, figures in variants.items():
            got = retrieval[task][variant]
            assert set(figures) <= set(got), (task, variant)
            for key, value in figures.items():
                assert got[key] == pytest.approx(value), (task, variant, key)


# --- the hand-built split's objects, for the explained failures -------------------------
#
# Every image is 100 x 100 pixels; areas below are in pixels (shares: / 10,000). With the
# caption vectors above every query fails at rank 2 (the own corpus is the one other
# caption): (truth, retrieved) per caption c0..c5 = (0,2) (0,1) (1,0) (1,2) (2,1) (2,0).
HAND_TEXTS = [
    "A dog leaps for a frisbee.",
    "A brown dog in the park.",
    "A wet cat sleeps on a sofa.",
    "A small cat.",
    "Two dogs play with a ball.",
    "Dogs on the grass.",
]
HAND_OBJECTS = [
    [("dog", 2000.0), ("frisbee", 500.0)],
    [("cat", 3000.0)],
    [("dog", 6000.0), ("dog", 1000.0), ("sports ball", 400.0)],
]
HAND_SIZE = (100, 100)


def annotate_hand_dataset(dataset) -> None:
    """Give the hand-built split's images their size and objects, its captions their text."""
    from annotation.models import Caption, Image, ObjectAnnotation

    for key, text in zip(CAPTION_KEYS, HAND_TEXTS, strict=True):
        Caption.objects.filter(dataset=dataset, key=key).update(text=text)
    for key, objects in zip(IMAGE_KEYS, HAND_OBJECTS, strict=True):
        image = Image.objects.get(dataset=dataset, key=key)
        image.width, image.height = HAND_SIZE
        image.save(update_fields=["width", "height"])
        ObjectAnnotation.objects.bulk_create(
            ObjectAnnotation(image=image, category=category, bbox_x=0, bbox_y=0, bbox_w=10, bbox_h=10, area=area)
            for category, area in objects
        )
