"""The committed WordNet tables (annotation/evaluation/explain/data) and their reader: no
database, no nltk. The pinned values were computed by nltk over WordNet 3.1 when the
tables were built (scripts/build_wordnet_tables.py)."""

import json

import numpy as np
import pytest

from annotation.evaluation.explain.vocabulary import DATA_DIR, UnknownCategory, antonyms, vocabulary

COCO_IDS = [i for i in range(1, 91) if i not in {12, 26, 29, 30, 45, 66, 68, 69, 71, 83}]


def test_the_table_holds_the_80_coco_categories_each_with_a_distinct_synset():
    categories = vocabulary().categories
    assert sorted(c.coco_id for c in categories if c.coco_id is not None) == COCO_IDS
    assert len({c.name for c in categories}) == len(categories)
    assert len({c.synset for c in categories}) == len(categories)
    assert vocabulary().category("mouse").synset == "mouse.n.04"  # the computer mouse, not the rodent
    assert vocabulary().category("cow").synset == "cattle.n.01"


def test_path_lengths_are_a_symmetric_matrix_of_whole_numbers_zero_only_on_the_diagonal():
    lengths = vocabulary().path_lengths
    assert lengths.shape == (len(vocabulary().categories),) * 2
    assert np.array_equal(lengths, lengths.T)
    assert (np.diag(lengths) == 0).all()
    assert (lengths + np.eye(len(lengths), dtype=lengths.dtype) > 0).all()


def test_pinned_path_similarities_from_wordnet_3_1():
    table = vocabulary()
    assert table.path_similarity("dog", "cat") == 0.2
    assert table.path_similarity("frisbee", "sports ball") == pytest.approx(1 / 7)
    assert table.path_similarity("frisbee", "cat") == pytest.approx(1 / 14)
    assert table.path_similarity("frisbee", "sports ball") > table.path_similarity("frisbee", "cat")
    assert table.path_similarity("Dog", "dog") == 1.0


def test_an_unknown_category_is_named_in_the_error():
    with pytest.raises(UnknownCategory, match="'unicorn'"):
        vocabulary().path_similarity("dog", "unicorn")


@pytest.mark.parametrize(
    ("caption", "named"),
    [
        ("A man throws a Frisbee to his dog in the park.", {"person", "frisbee", "dog"}),
        ("A hot dog on a plate", {"hot dog"}),  # the longest term, not "dog"
        ("Two teddy bears and three mice", {"teddy bear", "mouse"}),  # plurals
        ("A TV beside the television set", {"tv"}),  # a synonym
        ("A bike against a wall", {"bicycle", "motorcycle", "wall"}),  # "bike" names both
        ("A cat's toy", {"cat"}),
        ("Cows grazing near oxen", {"cow"}),
        ("a car with a big wheel", {"car"}),  # "wheel" is a lemma of bicycle.n.01 left out
        ("", set()),
    ],
)
def test_the_categories_a_caption_names(caption, named):
    assert vocabulary().named_in(caption) == named


def test_adjective_antonyms_are_wordnets_direct_ones():
    table = antonyms()
    assert 2_000 < len(table) < 6_000
    assert table["large"] == ("small",)
    assert table["big"] == ("little",)
    assert table["hot"] == ("cold",)
    assert set(table["old"]) == {"new", "young"}
    assert "huge" not in table  # a satellite adjective: its antonym is its head's


def test_the_tables_are_small_and_carry_wordnets_licence():
    for name in ("categories.json", "antonyms.json"):
        assert (DATA_DIR / name).stat().st_size < 200_000
        assert "WordNet 3.1" in json.loads((DATA_DIR / name).read_text())["source"]
    assert "Princeton University" in (DATA_DIR / "WORDNET_LICENSE").read_text()
