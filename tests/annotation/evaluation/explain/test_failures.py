"""A model's failure set explained (annotation/evaluation/explain/failures.py) on the
hand-built split: every failure's metrics worked out by hand, the global means, an image
of unknown size, the flat rows and the global table. Pure, no database."""

import numpy as np
import pytest

from annotation.evaluation.explain.failures import (
    FAILURE_COLUMNS,
    explained_model,
    failure_records,
    global_means,
    image_objects,
)
from annotation.evaluation.explain.tables import format_explained
from tests.support.evaluation_data import (
    CAPTION_KEYS,
    CAPTION_OF,
    CAPTION_VECTORS,
    HAND_OBJECTS,
    HAND_SIZE,
    HAND_TEXTS,
    IMAGE_KEYS,
)

SIZES = dict.fromkeys(IMAGE_KEYS, HAND_SIZE)


def _captions():
    return (CAPTION_VECTORS / np.linalg.norm(CAPTION_VECTORS, axis=1, keepdims=True)).astype(np.float32)


def _explained(sizes=SIZES, threshold=0.05):
    images = image_objects(IMAGE_KEYS, sizes, dict(zip(IMAGE_KEYS, HAND_OBJECTS, strict=True)))
    return explained_model(_captions(), np.array(CAPTION_OF), HAND_TEXTS, images, size_threshold=threshold)


def test_every_query_of_the_hand_split_fails_at_rank_two():
    summary, rows = _explained()
    assert [(r["query"], r["truth"], r["retrieved"], r["rank"]) for r in rows] == [
        (0, 0, 2, 2),
        (1, 0, 1, 2),
        (2, 1, 0, 2),
        (3, 1, 2, 2),
        (4, 2, 1, 2),
        (5, 2, 0, 2),
    ]
    assert summary["failures"] == 6
    assert summary["MRR@5"] == 0.5
    assert summary["median_rank"] == 2.0
    assert summary["unanswerable"] == 0


def test_a_dog_and_frisbee_against_two_dogs_and_a_ball():
    _, rows = _explained()
    first = rows[0]  # "A dog leaps for a frisbee.": truth {dog, frisbee}, retrieved {dog x2, sports ball}
    assert first["concepts"] == {
        "truth": ["dog", "frisbee"],
        "retrieved": ["dog", "sports ball"],
        "query": ["dog", "frisbee"],
    }
    # The truth's dog (0.2 of the image) matches the smaller retrieved dog (0.1): SD 0.1 > 0.05.
    assert first["agnostic"] == pytest.approx({"CA": 0.5, "NCS": 1 / 7, "CE": 1, "SD": 0.1, "SD_binary": 1})
    # Query-informed: the ball is named by no word of the query, so nothing stays apart.
    assert first["informed"] == pytest.approx({"CA": 0.5, "NCS": None, "CE": 1, "SD": 0.1, "SD_binary": 1})
    assert first["explanation"]["agnostic"] == [
        "retrieved has a sports ball where the truth had a frisbee",
        "dog: the truth had 1, retrieved has 2",
    ]


def test_a_dog_against_a_cat():
    _, rows = _explained()
    second = rows[1]  # "A brown dog in the park.": truth {dog, frisbee}, retrieved {cat}
    assert second["agnostic"] == pytest.approx({"CA": 0.0, "NCS": 1 / 5, "CE": None, "SD": None, "SD_binary": None})
    assert second["informed"]["CA"] == 0.0
    assert second["explanation"]["agnostic"] == [
        "retrieved has a cat where the truth had a dog",
        "retrieved has no frisbee",
    ]


def test_an_image_of_unknown_size_gives_no_size_disagreement():
    sizes = {key: size for key, size in SIZES.items() if key != IMAGE_KEYS[2]}
    _, rows = _explained(sizes)
    assert rows[0]["agnostic"]["SD"] is None and rows[0]["agnostic"]["SD_binary"] is None
    assert rows[0]["agnostic"]["CE"] == 1
    # Images 0 and 1 both have their size: the cat-and-dog pair's SD is undefined for want of a common category only.
    assert rows[2]["agnostic"]["SD"] is None


def test_global_means_average_the_failures_where_a_metric_is_defined():
    summary, rows = _explained()
    ca = [row["agnostic"]["CA"] for row in rows]
    assert summary["global"]["agnostic"]["CA"] == {"mean": pytest.approx(np.mean(ca)), "failures": 6}
    sd = [row["agnostic"]["SD"] for row in rows if row["agnostic"]["SD"] is not None]
    assert summary["global"]["agnostic"]["SD"]["failures"] == len(sd) < 6
    assert summary["global"]["agnostic"]["SD"]["mean"] == pytest.approx(np.mean(sd))
    assert global_means([])["informed"]["NCS"] == {"mean": None, "failures": 0}


def test_failure_records_name_the_items_by_their_keys():
    _, rows = _explained()
    records = failure_records("mine", rows, CAPTION_KEYS, HAND_TEXTS, IMAGE_KEYS)
    first = dict(zip(FAILURE_COLUMNS, records[0], strict=True))
    assert first["model"] == "mine"
    assert first["query"] == CAPTION_KEYS[0]
    assert (first["truth_image"], first["retrieved_image"]) == (IMAGE_KEYS[0], IMAGE_KEYS[2])
    assert first["informed_NCS"] == ""
    assert first["truth_concepts"] == "dog; frisbee"
    assert first["explanation"].startswith("retrieved has a sports ball where the truth had a frisbee. dog:")


def test_the_global_table_puts_models_side_by_side():
    summary, _ = _explained()
    text = format_explained({"first": summary, "second": summary | {"failures": 5}})
    lines = text.splitlines()
    assert "T_D 0.05" in lines[0]
    assert lines[1].split() == ["first", "second"]
    assert "|F| failures" in text and text.count("MRR@5") == 1
    assert next(line for line in lines if line.startswith("|F|")).split()[-2:] == ["6", "5"]
