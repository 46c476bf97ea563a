"""Generated embeddings for the sampling benchmarks (no Django).

Images: a mixture of clusters (topics). Each cluster has a random unit centre and its
own 32-dimensional subspace of variation whose variances fall off as 1/i, the
decaying spectrum real image and text encoders show; a little isotropic noise is
added and every row is L2-normalized. Captions: each image's vector seen through a
text model (a fixed random rotation of the space, so no coordinate is shared with the
image space) plus per-caption noise, so co-captions agree with each other and with
their image, but not perfectly.
"""

from __future__ import annotations

import numpy as np

CHUNK = 100_000


def _normalize(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def clustered_vectors(
    n: int, d: int, n_clusters: int, rng: np.random.Generator, rank: int = 32, noise: float = 0.2
) -> np.ndarray:
    """float32 (n, d), rows L2-normalized, rows of a cluster scattered in random order."""
    centres = _normalize(rng.standard_normal((n_clusters, d), dtype=np.float32))
    scales = (0.7 / np.sqrt(np.arange(1, rank + 1))).astype(np.float32)
    labels = rng.integers(0, n_clusters, n)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_clusters + 1))
    out = np.empty((n, d), dtype=np.float32)
    for cluster in range(n_clusters):
        rows = order[bounds[cluster] : bounds[cluster + 1]]
        if len(rows) == 0:
            continue
        basis = rng.standard_normal((rank, d), dtype=np.float32) / np.float32(np.sqrt(d))
        coefficients = rng.standard_normal((len(rows), rank), dtype=np.float32) * scales
        spread = rng.standard_normal((len(rows), d), dtype=np.float32) * np.float32(noise / np.sqrt(d))
        out[rows] = centres[cluster] + coefficients @ basis + spread
    return _normalize(out)


def caption_vectors(
    images: np.ndarray, per_image: int, rng: np.random.Generator, noise: float = 0.6
) -> tuple[np.ndarray, np.ndarray]:
    """Captions for every image: (float32 (n * per_image, d) L2-normalized, caption_image int64).

    Caption rows of image i are ``i * per_image .. i * per_image + per_image - 1``.
    """
    n, d = images.shape
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    rotation = rotation.astype(np.float32)
    out = np.empty((n * per_image, d), dtype=np.float32)
    for start in range(0, n, CHUNK):
        block = images[start : start + CHUNK] @ rotation
        repeated = np.repeat(block, per_image, axis=0)
        repeated += rng.standard_normal(repeated.shape, dtype=np.float32) * np.float32(noise / np.sqrt(d))
        out[start * per_image : start * per_image + len(repeated)] = _normalize(repeated)
    return out, np.repeat(np.arange(n, dtype=np.int64), per_image)
