"""The visual categories' WordNet tables (``data/``, built by scripts/build_wordnet_tables.py
from WordNet 3.1), read once: each category's synset and the terms a caption names it by,
the path similarity between two categories, and adjective antonyms. No Django, no nltk,
nothing downloaded.

Category names are compared case-folded with runs of white space as one space
(``"Teddy  Bear"`` is ``"teddy bear"``); an unknown name raises UnknownCategory.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"
# A word: letters, with inner hyphens ("double-decker"); an apostrophe ends one ("cat's").
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


class UnknownCategory(KeyError):
    """A category name the tables do not hold."""

    def __str__(self) -> str:
        return f"category {self.args[0]!r} is not in the WordNet tables (annotation/evaluation/explain/data)"


def category_key(name: str) -> str:
    """The form names are compared in: case-folded, white space collapsed."""
    return " ".join(name.casefold().split())


def words(text: str) -> list[str]:
    """The lower-case words of a caption or a term, in order."""
    return _WORD.findall(text.casefold())


@dataclass(frozen=True)
class Category:
    name: str
    coco_id: int | None
    synset: str
    definition: str
    terms: tuple[str, ...]


class Vocabulary:
    """The categories of ``categories.json`` and their path lengths in WordNet's noun
    hierarchy: ``path_lengths`` int (n, n), in the order of ``categories``."""

    def __init__(self, categories: list[Category], path_lengths: np.ndarray):
        if path_lengths.shape != (len(categories), len(categories)):
            raise ValueError(f"path lengths {path_lengths.shape} for {len(categories)} categories")
        self.categories = tuple(categories)
        self.path_lengths = path_lengths
        self._index = {category_key(category.name): i for i, category in enumerate(categories)}
        self._named_by: dict[tuple[str, ...], set[str]] = {}
        for category in categories:
            for term in (category.name, *category.terms):
                self._named_by.setdefault(tuple(words(term)), set()).add(category.name)
        self._longest_term = max(len(term) for term in self._named_by)

    def __contains__(self, name: str) -> bool:
        return category_key(name) in self._index

    def category(self, name: str) -> Category:
        return self.categories[self._position(name)]

    def _position(self, name: str) -> int:
        try:
            return self._index[category_key(name)]
        except KeyError:
            raise UnknownCategory(name) from None

    def path_similarity(self, first: str, second: str) -> float:
        """WordNet's path similarity of the two categories' synsets: 1 / (1 + the shortest
        path length between them), 1.0 for one category."""
        return 1.0 / (1.0 + float(self.path_lengths[self._position(first), self._position(second)]))

    def named_in(self, caption: str) -> frozenset[str]:
        """The categories a caption names: by name, by a synonym or a chosen word of the
        table, singular or plural. The longest term wins where terms overlap ("hot dog"
        names the hot dog, not the dog); a term naming several categories ("bike") names
        them all."""
        tokens, found, start = words(caption), set(), 0
        while start < len(tokens):
            for length in range(min(self._longest_term, len(tokens) - start), 0, -1):
                named = self._named_by.get(tuple(tokens[start : start + length]))
                if named:
                    found |= named
                    start += length
                    break
            else:
                start += 1
        return frozenset(found)


@functools.cache
def vocabulary() -> Vocabulary:
    """The committed category table, read once per process."""
    table = json.loads((DATA_DIR / "categories.json").read_text(encoding="utf-8"))
    categories = [
        Category(
            name=entry["name"],
            coco_id=entry["coco_id"],
            synset=entry["synset"],
            definition=entry["definition"],
            terms=tuple(entry["terms"]),
        )
        for entry in table["categories"]
    ]
    return Vocabulary(categories, np.asarray(table["path_lengths"], dtype=np.int16))


@functools.cache
def antonyms() -> dict[str, tuple[str, ...]]:
    """Adjective lemma (lower case, words separated by spaces) -> its direct antonyms in
    WordNet 3.1, sorted. Satellite adjectives ("huge") have none of their own."""
    table = json.loads((DATA_DIR / "antonyms.json").read_text(encoding="utf-8"))
    return {word: tuple(others) for word, others in table["antonyms"].items()}
