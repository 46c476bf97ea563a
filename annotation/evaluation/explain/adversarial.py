"""Adversarial queries: each caption changed by one word of one kind at a time, re-embedded
with the model's own encoder, ranked again, and the ground truth's move counted. Pure numpy.

Kinds of substitution (``KINDS``), one per changed query, the word and its replacement
drawn with a seeded generator:

- **antonym**: an adjective by one of its WordNet antonyms (``antonyms.json``; one drawn at
  random when several); colour and size words are left to their own kinds. No tagger reads
  the caption: a word WordNet lists as an adjective counts as one, but for the
  prepositions of ``PREPOSITIONS`` ("a cat on a bed" keeps its "on");
- **colour**: a colour word (``COLOUR_WORDS``: the eleven basic colour terms, grey, and a
  few colour names that name little else in a caption) by a named colour whose sRGB values
  lie more than a threshold away (Euclidean distance, 0-441), drawn from every named colour
  (``data/colours.json``, CSS's 148) or from the named colours the dataset's captions use.
  Most of CSS's names also name things ("snow", "tomato", "olive"), so they are
  replacements, not words to replace;
- **size**: a size word by one of its opposites (large, big, enormous, huge against small,
  little, minor, tiny).

A word is a run of letters (``vocabulary.words``); its replacement keeps a capital first
letter. A caption without a word of a kind is not changed for that kind.

Effects per kind, over the queries it changed: how many ground truths fall (a worse rank),
stay, rise; Recall@K and MRR@K before and after and their change (``ranking_figures``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.evaluation.explain.ranking import Corpora, Ranking, rank_queries, ranking_figures
from annotation.evaluation.explain.vocabulary import DATA_DIR, antonyms

ANTONYM, COLOUR, SIZE = "antonym", "colour", "size"
KINDS = (ANTONYM, COLOUR, SIZE)
LARGE = ("large", "big", "enormous", "huge")
SMALL = ("small", "little", "minor", "tiny")
# sRGB distance a replacement colour keeps at least by default (black to white is 441).
COLOUR_DISTANCE = 150.0
# Berlin and Kay's basic colour terms, grey, and names that are colours in nearly every caption.
COLOUR_WORDS = (
    *("black", "white", "red", "green", "yellow", "blue", "brown", "orange", "pink", "purple", "gray", "grey"),
    *("beige", "maroon", "turquoise", "violet", "magenta", "cyan", "teal", "navy", "silver", "gold"),
)
# Adjectives in WordNet ("the lights are on") that a caption nearly always uses as prepositions.
PREPOSITIONS = frozenset(
    {"on", "off", "in", "out", "up", "down", "over", "under", "about", "above", "below", "inside", "outside"}
    | {"before", "after", "through", "near", "behind", "along", "around"}
)
ALL_NAMED, CAPTION_COLOURS = "named", "captions"
COLOUR_POOLS = (ALL_NAMED, CAPTION_COLOURS)
_WORD = re.compile(r"[A-Za-z]+")
Encoder = Callable[[Sequence[str]], np.ndarray]


@functools.cache
def named_colours() -> dict[str, tuple[int, int, int]]:
    """CSS's named colours: lower-case name -> (r, g, b), 0-255."""
    table = json.loads((DATA_DIR / "colours.json").read_text(encoding="utf-8"))
    return {name: tuple(rgb) for name, rgb in table["colours"].items()}


@dataclass(frozen=True)
class Substitution:
    query: int
    text: str
    word: str
    replacement: str


@dataclass(frozen=True)
class Substitutes:
    """What replaces a word of each kind: word -> its candidate replacements (sorted)."""

    by_kind: Mapping[str, Mapping[str, tuple[str, ...]]]


def substitutes(
    caption_texts: Sequence[str], *, colour_distance: float = COLOUR_DISTANCE, colour_pool: str = ALL_NAMED
) -> Substitutes:
    """The replacement tables; ``colour_pool`` ALL_NAMED or CAPTION_COLOURS (the named
    colours some caption of ``caption_texts`` uses)."""
    if colour_pool not in COLOUR_POOLS:
        raise ValueError(f"the colour pool is {' or '.join(COLOUR_POOLS)}, got {colour_pool!r}")
    if not 0 <= colour_distance <= 442:
        raise ValueError(f"the colour distance is 0-442 (sRGB), got {colour_distance!r}")
    colours = named_colours()
    pool = colours
    if colour_pool == CAPTION_COLOURS:
        used = {word for text in caption_texts for word in _WORD.findall(text.casefold())}
        pool = {name: rgb for name, rgb in colours.items() if name in used}
    rgb = {name: np.asarray(value, np.float64) for name, value in colours.items()}
    colour_table = {
        name: tuple(sorted(other for other in pool if np.linalg.norm(rgb[name] - rgb[other]) > colour_distance))
        for name in COLOUR_WORDS
    }
    size_table = {word: SMALL for word in LARGE} | {word: LARGE for word in SMALL}
    antonym_table = {
        word: tuple(others)
        for word, others in antonyms().items()
        if " " not in word and word not in colour_table and word not in size_table and word not in PREPOSITIONS
    }
    return Substitutes({ANTONYM: antonym_table, COLOUR: colour_table, SIZE: size_table})


