"""Adversarial queries (annotation/evaluation/explain/adversarial.py): which words each kind
replaces and by what, the seeded draws, and the ground truths' moves counted against a
re-ranking done by hand. Pure, no database."""

import numpy as np
import pytest

from annotation.evaluation.explain.adversarial import (
    ANTONYM,
    CAPTION_COLOURS,
    COLOUR,
    SIZE,
    adversarial_run,
    kind_effects,
    named_colours,
    substitute,
    substitutes,
)
from annotation.evaluation.explain.ranking import build_corpora, rank_queries
from sampling.encoders import hashing_encoder

TEXTS = [
    "A large white dog on a wet street.",
    "Two people.",
    "Tiny Red cars near an old building.",
]


def _one(kind, texts=TEXTS, seed=0, **options):
    return substitute(texts, kind, substitutes(texts, **options), np.random.default_rng(seed))


def test_size_words_turn_into_their_opposites():
    changes = _one(SIZE)
    assert [(c.query, c.word) for c in changes] == [(0, "large"), (2, "Tiny")]
    assert changes[0].replacement in ("small", "little", "minor", "tiny")
    assert changes[1].replacement in ("Large", "Big", "Enormous", "Huge")  # the capital kept
    assert changes[0].text == f"A {changes[0].replacement} white dog on a wet street."


def test_antonyms_leave_colours_sizes_and_prepositions_alone():
    changes = _one(ANTONYM)
    assert {c.word for c in changes} <= {"wet", "old"}
    words = {(c.word, c.replacement) for seed in range(20) for c in _one(ANTONYM, seed=seed)}
    assert ("wet", "dry") in words
    assert {("old", "new"), ("old", "young")} <= words  # one drawn at random among several
    assert not {word for word, _ in words} & {"large", "white", "on", "Tiny", "Red"}


def test_a_colour_becomes_a_distant_named_colour():
    colours = named_colours()
    for seed in range(10):
        for change in _one(COLOUR, seed=seed, colour_distance=200):
            old, new = colours[change.word.casefold()], colours[change.replacement.casefold()]
            assert np.linalg.norm(np.subtract(old, new)) > 200
    assert {c.word for c in _one(COLOUR)} == {"white", "Red"}


def test_the_caption_pool_draws_only_colours_the_captions_use():
    texts = ["A white cat and a black dog.", "A red bus."]
    draws = {c.replacement for seed in range(30) for c in _one(COLOUR, texts, seed=seed, colour_pool=CAPTION_COLOURS)}
    assert draws <= {"white", "black", "red"}
    assert "black" in draws  # white's only distant colour among them but red


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="colour pool"):
        substitutes(TEXTS, colour_pool="rainbow")
    with pytest.raises(ValueError, match="colour distance"):
        substitutes(TEXTS, colour_distance=-1)


def test_the_same_seed_draws_the_same_substitutions():
    assert _one(ANTONYM, seed=3) == _one(ANTONYM, seed=3)
    draws = {tuple(c.replacement for c in _one(COLOUR, seed=seed)) for seed in range(5)}
    assert len(draws) > 1


def test_effects_count_falls_stays_and_rises():
    class Fixed:
        def __init__(self, rank):
            self.rank = np.array(rank)

    effects = kind_effects(Fixed([1, 3, 2, 5]), Fixed([2, 3, 1, 12]), 20)
    assert (effects["falls"], effects["stays"], effects["rises"]) == (2, 1, 1)
    assert effects["change"]["R@5"] == -25.0
    assert effects["change"]["MRR@5"] == pytest.approx(((1 / 2 + 1 / 3 + 1) - (1 + 1 / 3 + 1 / 2 + 1 / 5)) / 4)


def test_a_run_re_ranks_the_changed_queries_with_the_encoder():
    # Image 0: "a big dog" / "a big brown dog"; image 1: "a small dog" / "a small brown dog".
    texts = ["a big dog", "a big brown dog", "a small dog", "a small brown dog"]
    encode = hashing_encoder(64)
    vectors = encode(texts)
    captions = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    caption_image = np.array([0, 0, 1, 1])
    corpora = build_corpora(captions, caption_image, 2)
    assert rank_queries(captions, caption_image, corpora).rank.tolist() == [1, 1, 1, 1]
    changed = []
    run = adversarial_run(
        captions, caption_image, corpora, texts, encode, table=substitutes(texts), kinds=[SIZE], changed=changed
    )
    size = run[SIZE]
    # Every caption has a size word, so all four change (all four are the examples).
    assert size["queries"] == 4
    assert size["falls"] + size["stays"] + size["rises"] == 4
    assert size["before"]["R@5"] == 100.0 and size["before"]["failures"] == 0
    ranks = [
        rank_queries(captions, caption_image, corpora, np.array([e["query"]]), _unit(encode([e["text"]]))).rank[0]
        for e in size["examples"]
    ]
    assert [e["word"] for e in size["examples"]] == ["big", "big", "small", "small"]
    assert size["falls"] == sum(rank > 1 for rank in ranks) > 0
    assert size["after"]["failures"] == size["falls"]
    assert [(c["kind"], c["query"], c["rank_before"], c["rank_after"]) for c in changed] == [
        (SIZE, e["query"], 1, rank) for e, rank in zip(size["examples"], ranks, strict=True)
    ]
    assert size["change"]["MRR@N"] == pytest.approx(np.mean([1 / rank for rank in ranks]) - 1)


def _unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_an_encoder_that_gives_a_zero_vector_is_named():
    texts = ["a big dog", "a big cat", "a small dog", "a small cat"]
    captions = _unit(hashing_encoder(16)(texts))
    corpora = build_corpora(captions, np.array([0, 0, 1, 1]), 2)
    with pytest.raises(ValueError, match="all zeros"):
        adversarial_run(
            captions,
            np.array([0, 0, 1, 1]),
            corpora,
            texts,
            lambda batch: np.zeros((len(batch), 16)),
            table=substitutes(texts),
            kinds=[SIZE],
        )
