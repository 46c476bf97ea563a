"""Clustered random vectors for the index, PQ and shard tests."""

import numpy as np


def clustered(n, d, clusters, seed):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d))
    x = centres[rng.integers(0, clusters, n)] + 0.3 * rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
