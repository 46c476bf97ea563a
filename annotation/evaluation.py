"""Score a model's embeddings against a rated dataset with the CxC metrics. Pure numpy, no Django.

The ratings are CxC-format CSV files (``sts_<split>.csv``, ``sis_<split>.csv``,
``sits_<split>.csv``: two item ids, ``agg_score``, ``sampling_method``), ours or the
public release; the split's items and their original image-caption pairs come from the
caller (the imported dataset).

Retrieval (Recall@1/5/10 and median rank of the first correct item, 1-based):

- image->text and text->image, positives: the original pairs ("original"), and the
  original pairs plus every SITS pair scored >= 3 ("cxc");
- text->text, positives: STS pairs scored >= 3; image->image: SIS pairs scored >= 2.5.
  Candidates are all other items of the split; the query itself is never a candidate.

Queries are the items with at least one positive. The rank of the first correct item
is 1 + the number of non-positive candidates scoring at least as high as the best
positive: ties count against the model, so a constant model cannot score well. Ranks
are counted from blocked matrix products, never by sorting whole rows.

A pair rated in more than one row (the public SIS file rates some pairs in both orders)
is a positive when the mean of its rows reaches the threshold.

Correlation with human scores (STS, SIS, SITS): the sampled bootstrap of the CxC paper.
Each of ``samples`` samples takes half of the queries at random (a query is the first
item of a row, as the file writes it) and, per query, one of its rated rows at random;
Spearman's rho (average ranks for ties) between the human scores and the model's
cosine similarities. Reported as mean and standard deviation over the samples, x 100.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sampling.embeddings import EmbeddingError, check_rows_match_ids, load_vectors, read_ids

STS, SIS, SITS = "STS", "SIS", "SITS"
KINDS = (STS, SIS, SITS)
POSITIVE_AT = {STS: 3.0, SIS: 2.5, SITS: 3.0}
RECALL_AT = (1, 5, 10)
BOOTSTRAP_SAMPLES = 1000
SCORE_RANGE = (0.0, 5.0)

# Column names of each task's file, exactly as the CxC release writes them; the
# sampling_method column after them is optional.
COLUMNS = {
    STS: ("caption1", "caption2", "agg_score"),
    SIS: ("image1", "image2", "agg_score"),
    SITS: ("caption", "image", "agg_score"),
}
FILE_PREFIX = {STS: "sts", SIS: "sis", SITS: "sits"}
IMAGE, CAPTION = "image", "caption"
# Modality of (first, second) item of each kind's rows.
MODALITIES = {STS: (CAPTION, CAPTION), SIS: (IMAGE, IMAGE), SITS: (CAPTION, IMAGE)}

# Bytes of one block of similarity scores: bounds memory for any split size (a full
# 25k x 25k float32 matrix would be 2.5 GB).
BLOCK_BYTES = 64 * 1024 * 1024
# Bytes of vectors gathered at a time (validating, pair cosines).
CHUNK_BYTES = 16 * 1024 * 1024
# Values drawn at a time by the bootstrap: a chunk of samples, each over all queries.
BOOTSTRAP_CHUNK_VALUES = 1024 * 1024

Progress = Callable[[str], None]


def _quiet(message: str) -> None:
    pass


class EvaluationError(ValueError):
    """Input that cannot be evaluated. The message names the file, the ids or the rows."""


# --- input ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RatedPairs:
    """One task's rated rows, in file order.

    ``first``/``second``: item ids of each row (for SITS: caption, image);
    ``scores``: float64 (n,), the rows' ``agg_score`` in 0-5.
    """

    kind: str
    source: str
    first: list[str]
    second: list[str]
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.first)


def ratings_file(folder: str | os.PathLike, split: str, kind: str) -> Path:
    return Path(folder) / f"{FILE_PREFIX[kind]}_{split}.csv"


def read_cxc_ratings(path: str | os.PathLike, kind: str) -> RatedPairs:
    """Read one CxC-format ratings file of the given kind (STS, SIS or SITS).

    The header must begin with the kind's columns (``caption1,caption2,agg_score`` ...).
    Raises EvaluationError naming the file and line for a wrong header, a short row, an
    empty id, a score that is not a number in 0-5, or an item paired with itself.
    """
    path = Path(path)
    if kind not in COLUMNS:
        raise EvaluationError(f"unknown rating kind {kind!r}; expected one of {', '.join(KINDS)}")
    expected = COLUMNS[kind]
    first: list[str] = []
    second: list[str] = []
    scores: list[float] = []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise EvaluationError(f"{path}: empty file; expected a header {','.join(expected)},sampling_method")
            header = [name.strip().lstrip("\ufeff") for name in header]
            if tuple(header[:3]) != expected:
                raise EvaluationError(
                    f"{path}: header is {','.join(header)!r}; a {kind} file starts with {','.join(expected)}"
                )
            for row in reader:
                line = reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) < 3:
                    raise EvaluationError(f"{path}: line {line} has {len(row)} field(s); expected at least 3")
                a, b, raw = row[0].strip(), row[1].strip(), row[2].strip()
                if not a or not b:
                    raise EvaluationError(f"{path}: line {line} has an empty item id")
                if a == b:
                    raise EvaluationError(f"{path}: line {line} pairs {a!r} with itself")
                try:
                    score = float(raw)
                except ValueError:
                    raise EvaluationError(f"{path}: line {line}: agg_score {raw!r} is not a number") from None
                if not (SCORE_RANGE[0] <= score <= SCORE_RANGE[1]):
                    raise EvaluationError(f"{path}: line {line}: agg_score {raw} is outside 0-5")
                first.append(a)
                second.append(b)
                scores.append(score)
    except FileNotFoundError:
        raise EvaluationError(f"{path}: ratings file not found") from None
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{path}: not UTF-8 text ({exc})") from None
    return RatedPairs(kind=kind, source=str(path), first=first, second=second, scores=np.asarray(scores, np.float64))


def read_ratings_folder(folder: str | os.PathLike, split: str) -> dict[str, RatedPairs]:
    """Read the split's ratings files that exist in ``folder``; a missing kind is left out.

    Raises EvaluationError naming the folder and the expected file names when the split
    has no rated row at all.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise EvaluationError(f"ratings folder {folder} not found")
    found = {
        kind: read_cxc_ratings(ratings_file(folder, split, kind), kind)
        for kind in KINDS
        if _exists(folder, split, kind)
    }
    if not any(len(pairs) for pairs in found.values()):
        names = ", ".join(ratings_file(folder, split, kind).name for kind in KINDS)
        what = "has only empty ratings files" if found else "has no ratings files"
        raise EvaluationError(f"split {split!r} {what} in {folder}: expected rated rows in {names}")
    return found