def _cased(replacement: str, word: str) -> str:
    return replacement[:1].upper() + replacement[1:] if word[:1].isupper() else replacement


def substitute(
    caption_texts: Sequence[str], kind: str, table: Substitutes, rng: np.random.Generator
) -> list[Substitution]:
    """One substitution of ``kind`` per caption that has a word of it (the word and its
    replacement drawn by ``rng``), in caption order."""
    choices = table.by_kind[kind]
    out = []
    for query, text in enumerate(caption_texts):
        spots = [match for match in _WORD.finditer(text) if choices.get(match.group().casefold())]
        if not spots:
            continue
        match = spots[int(rng.integers(len(spots)))]
        options = choices[match.group().casefold()]
        replacement = _cased(options[int(rng.integers(len(options)))], match.group())
        changed = text[: match.start()] + replacement + text[match.end() :]
        out.append(Substitution(query, changed, match.group(), replacement))
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not (np.isfinite(vectors).all() and (norms > 0).all()):
        raise ValueError("the encoder gave a vector with a NaN, an infinity or all zeros")
    return vectors / norms


def _subset(ranking: Ranking, queries: np.ndarray) -> Ranking:
    """The rows of ``ranking`` (queries in increasing order) of ``queries``, each of them."""
    rows = np.searchsorted(ranking.queries, queries)
    return Ranking(
        queries=ranking.queries[rows],
        truth=ranking.truth[rows],
        rank=ranking.rank[rows],
        first=ranking.first[rows],
        n_images=ranking.n_images,
        unanswerable=0,
    )


def kind_effects(baseline: Ranking, changed: Ranking, n_images: int) -> dict:
    """The ground truths' moves and the figures before and after, over the changed queries
    (both rankings of the same queries, in the same order)."""
    before, after = baseline.rank, changed.rank
    figures_before, figures_after = ranking_figures(before, n_images), ranking_figures(after, n_images)
    effects = {
        "queries": int(before.size),
        "falls": int((after > before).sum()),
        "stays": int((after == before).sum()),
        "rises": int((after < before).sum()),
        "before": figures_before,
        "after": figures_after,
    }
    effects["change"] = {
        key: (None if figures_before[key] is None else figures_after[key] - figures_before[key])
        for key in figures_before
        if key.startswith(("R@", "MRR@"))
    }
    return effects


def adversarial_run(
    captions: np.ndarray,
    caption_image: np.ndarray,
    corpora: Corpora,
    caption_texts: Sequence[str],
    encode: Encoder,
    *,
    table: Substitutes,
    seed: int = 0,
    kinds: Sequence[str] = KINDS,
    progress: Callable[[str], None] = lambda message: None,
    changed: list[dict] | None = None,
) -> dict:
    """Per kind: the substitutions' effects (``kind_effects``) and ``examples``, the first
    few changed captions. ``encode(texts)`` -> float (n, d), the model's own encoder.
    ``changed``, when given, receives one dict per changed caption: kind, query (caption
    index), word, replacement, text, rank_before, rank_after."""
    out = {}
    everyone = rank_queries(captions, caption_image, corpora)
    for number, kind in enumerate(kinds):
        rng = np.random.default_rng([seed, number])
        progress(f"adversarial queries: {kind}")
        changes = substitute(caption_texts, kind, table, rng)
        queries = np.fromiter((change.query for change in changes), np.int64, len(changes))
        kept = np.isin(queries, everyone.queries)  # a query without another caption is not asked
        changes = [change for change, keep in zip(changes, kept, strict=True) if keep]
        baseline = _subset(everyone, queries[kept])
        vectors = _unit(encode([change.text for change in changes])) if changes else None
        after = rank_queries(captions, caption_image, corpora, baseline.queries, vectors)
        if changed is not None:
            changed += [
                {
                    "kind": kind,
                    "query": change.query,
                    "word": change.word,
                    "replacement": change.replacement,
                    "text": change.text,
                    "rank_before": int(before),
                    "rank_after": int(later),
                }
                for change, before, later in zip(changes, baseline.rank, after.rank, strict=True)
            ]
        out[kind] = kind_effects(baseline, after, corpora.counts.shape[0]) | {
            "examples": [
                {"query": c.query, "word": c.word, "replacement": c.replacement, "text": c.text} for c in changes[:5]
            ]
        }
    return out
