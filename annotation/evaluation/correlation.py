"""Correlation with human scores: the sampled bootstrap of the CxC paper. Pure numpy.

Each of ``samples`` samples takes half of the queries at random (a query is an item of
a rated row: by default both of its items, see query_memberships) and, per query, one
of its rated rows at random;
Spearman's rho (average ranks for ties) between the human scores and the model's
cosine similarities. Reported as mean and standard deviation over the samples, x 100,
and a 95% interval: the 2.5th and 97.5th percentiles of the samples' rho.

Why the samples' spread is an interval for rho: a sample keeps half of the queries, so
the samples form a delete-half jackknife, whose histogram needs no rescaling (the factor
sqrt(d / (n - d)) is 1 at d = n / 2; Wu, Ann. Statist. 1990). Its spread estimates the
sampling spread of rho over all the queries, not that of a half: the standard deviation
reported is that standard error, and the percentiles a 95% interval of rho.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from annotation.evaluation.inputs import EvaluationError, chunk_rows
from annotation.evaluation.intervals import INTERVAL_LEVEL, percentile_interval

BOOTSTRAP_SAMPLES = 1000
# Values drawn at a time by the bootstrap: a chunk of samples, each over all queries.
BOOTSTRAP_CHUNK_VALUES = 1024 * 1024
MIN_BOOTSTRAP_QUERIES = 4


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


# Which items of a rated row are its queries. CxC samples half of the queries and one
# rated item for each, with no meaning to column order (the release rates some SIS pairs
# in both orders): so by default a row is a candidate of each of its two items.
BOTH_ITEMS = "both"
FIRST_COLUMN = "first"
QUERY_RULES = (BOTH_ITEMS, FIRST_COLUMN)


def query_memberships(
    first: np.ndarray, second: np.ndarray, *, rule: str, same_modality: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Which rows each query may draw: returns (rows, queries), int64 (m,) each, one
    entry per (row, query) membership. ``first``, ``second``: int (n,) item indices of
    each row's two items. ``rule`` BOTH_ITEMS: both items are queries (m = 2n; items of
    two modalities are kept apart), sorted by (query, row); FIRST_COLUMN: the first
    item only (m = n, in row order)."""
    first = np.asarray(first, np.int64)
    rows = np.arange(first.size, dtype=np.int64)
    if rule == FIRST_COLUMN:
        return rows, first
    if rule != BOTH_ITEMS:
        raise EvaluationError(f"the bootstrap's queries are {' or '.join(QUERY_RULES)}, got {rule!r}")
    second = np.asarray(second, np.int64)
    # Image and caption indices overlap; shift one side past the other's range.
    offset = 0 if same_modality or not first.size else int(first.max()) + 1
    rows, queries = np.concatenate([rows, rows]), np.concatenate([first, second + offset])
    # Ordered by (query, row): the draws depend on which rows a query has, not on the
    # column an item stood in.
    order = np.lexsort((rows, queries))
    return rows[order], queries[order]


def bootstrap_spearman(
    human: np.ndarray,
    model: np.ndarray,
    queries: np.ndarray,
    *,
    rows: np.ndarray | None = None,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
    level: float = INTERVAL_LEVEL,
) -> dict:
    """The CxC sampled bootstrap of Spearman's rho between human and model scores.

    ``human``, ``model``: float (n,), one value per rated row. ``queries``: int (m,), a
    query each; with ``rows`` int (m,) the row of each entry (see query_memberships),
    without, m = n and entry i is row i. Samples as ``bootstrap_rows``. Returns mean and
    std (x 100, population std) over the samples where rho is defined, ``ci`` (x 100, the
    percentile interval of those samples at ``level``, see the module docstring; None
    when no sample is defined), and the counts.
    The same inputs and seed give the same figures. Raises EvaluationError for fewer than
    4 queries.
    """
    human = np.asarray(human, np.float64)
    model = np.asarray(model, np.float64)
    queries = np.asarray(queries)
    rows = np.arange(human.size) if rows is None else np.asarray(rows)
    if not (human.shape == model.shape) or human.ndim != 1 or queries.shape != rows.shape:
        raise EvaluationError(
            f"human and model arrays must be 1-D of one length and queries one per row entry, "
            f"got shapes {human.shape}, {model.shape}, {queries.shape} (rows {rows.shape})"
        )
    rhos = np.concatenate(
        [
            spearman(human[rows[drawn]], model[rows[drawn]])
            for drawn in bootstrap_rows(queries, samples=samples, seed=seed)
        ]
    )
    defined = rhos[~np.isnan(rhos)]
    n_queries = np.unique(queries).size
    return {
        "mean": float(100.0 * defined.mean()) if defined.size else None,
        "std": float(100.0 * defined.std()) if defined.size else None,
        "ci": percentile_interval(100.0 * defined, level),
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
    step = chunk_rows(2 * a.itemsize * a.shape[1])
    for start in range(0, len(ia), step):
        stop = start + step
        out[start:stop] = np.einsum("ij,ij->i", a[ia[start:stop]], b[ib[start:stop]], dtype=np.float64)
    return out