def _exists(folder: Path, split: str, kind: str) -> bool:
    return ratings_file(folder, split, kind).is_file()


@dataclass(frozen=True)
class Space:
    """A model's vectors for one modality: ``vectors`` float (n, d), any float dtype,
    possibly a read-only mmap; ``ids[i]`` is the item key of row i."""

    vectors: np.ndarray
    ids: list[str]
    source: str

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])


def load_space(vectors_path: str | os.PathLike, ids_path: str | os.PathLike) -> Space:
    """Open a ``.npy`` (mmap) with its ids file (one key per line, in row order)."""
    try:
        vectors = load_vectors(vectors_path)
        ids = read_ids(ids_path)
        check_rows_match_ids(vectors, ids, str(vectors_path), str(ids_path))
    except EmbeddingError as exc:
        raise EvaluationError(str(exc)) from None
    return Space(vectors=vectors, ids=ids, source=str(vectors_path))


@dataclass(frozen=True)
class SplitItems:
    """The split's items in a fixed order: ``caption_image`` int64 (n_captions,) gives
    each caption's original image as an index into ``image_keys``."""

    name: str
    image_keys: list[str]
    caption_keys: list[str]
    caption_image: np.ndarray
    image_index: dict[str, int] = field(init=False, repr=False)
    caption_index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "image_index", {key: i for i, key in enumerate(self.image_keys)})
        object.__setattr__(self, "caption_index", {key: i for i, key in enumerate(self.caption_keys)})

    @classmethod
    def from_pairs(cls, name: str, image_keys: Sequence[str], caption_pairs: Sequence[tuple[str, str]]) -> SplitItems:
        """``caption_pairs``: (caption key, image key) of every caption of the split."""
        index = {key: i for i, key in enumerate(image_keys)}
        try:
            caption_image = np.fromiter((index[image] for _, image in caption_pairs), np.int64, len(caption_pairs))
        except KeyError as exc:
            raise EvaluationError(f"caption of image {exc.args[0]!r}, which is not in split {name!r}") from None
        return cls(name, list(image_keys), [caption for caption, _ in caption_pairs], caption_image)


