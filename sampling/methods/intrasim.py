"""c2i_intrasim: phase 2 of CxC, caption-image pairs derived from rated intramodal pairs
(pivots), over arrays with a seeded numpy Generator. No Django.

Rows and pair orientations as in ``sampling.methods.strategies``: a SITS pair is
``(caption row, image row)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sampling.methods.pair_arrays import EMPTY_PAIRS, CaptionGroups, check_budget, first_occurrence_rows, fresh_mask

C2I_INTRASIM = "c2i_intrasim"


@dataclass(frozen=True)
class Pivots:
    """Rated intramodal pairs with their mean human score, each in its given order (the
    order a pair list named it in, kept by ``Pair.swapped``), listed by pair id.

    sis: int (p, 2) image rows, sis_scores: float (p,); sts: int (q, 2) caption rows,
    sts_scores: float (q,).
    """

    sis: np.ndarray = field(default_factory=lambda: EMPTY_PAIRS)
    sis_scores: np.ndarray = field(default_factory=lambda: np.empty(0))
    sts: np.ndarray = field(default_factory=lambda: EMPTY_PAIRS)
    sts_scores: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __len__(self) -> int:
        return len(self.sis) + len(self.sts)


# How c2i_intrasim turns pivots into pairs, recorded in each batch's stats.
INTRASIM_RULE = {
    "rule": "one_per_pivot",
    "direction": "pivot (a, b) in its given order gives (a random caption of b's image, the image of a)",
    "order": "decreasing pivot score, equal scores in a seeded random order",
    "halves": "half the budget from STS pivots (the odd one too), half from SIS pivots, "
    "skipping pairs the STS half took; a short half is filled from the other",
}


@dataclass
class IntrasimPairs:
    """c2i_intrasim's choice: pairs (caption row, image row) (m, 2) in the order taken
    (the STS half first), and ``report``: INTRASIM_RULE with, per half, how many pivots
    gave candidates, how many each skip removed, how many were taken and the lowest
    pivot score taken."""

    pairs: np.ndarray
    report: dict


def pivot_candidates(
    pivots: np.ndarray,
    scores: np.ndarray,
    image_of: Callable[[np.ndarray], np.ndarray],
    groups: CaptionGroups,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """One SITS candidate per pivot (a, b), in the paper's direction: (a random caption of
    b's image, the image of a), by decreasing pivot score, equal scores in a seeded
    random order.

    pivots: int (p, 2) item rows in their given order; scores: float (p,); image_of maps
    item rows to image rows. Returns (candidates (p, 2), their pivots' scores (p,)).
    """
    # The callers' arrays are int64 pairs and float64 scores already: their dtypes are not mutated.
    pivots = np.asarray(pivots, dtype=np.int64).reshape(-1, 2)  # pragma: no mutate
    scores = np.asarray(scores, dtype=np.float64)  # pragma: no mutate
    order = np.lexsort((rng.permutation(len(pivots)), -scores))
    pivots, scores = pivots[order], scores[order]
    candidates = np.stack([groups.random_caption(image_of(pivots[:, 1]), rng), image_of(pivots[:, 0])], axis=1)
    return candidates, scores


def _fresh_candidates(
    candidates: np.ndarray, scores: np.ndarray, caption_image: np.ndarray, queued: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Candidates without original pairs (a caption with its own image, which
    c2i_original covers; co-caption pivots give only those), queued pairs and repeats,
    order kept. Returns (candidates, scores, counts of each skip)."""
    counts = {"pivots": len(candidates)}
    keep = caption_image[candidates[:, 0]] != candidates[:, 1]
    counts["skipped_original"] = int((~keep).sum())
    candidates, scores = candidates[keep], scores[keep]
    keep = fresh_mask(candidates, queued)
    counts["skipped_queued"] = int((~keep).sum())
    candidates, scores = candidates[keep], scores[keep]
    firsts = first_occurrence_rows(candidates)
    counts["skipped_repeat"] = len(candidates) - len(firsts)
    return candidates[firsts], scores[firsts], counts


def c2i_intrasim(
    pivots: Pivots,
    caption_image: np.ndarray,
    groups: CaptionGroups,
    *,
    budget: int | None,
    rng: np.random.Generator,
    queued: np.ndarray | None = None,
) -> IntrasimPairs:
    """SITS pairs derived from rated pivots, one per pivot, as CxC's paper states: "For
    each I2I pair (i_j, i_k), a C2I pair (c_k, i_j) is generated, where c_k is a MS-COCO
    caption for i_k. We generate pairs from C2C similarly. Half of the C2I pairs are
    selected based on C2C ranks and the other half by I2I ranks (skipping pairs already
    selected from C2C)." (see INTRASIM_RULE and ``pivot_candidates``).

    Without a budget all candidates are taken, STS-derived first. Raises BudgetError when
    the pivots give fewer fresh pairs than the budget.
    """
    caption_image = np.asarray(caption_image, dtype=np.int64)  # pragma: no mutate (int64 already)
    from_sts, sts_scores = pivot_candidates(
        pivots.sts, pivots.sts_scores, lambda rows: caption_image[rows], groups, rng
    )
    from_sis, sis_scores = pivot_candidates(pivots.sis, pivots.sis_scores, lambda rows: rows, groups, rng)
    from_sts, sts_scores, sts_report = _fresh_candidates(from_sts, sts_scores, caption_image, queued)
    from_sis, sis_scores, sis_report = _fresh_candidates(from_sis, sis_scores, caption_image, queued)
    available = len(from_sts) + int(fresh_mask(from_sis, from_sts).sum())
    check_budget(C2I_INTRASIM, budget, available, f"fresh caption-image pairs derived from {len(pivots)} pivots")

    want_sts = len(from_sts) if budget is None else budget - budget // 2
    taken_sts = np.arange(min(want_sts, len(from_sts)))
    sis_rest = np.flatnonzero(fresh_mask(from_sis, from_sts[taken_sts]))
    want_sis = len(sis_rest) if budget is None else budget - len(taken_sts)
    taken_sis = sis_rest[:want_sis]
    sts_report["skipped_taken_by_sis"] = 0
    if budget is not None and len(taken_sts) + len(taken_sis) < budget:
        # The SIS half ran short: more STS-derived pairs, none the SIS half took.
        fresh = fresh_mask(from_sts[want_sts:], from_sis[taken_sis])
        extra = (want_sts + np.flatnonzero(fresh))[: budget - len(taken_sts) - len(taken_sis)]
        # Skipped: the candidates the SIS half took, up to the last spare one used (the
        # budget check leaves spares enough for the shortfall, so at least one is used).
        passed = int(extra[-1]) - want_sts + 1
        sts_report["skipped_taken_by_sis"] = int((~fresh[:passed]).sum())
        taken_sts = np.concatenate([taken_sts, extra])
    sis_report["skipped_taken_by_sts"] = len(from_sis) - len(sis_rest)
    report = dict(INTRASIM_RULE)
    for half, chosen, scores, counts in (
        ("sts", taken_sts, sts_scores, sts_report),
        ("sis", taken_sis, sis_scores, sis_report),
    ):
        counts["taken"] = len(chosen)
        counts["lowest_score_taken"] = round(float(scores[chosen].min()), 4) if len(chosen) else None
        report[half] = counts
    return IntrasimPairs(np.concatenate([from_sts[taken_sts], from_sis[taken_sis]]), report)
