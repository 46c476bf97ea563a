"""Global calibration: does one similarity threshold separate positives from the rest
across all queries? Pure numpy.

Over every rated pair of a kind (repeated rows merged to their mean score), not per
query: the precision-recall AUC (average precision) of the model's similarity against
the human positives (mean score at the kind's threshold), and Spearman's rho of the
similarity against the human mean; 95% intervals of both: the logit interval for the
PR-AUC, Fisher's z for Spearman (``intervals``).
"""

from __future__ import annotations

import numpy as np

from annotation.evaluation.correlation import spearman
from annotation.evaluation.intervals import fisher_z_interval, logit_interval


def average_precision(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Area under the precision-recall curve as average precision: the sum over the
    distinct score thresholds (highest first) of the recall gained times the precision
    there. Tied scores form one threshold. None without a positive."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels, bool)
    positives = int(labels.sum())
    if positives == 0:
        return None
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    true_cum = np.cumsum(labels)
    # The last position of each run of equal scores closes one threshold.
    last = np.append(np.flatnonzero(scores[1:] != scores[:-1]), scores.size - 1)
    tp = true_cum[last].astype(np.float64)
    precision = tp / (last + 1)
    recall_gain = np.diff(np.concatenate([[0.0], tp])) / positives
    return float(np.sum(recall_gain * precision))


def global_calibration(similarity: np.ndarray, human: np.ndarray, threshold: float) -> dict:
    """``similarity`` and ``human`` float (p,), one value per distinct rated pair.
    Returns pairs, positives, PR-AUC x 100 with ``pr_auc_ci`` (the logit interval over
    the positives), Spearman x 100 with ``spearman_ci`` (Fisher's z), intervals x 100 and
    at 95%; None where undefined."""
    similarity = np.asarray(similarity, np.float64)
    human = np.asarray(human, np.float64)
    labels = human >= threshold
    ap = average_precision(similarity, labels) if labels.size else None
    ap_ci = logit_interval(ap, int(labels.sum())) if ap is not None else None
    rho = spearman(human, similarity) if human.size > 1 else float("nan")
    return {
        "pairs": int(human.size),
        "positives": int(labels.sum()),
        "positive_share": float(100.0 * labels.mean()) if labels.size else None,
        "pr_auc": None if ap is None else 100.0 * ap,
        "pr_auc_ci": _times_100(ap_ci),
        "spearman": None if np.isnan(rho) else 100.0 * float(rho),
        "spearman_ci": _times_100(fisher_z_interval(float(rho), int(human.size))),
    }


def _times_100(interval: list[float] | None) -> list[float] | None:
    return None if interval is None else [100.0 * bound for bound in interval]