def embed_items(space: Space, keys: Sequence[str], what: str) -> np.ndarray:
    """Rows of ``space`` for ``keys``, in that order, as float32 (len(keys), d), L2-normalized.

    Raises EvaluationError when keys lack a vector (count and the first ids), or when a
    used row holds NaN/infinity or is all zeros (row number and id).
    """
    row_of = {key: row for row, key in enumerate(space.ids)}
    missing = [key for key in keys if key not in row_of]
    if missing:
        raise EvaluationError(f"{space.source}: no vector for {len(missing)} {what}(s) of the split: {_show(missing)}")
    rows = np.fromiter((row_of[key] for key in keys), np.int64, len(keys))
    out = np.empty((len(keys), space.dimension), np.float32)
    step = _chunk_rows(8 * space.dimension)
    for start in range(0, len(rows), step):
        chunk_rows = rows[start : start + step]
        chunk = np.asarray(space.vectors[chunk_rows], dtype=np.float64)
        finite = np.isfinite(chunk).all(axis=1)
        if not finite.all():
            row = int(chunk_rows[np.argmin(finite)])
            raise EvaluationError(f"{space.source}: row {row} (id {space.ids[row]!r}) has a NaN or infinite value")
        norms = np.linalg.norm(chunk, axis=1)
        if not (norms > 0).all():
            row = int(chunk_rows[np.argmin(norms > 0)])
            raise EvaluationError(f"{space.source}: row {row} (id {space.ids[row]!r}) is all zeros")
        out[start : start + len(chunk_rows)] = chunk / norms[:, None]
    return out


