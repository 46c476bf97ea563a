"""Caption-to-corpus ranking and its failure set. Pure numpy.

Queries are captions. Each image's **corpus** is the mean of its captions' vectors; the
query's own (ground-truth) image is represented by its *other* descriptions, the mean
without the query caption (leave-one-out), while every other image's corpus holds all of
its captions (the query is not one of them, so nothing is left out there). Cosine
similarity between the query and each corpus mean ranks the images.

- The rank of the ground truth is 1 + the number of other images scoring at least as
  high: ties count against the model, as everywhere in the evaluation.
- A **failure** is a query whose ground truth is not at rank 1; it pairs the ground truth
  I_g with the image ranked first in its place, I_r (the best-scoring other image, the
  lowest index among equals).
- A query whose image has no other caption has no ground-truth corpus: it is not asked
  (counted in ``unanswerable``). An image without captions is no candidate.

Figures: Recall@K (percent of queries whose ground truth is within the top K), MRR@K (mean
of 1/rank where rank <= K, else 0), at K = 5, 10 and N (every image), and the median rank.

Memory: the scores are computed for a block of queries at a time (``BLOCK_QUERIES`` x
images float32), the corpus matrix once (images x d float32); the own corpus is corrected
per query from the image's caption sum minus the query vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANK_CUTOFFS = (5, 10)
BLOCK_QUERIES = 2048


@dataclass(frozen=True)
class Corpora:
    """Every image's corpus: ``sums`` float64 (n_images, d) the sum of its captions'
    vectors, ``counts`` int64 (n_images,) how many, ``unit`` float32 (n_images, d) the
    L2-normalized mean (zero rows for images without captions)."""

    sums: np.ndarray
    counts: np.ndarray
    unit: np.ndarray


@dataclass(frozen=True)
class Ranking:
    """The ranking of ``queries`` int64 (q,) caption indices: ``truth`` int64 (q,) each
    query's image, ``rank`` int64 (q,) the ground truth's 1-based rank, ``first`` int64
    (q,) the image ranked first, ``n_images`` the candidates."""

    queries: np.ndarray
    truth: np.ndarray
    rank: np.ndarray
    first: np.ndarray
    n_images: int
    unanswerable: int

    @property
    def failures(self) -> np.ndarray:
        """Positions (into ``queries``) of the failures, in query order."""
        return np.flatnonzero(self.rank > 1)


def _check(captions: np.ndarray, caption_image: np.ndarray, n_images: int) -> None:
    if captions.ndim != 2:
        raise ValueError(f"caption vectors: expected (n, d), got shape {captions.shape}")
    if caption_image.shape != (captions.shape[0],):
        raise ValueError(f"caption_image: expected ({captions.shape[0]},), got {caption_image.shape}")
    if caption_image.size and (caption_image.min() < 0 or caption_image.max() >= n_images):
        raise ValueError(f"caption_image: image indices must lie in [0, {n_images})")


def build_corpora(captions: np.ndarray, caption_image: np.ndarray, n_images: int) -> Corpora:
    """``captions`` float (n, d), L2-normalized; ``caption_image`` int (n,) each caption's
    image in [0, n_images)."""
    caption_image = np.asarray(caption_image, np.int64)
    _check(captions, caption_image, n_images)
    sums = np.zeros((n_images, captions.shape[1]), np.float64)
    np.add.at(sums, caption_image, np.asarray(captions, np.float64))
    counts = np.bincount(caption_image, minlength=n_images).astype(np.int64)
    norms = np.linalg.norm(sums, axis=1)
    unit = np.zeros_like(sums, dtype=np.float32)
    positive = norms > 0
    unit[positive] = sums[positive] / norms[positive, None]
    return Corpora(sums=sums, counts=counts, unit=unit)


def _own_scores(query_vectors: np.ndarray, left_out: np.ndarray, own_sums: np.ndarray) -> np.ndarray:
    """Cosine of each query with its image's corpus without the left-out caption: float64
    (b,); NaN where the other captions sum to zero (no direction to compare with)."""
    rest = own_sums - left_out
    norms = np.linalg.norm(rest, axis=1)
    dots = np.einsum("ij,ij->i", np.asarray(query_vectors, np.float64), rest)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, dots / norms, np.nan)


# Below every cosine: a ground truth without a corpus direction ranks after every candidate.
_NO_SCORE = np.float32(-2.0)


def rank_queries(
    captions: np.ndarray,
    caption_image: np.ndarray,
    corpora: Corpora,
    queries: np.ndarray | None = None,
    query_vectors: np.ndarray | None = None,
    *,
    block: int = BLOCK_QUERIES,
) -> Ranking:
    """Rank every image's corpus for each query caption of ``queries`` (default: all).

    ``query_vectors`` float (q, d), L2-normalized, when given, replaces the captions' own
    vectors as the queries (a changed caption re-embedded); the own corpus still leaves
    out the query caption's original vector ``captions[query]``.
    """
    caption_image = np.asarray(caption_image, np.int64)
    n_images = corpora.counts.shape[0]
    _check(captions, caption_image, n_images)
    queries = np.arange(captions.shape[0]) if queries is None else np.asarray(queries, np.int64)
    if query_vectors is not None and query_vectors.shape != (queries.size, captions.shape[1]):
        raise ValueError(f"query vectors: expected {(queries.size, captions.shape[1])}, got {query_vectors.shape}")
    answerable = corpora.counts[caption_image[queries]] > 1
    unanswerable = int((~answerable).sum())
    if query_vectors is not None:
        query_vectors = query_vectors[answerable]
    queries = queries[answerable]
    truth = caption_image[queries]
    rank = np.empty(queries.size, np.int64)
    first = np.empty(queries.size, np.int64)
    candidates = corpora.counts > 0
    for start in range(0, queries.size, block):
        stop = min(start + block, queries.size)
        ids, own = queries[start:stop], truth[start:stop]
        vectors = captions[ids] if query_vectors is None else query_vectors[start:stop]
        vectors = np.asarray(vectors, np.float32)
        scores = vectors @ corpora.unit.T
        scores[:, ~candidates] = -np.inf
        own_score = _own_scores(vectors, captions[ids], corpora.sums[own]).astype(np.float32)
        own_score[np.isnan(own_score)] = _NO_SCORE
        rows = np.arange(stop - start)
        scores[rows, own] = -np.inf  # the own image competes through its own score only
        rank[start:stop] = 1 + np.count_nonzero(~(scores < own_score[:, None]), axis=1)
        best_other = scores.argmax(axis=1)
        first[start:stop] = np.where(rank[start:stop] == 1, own, best_other)
    return Ranking(queries=queries, truth=truth, rank=rank, first=first, n_images=n_images, unanswerable=unanswerable)


def ranking_figures(rank: np.ndarray, n_images: int) -> dict:
    """|F|, Recall@K and MRR@K at K = 5, 10 and N (``n_images``), the median rank, over
    the queries' ground-truth ranks ``rank`` int (q,) >= 1."""
    rank = np.asarray(rank, np.int64)
    figures: dict = {"queries": int(rank.size), "failures": int((rank > 1).sum()), "candidates": int(n_images)}
    reciprocal = 1.0 / rank if rank.size else rank.astype(np.float64)
    for name, cutoff in (*((str(k), k) for k in RANK_CUTOFFS), ("N", n_images)):
        within = rank <= cutoff
        figures[f"R@{name}"] = float(100.0 * within.mean()) if rank.size else None
        figures[f"MRR@{name}"] = float(np.where(within, reciprocal, 0.0).mean()) if rank.size else None
    figures["median_rank"] = float(np.median(rank)) if rank.size else None
    return figures