def _chunk_rows(row_bytes: int) -> int:
    return max(1, CHUNK_BYTES // row_bytes)


def _show(keys: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


# --- retrieval -----------------------------------------------------------------------


@dataclass(frozen=True)
class Positives:
    """Sparse positive lists: the positives of query q are
    ``indices[indptr[q]:indptr[q + 1]]`` (candidate indices, sorted, unique).
    ``indptr`` int64 (n_queries + 1,), ``indices`` int64 (n_positives,)."""

    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def from_pairs(cls, queries: np.ndarray, targets: np.ndarray, n_queries: int, n_targets: int) -> Positives:
        """Build from parallel int arrays (query index, candidate index); repeats are merged."""
        queries = np.asarray(queries, np.int64)
        targets = np.asarray(targets, np.int64)
        keys = np.unique(queries * n_targets + targets)
        counts = np.bincount(keys // n_targets, minlength=n_queries)
        indptr = np.zeros(n_queries + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr=indptr, indices=keys % n_targets)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.indptr)


def block_rows_for(n_candidates: int) -> int:
    return max(1, BLOCK_BYTES // (4 * max(n_candidates, 1)))


def first_correct_ranks(
    queries: np.ndarray,
    candidates: np.ndarray,
    positive_sets: Sequence[Positives],
    *,
    exclude: np.ndarray | None = None,
    block_rows: int | None = None,
) -> list[np.ndarray]:
    """Rank (1-based) of the first correct candidate of every query, per positive set.

    ``queries`` float32 (q, d) and ``candidates`` float32 (n, d): scores are their dot
    products (cosines when rows are L2-normalized). ``exclude`` int (q,): a candidate
    index to leave out per query (the query itself in intramodal retrieval), -1 for none.
    Returns one int64 array (q,) per positive set; 0 marks a query without positives.
    A candidate that ties the best positive counts as ranked ahead of it.
    """
    q, n = queries.shape[0], candidates.shape[0]
    block_rows = block_rows or block_rows_for(n)
    ranks = [np.zeros(q, np.int64) for _ in positive_sets]
    for start in range(0, q, block_rows):
        stop = min(start + block_rows, q)
        scores = queries[start:stop] @ candidates.T
        local = np.arange(stop - start)
        if exclude is not None:
            own = np.asarray(exclude[start:stop])
            keep = own >= 0
            scores[local[keep], own[keep]] = -np.inf
        for positives, out in zip(positive_sets, ranks, strict=True):
            ptr = positives.indptr[start : stop + 1]
            counts = np.diff(ptr)
            has = counts > 0
            if not has.any():
                continue
            rows = np.repeat(local, counts)
            values = scores[rows, positives.indices[ptr[0] : ptr[-1]]]
            best = np.full(stop - start, np.inf, dtype=scores.dtype)
            best[has] = np.maximum.reduceat(values, (ptr[:-1] - ptr[0])[has])
            ahead = np.count_nonzero(scores >= best[:, None], axis=1)
            positives_ahead = np.bincount(rows, weights=values >= best[rows], minlength=stop - start)
            out[start:stop] = np.where(has, ahead - positives_ahead.astype(np.int64) + 1, 0)
    return ranks


def retrieval_summary(ranks: np.ndarray, n_candidates: int, n_positives: int) -> dict:
    """Recall@K (percent of queries whose first correct item is within the top K) and the
    median first-correct rank over the queries (ranks > 0)."""
    ranks = ranks[ranks > 0]
    summary = {"queries": int(ranks.size), "candidates": int(n_candidates), "positives": int(n_positives)}
    for k in RECALL_AT:
        summary[f"R@{k}"] = float(100.0 * np.mean(ranks <= k)) if ranks.size else None
    summary["median_rank"] = float(np.median(ranks)) if ranks.size else None
    return summary


# --- correlation ---------------------------------------------------------------------


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks (1-based, float64) along the last axis; tied values share their average rank."""
    values = np.asarray(values)
    shape = values.shape
    n = shape[-1]
    flat = values.reshape(-1, n)
    # Ties get their average rank whatever their order, so the fast unstable sort will do.
    order = np.argsort(flat, axis=1)
    ordered = np.take_along_axis(flat, order, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    # One run of equal values per group; positions are 0-based within the whole array.
    begin = np.flatnonzero(starts)
    end = np.append(begin[1:], starts.size)
    column = begin % n
    mean_rank = column + (end - begin + 1) / 2.0
    group = np.cumsum(starts.ravel()) - 1
    ranks = np.empty(flat.shape, np.float64)
    np.put_along_axis(ranks, order, mean_rank[group].reshape(flat.shape), axis=1)
    return ranks.reshape(shape)


def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Spearman's rho along the last axis (Pearson of average ranks); NaN where either
    side is constant, where rho is undefined."""
    rx = average_ranks(x)
    ry = average_ranks(y)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(axis=-1) / denominator
    rho = np.where(denominator > 0, np.clip(rho, -1.0, 1.0), np.nan)
    return float(rho) if rho.ndim == 0 else rho


MIN_BOOTSTRAP_QUERIES = 4


def bootstrap_rows(queries: np.ndarray, *, samples: int, seed: int) -> Iterator[np.ndarray]:
    """Draw the bootstrap samples: yields int64 arrays (chunk, n_queries // 2) of row
    indices, ``samples`` rows in all. Each sample holds half of the distinct queries,
    drawn without replacement, and for each one of its rows, drawn uniformly.

    ``queries``: int (n,), the query of each row. The same queries and seed give the same
    samples. Raises EvaluationError for fewer than 4 queries or samples < 1.
    """
    queries = np.asarray(queries)
    if samples < 1:
        raise EvaluationError(f"bootstrap samples must be at least 1, got {samples}")
    order = np.argsort(queries, kind="stable")
    _, starts, counts = np.unique(queries[order], return_index=True, return_counts=True)
    n_queries = starts.size
    if n_queries < MIN_BOOTSTRAP_QUERIES:
        raise EvaluationError(f"{n_queries} rated queries; the bootstrap needs at least {MIN_BOOTSTRAP_QUERIES}")
    half = n_queries // 2
    rng = np.random.default_rng(seed)
    chunk = max(1, min(samples, BOOTSTRAP_CHUNK_VALUES // n_queries))
    for begin in range(0, samples, chunk):
        size = min(chunk, samples - begin)
        keys = rng.random((size, n_queries))
        # The half with the smallest random keys is a uniform draw without replacement.
        chosen = np.argpartition(keys, half - 1, axis=1)[:, :half]
        offsets = (rng.random((size, half)) * counts[chosen]).astype(np.int64)
        yield order[starts[chosen] + offsets]


def bootstrap_spearman(
    human: np.ndarray,
    model: np.ndarray,
    queries: np.ndarray,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> dict:
    """The CxC sampled bootstrap of Spearman's rho between human and model scores.

    ``human``, ``model``: float (n,), one value per rated row; ``queries``: int (n,), the
    query each row belongs to. Samples as ``bootstrap_rows``. Returns mean and std
    (x 100, population std) over the samples where rho is defined, and the counts. The
    same inputs and seed give the same figures. Raises EvaluationError for fewer than 4
    queries.
    """
    human = np.asarray(human, np.float64)
    model = np.asarray(model, np.float64)
    queries = np.asarray(queries)
    if not (human.shape == model.shape == queries.shape) or human.ndim != 1:
        raise EvaluationError(
            f"human, model and query arrays must be 1-D of one length, "
            f"got shapes {human.shape}, {model.shape}, {queries.shape}"
        )
    rhos = np.concatenate(
        [spearman(human[rows], model[rows]) for rows in bootstrap_rows(queries, samples=samples, seed=seed)]
    )
    defined = rhos[~np.isnan(rhos)]
    n_queries = np.unique(queries).size
    return {
        "mean": float(100.0 * defined.mean()) if defined.size else None,
        "std": float(100.0 * defined.std()) if defined.size else None,
        "samples": samples,
        "undefined_samples": int(samples - defined.size),
        "seed": seed,
        "queries": int(n_queries),
        "rows": int(human.size),
        "rows_per_sample": int(n_queries // 2),
    }


def pair_cosines(a: np.ndarray, b: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """float64 (n,): dot products of rows ``a[ia]`` and ``b[ib]`` (cosines for normalized rows)."""
    out = np.empty(len(ia), np.float64)
    step = _chunk_rows(2 * a.itemsize * a.shape[1])
    for start in range(0, len(ia), step):
        stop = start + step
        out[start:stop] = np.einsum("ij,ij->i", a[ia[start:stop]], b[ib[start:stop]], dtype=np.float64)
    return out


# --- the whole evaluation --------------------------------------------------------------


@dataclass
class _Indexed:
    """One kind's rows mapped to split item indices (rows outside the split dropped only
    when asked)."""

    first: np.ndarray
    second: np.ndarray
    scores: np.ndarray
    rows: int
    left_out: int


def _index_rows(
    pairs: RatedPairs, items: SplitItems, spaces: dict[str, Space | None], restrict_to_split: bool
) -> _Indexed:
    first_modality, second_modality = MODALITIES[pairs.kind]
    lookups = []
    for keys, modality in ((pairs.first, first_modality), (pairs.second, second_modality)):
        index = items.image_index if modality == IMAGE else items.caption_index
        lookups.append(np.fromiter((index.get(key, -1) for key in keys), np.int64, len(keys)))
    inside = (lookups[0] >= 0) & (lookups[1] >= 0)
    if not inside.all() and not restrict_to_split:
        for keys, found, modality in (
            (pairs.first, lookups[0], first_modality),
            (pairs.second, lookups[1], second_modality),
        ):
            outside = sorted({keys[i] for i in np.flatnonzero(found < 0)})
            if not outside:
                continue
            space = spaces[modality]
            known = set(space.ids) if space is not None else set()
            no_vector = [key for key in outside if key not in known]
            if space is not None and no_vector:
                raise EvaluationError(
                    f"{pairs.source}: the {modality} vectors ({space.source}) lack {len(no_vector)} "
                    f"{modality} id(s) of the ratings: {_show(no_vector)}"
                )
            raise EvaluationError(
                f"{pairs.source}: {len(outside)} {modality} id(s) are not {modality}s of split {items.name!r} "
                f"of the dataset: {_show(outside)} (--restrict-to-split evaluates only the rows inside the split)"
            )
    return _Indexed(
        first=lookups[0][inside],
        second=lookups[1][inside],
        scores=pairs.scores[inside],
        rows=len(pairs),
        left_out=int((~inside).sum()),
    )


def _modality(kind: str) -> str:
    return MODALITIES[kind][0]


def _pair_means(first: np.ndarray, second: np.ndarray, scores: np.ndarray, n_second: int, unordered: bool):
    """Merge repeated pairs: returns (first, second, mean score) of each distinct pair."""
    a, b = (np.minimum(first, second), np.maximum(first, second)) if unordered else (first, second)
    keys, inverse = np.unique(a * n_second + b, return_inverse=True)
    means = np.bincount(inverse, weights=scores) / np.bincount(inverse)
    return keys // n_second, keys % n_second, means


def evaluate(
    *,
    items: SplitItems,
    ratings: dict[str, RatedPairs],
    image_space: Space | None,
    caption_space: Space | None,
    joint: bool,
    restrict_to_split: bool = False,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
    progress: Progress = _quiet,
) -> dict:
    """Run every task the inputs allow; returns the JSON-ready report.

    ``joint``: image and caption vectors share one space (a dual encoder), so the
    intermodal tasks run; otherwise only the intramodal ones. Every item of the split
    must have a vector in each given space; every rated id must be an item of the split
    unless ``restrict_to_split`` (then rows outside it are left out and counted).
    A task that cannot run is listed under ``skipped`` with the reason.
    """
    if image_space is None and caption_space is None:
        raise EvaluationError("give image vectors, caption vectors or both")
    if samples < 1:
        raise EvaluationError(f"bootstrap samples must be at least 1, got {samples}")
    if joint and (image_space is None or caption_space is None):
        raise EvaluationError("a joint space needs both image and caption vectors")
    if joint and image_space.dimension != caption_space.dimension:
        raise EvaluationError(
            f"image vectors have {image_space.dimension} dimensions and caption vectors {caption_space.dimension}; "
            "a joint space needs one dimension (evaluate unimodal spaces as such)"
        )
    if not items.image_keys or not items.caption_keys:
        raise EvaluationError(f"split {items.name!r} has no images or no captions")
    n_images, n_captions = len(items.image_keys), len(items.caption_keys)
    progress("reading vectors")
    images = embed_items(image_space, items.image_keys, IMAGE) if image_space is not None else None
    captions = embed_items(caption_space, items.caption_keys, CAPTION) if caption_space is not None else None
    spaces = {IMAGE: image_space, CAPTION: caption_space}

    report: dict = {
        "split": items.name,
        "spaces": "joint" if joint else "unimodal",
        "items": {"images": n_images, "captions": n_captions},
        "ratings": {},
        "retrieval": {},
        "correlation": {},
        "skipped": {},
        "settings": {
            "positive_at": dict(POSITIVE_AT),
            "recall_at": list(RECALL_AT),
            "samples": samples,
            "seed": seed,
            "ties": "a candidate tied with the best positive ranks ahead of it",
        },
    }
    needs = {STS: captions is not None, SIS: images is not None, SITS: joint}
    indexed: dict[str, _Indexed] = {}
    for kind in KINDS:
        pairs = ratings.get(kind)
        if pairs is None:
            report["ratings"][kind] = {"file": None, "rows": 0}
            continue
        entry = {"file": pairs.source, "rows": len(pairs)}
        report["ratings"][kind] = entry
        if needs[kind] and len(pairs):
            indexed[kind] = _index_rows(pairs, items, spaces, restrict_to_split)
            entry["rows_used"] = int(indexed[kind].scores.size)
            entry["rows_left_out"] = indexed[kind].left_out

    def skip(task: str, why: str) -> None:
        report["skipped"][task] = why

    def no_rows(kind: str) -> str | None:
        if kind not in ratings:
            return f"no {FILE_PREFIX[kind]}_<split>.csv file for the split"
        if kind not in indexed or not indexed[kind].scores.size:
            return f"no {kind} rows inside split {items.name!r}"
        return None

    # Intermodal retrieval: the original pairs, then with SITS >= 3 added.
    if joint:
        caption_ids = np.arange(n_captions)
        original_t2i = Positives.from_pairs(caption_ids, items.caption_image, n_captions, n_images)
        original_i2t = Positives.from_pairs(items.caption_image, caption_ids, n_images, n_captions)
        sets_i2t, sets_t2i, names = [original_i2t], [original_t2i], ["original"]
        reason = no_rows(SITS)
        if reason is None:
            rows = indexed[SITS]
            cap, img, mean = _pair_means(rows.first, rows.second, rows.scores, n_images, unordered=False)
            good = mean >= POSITIVE_AT[SITS]
            all_caps = np.concatenate([caption_ids, cap[good]])
            all_imgs = np.concatenate([items.caption_image, img[good]])
            sets_i2t.append(Positives.from_pairs(all_imgs, all_caps, n_images, n_captions))
            sets_t2i.append(Positives.from_pairs(all_caps, all_imgs, n_captions, n_images))
            names.append("cxc")
        else:
            skip("image_to_text.cxc", reason)
            skip("text_to_image.cxc", reason)
        progress("image -> text retrieval")
        ranks = first_correct_ranks(images, captions, sets_i2t)
        report["retrieval"]["image_to_text"] = {
            name: retrieval_summary(r, n_captions, s.indices.size)
            for name, r, s in zip(names, ranks, sets_i2t, strict=True)
        }
        progress("text -> image retrieval")
        ranks = first_correct_ranks(captions, images, sets_t2i)
        report["retrieval"]["text_to_image"] = {
            name: retrieval_summary(r, n_images, s.indices.size)
            for name, r, s in zip(names, ranks, sets_t2i, strict=True)
        }
    else:
        why = "unimodal spaces: no image-caption similarity"
        for task in ("image_to_text", "text_to_image"):
            skip(task, why)

    # Intramodal retrieval.
    for task, kind, vectors, n_items in (
        ("text_to_text", STS, captions, n_captions),
        ("image_to_image", SIS, images, n_images),
    ):
        if vectors is None:
            skip(task, f"no {_modality(kind)} vectors")
            continue
        reason = no_rows(kind)
        if reason is None:
            rows = indexed[kind]
            a, b, mean = _pair_means(rows.first, rows.second, rows.scores, n_items, unordered=True)
            good = mean >= POSITIVE_AT[kind]
            if not good.any():
                reason = f"no {kind} pair scores >= {POSITIVE_AT[kind]:g}"
        if reason is not None:
            skip(task, reason)
            continue
        positives = Positives.from_pairs(
            np.concatenate([a[good], b[good]]), np.concatenate([b[good], a[good]]), n_items, n_items
        )
        progress(f"{task.replace('_to_', ' -> ')} retrieval")
        (ranks,) = first_correct_ranks(vectors, vectors, [positives], exclude=np.arange(n_items))
        report["retrieval"][task] = {"cxc": retrieval_summary(ranks, n_items - 1, positives.indices.size // 2)}

    # Correlation with human scores.
    for kind, left, right in ((STS, captions, captions), (SIS, images, images), (SITS, captions, images)):
        if not needs[kind]:
            skip(
                kind,
                "unimodal spaces: no image-caption similarity" if kind == SITS else f"no {_modality(kind)} vectors",
            )
            continue
        reason = no_rows(kind)
        if reason is not None:
            skip(kind, reason)
            continue
        rows = indexed[kind]
        progress(f"{kind} correlation")
        model = pair_cosines(left, right, rows.first, rows.second)
        try:
            report["correlation"][kind] = bootstrap_spearman(rows.scores, model, rows.first, samples=samples, seed=seed)
        except EvaluationError as exc:
            skip(kind, str(exc))

    if not report["retrieval"] and not report["correlation"]:
        reasons = "; ".join(f"{task}: {why}" for task, why in report["skipped"].items())
        raise EvaluationError(f"nothing to evaluate on split {items.name!r} ({reasons})")
    return report


# --- the table -----------------------------------------------------------------------


def _cell(value: float | None, width: int = 6) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-".rjust(width)
    return f"{value:.1f}".rjust(width)


def _retrieval_cells(entry: dict | None) -> str:
    if entry is None:
        return "".join("-".rjust(6) for _ in RECALL_AT) + "-".rjust(8)
    return "".join(_cell(entry[f"R@{k}"]) for k in RECALL_AT) + _cell(entry["median_rank"], 8)


def format_report(report: dict) -> str:
    """The report as text tables shaped like the CxC paper's (retrieval, then correlation)."""
    lines = []
    title = f"CxC evaluation of split {report['split']!r}"
    if report.get("dataset"):
        title += f" of dataset {report['dataset']!r}"
    items = report["items"]
    lines.append(f"{title}: {items['images']} images, {items['captions']} captions, {report['spaces']} spaces")
    for kind, entry in report["ratings"].items():
        if entry.get("file"):
            used = entry.get("rows_used")
            extra = f", {used} used, {entry['rows_left_out']} outside the split" if entry.get("rows_left_out") else ""
            lines.append(f"  {kind}: {entry['rows']} rated rows from {entry['file']}{extra}")
    head = "".join(f"R@{k}".rjust(6) for k in RECALL_AT) + "med r".rjust(8)
    retrieval = report["retrieval"]

    def block(title_left: str, title_right: str, left: str, right: str, variants) -> None:
        lines.append("")
        lines.append(f"{'':24}{title_left:<27}  {title_right}")
        lines.append(f"{'positives':24}{head:<27}  {head}")
        for name, label in variants:
            a = retrieval.get(left, {}).get(name)
            b = retrieval.get(right, {}).get(name)
            if a is None and b is None:
                continue
            lines.append(f"{label:24}{_retrieval_cells(a):<27}  {_retrieval_cells(b)}")

    if "image_to_text" in retrieval or "text_to_image" in retrieval:
        block(
            "Image -> Text",
            "Text -> Image",
            "image_to_text",
            "text_to_image",
            [("original", "original pairs"), ("cxc", f"CxC (+ SITS >= {POSITIVE_AT[SITS]:g})")],
        )
    if "text_to_text" in retrieval or "image_to_image" in retrieval:
        block(
            f"Text -> Text (STS >= {POSITIVE_AT[STS]:g})",
            f"Image -> Image (SIS >= {POSITIVE_AT[SIS]:g})",
            "text_to_text",
            "image_to_image",
            [("cxc", "CxC")],
        )
    correlation = report["correlation"]
    if correlation:
        settings = report["settings"]
        lines.append("")
        lines.append(
            f"Spearman x 100 with human scores (mean ± std over {settings['samples']} samples, seed {settings['seed']})"
        )
        lines.append("".join(kind.rjust(16) for kind in KINDS))
        cells = []
        for kind in KINDS:
            entry = correlation.get(kind)
            if entry is None or entry["mean"] is None:
                cells.append("-".rjust(16))
            else:
                cells.append(f"{entry['mean']:.1f} ± {entry['std']:.1f}".rjust(16))
        lines.append("".join(cells))
    if report["skipped"]:
        lines.append("")
        lines.append("Not evaluated:")
        for task, why in report["skipped"].items():
            lines.append(f"  {task}: {why}")
    return "\n".join(lines)
