"""Audits of models (sampling method ``model_topk``) in a batch: the configuration checked
when the batch is created, its pairs sampled when it runs, and which model retrieved
each pair written with the pairs. The numeric part is ``sampling.methods.model_topk``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from annotation.models import EmbeddingSpace
from annotation.serving.pairs import PairSpec, pair_ids_by_identity
from sampling.errors import SamplingInputError
from sampling.methods.model_topk import (
    C2C,
    DIRECTION_KIND,
    DIRECTION_METHOD,
    DIRECTION_MODALITIES,
    DIRECTIONS,
    I2I,
    MODEL_TOPK,
    AuditedModel,
    model_topk,
    query_sample,
)
from sampling.methods.pair_arrays import BudgetError
from sampling.models import AuditRetrieval, SamplingBatch
from sampling.selectors import SplitItems, space_check_covers, space_vectors, split_items

MODEL_NAME_LENGTH = 100
# A pair's identity as PairSpec.identity() gives it, and the retrieval behind it.
Retrieval = tuple[tuple, str, str, int]


def audit_check(*, split, audit: Mapping, k: int, budget: int | None) -> dict:
    """The audit configuration, checked and normalized: {"models": [{"name",
    "image_space", "caption_space"}], "directions": [...], "queries": n or None}.

    Directions default to every direction all models have vectors for. Raises
    SamplingInputError naming the problem: no models, a repeated or empty name, an
    unknown space or one of the wrong modality, a space without a vector for an item of
    the split, intermodal directions without both spaces of one dimension, k too large,
    a budget above what the audit can retrieve.
    """
    if not isinstance(audit, Mapping) or not audit.get("models"):
        raise SamplingInputError(
            f'{MODEL_TOPK} needs "audit": {{"models": [{{"name", "image_space", "caption_space"}}]}}'
        )
    unknown = sorted(set(audit) - {"models", "directions", "queries"})
    if unknown:
        raise SamplingInputError(f"unknown audit setting(s) {', '.join(unknown)}; use models, directions, queries")
    spaces = {s.name: s for s in EmbeddingSpace.objects.filter(dataset=split.dataset_id)}
    models = [_check_model(entry, spaces) for entry in audit["models"]]
    names = [m["name"] for m in models]
    if len(set(names)) != len(names):
        raise SamplingInputError(f"audited model names must differ; got {', '.join(names)}")
    directions = _check_directions(audit.get("directions"), models, spaces)
    queries = audit.get("queries")
    if queries is not None and (isinstance(queries, bool) or not isinstance(queries, int) or queries < 1):
        raise SamplingInputError(f"audit queries must be a whole number, at least 1 (or null: all); got {queries!r}")
    items = split_items(split=split)
    for model in models:
        for modality in ("image", "caption"):
            if model[f"{modality}_space"]:
                keys = items.image_keys if modality == "image" else items.caption_keys
                space_check_covers(space=spaces[model[f"{modality}_space"]], keys=keys)
    _check_sizes(items, directions, k, queries, budget, len(models))
    return {"models": models, "directions": directions, "queries": queries}


def _check_model(entry, spaces: Mapping[str, EmbeddingSpace]) -> dict:
    if not isinstance(entry, Mapping):
        raise SamplingInputError(f"an audited model is an object with name, image_space, caption_space; got {entry!r}")
    name = str(entry.get("name") or "").strip()
    if not name or len(name) > MODEL_NAME_LENGTH:
        raise SamplingInputError(f"an audited model needs a name of 1 to {MODEL_NAME_LENGTH} characters")
    model = {"name": name, "image_space": None, "caption_space": None}
    for modality in ("image", "caption"):
        space_name = entry.get(f"{modality}_space")
        if not space_name:
            continue
        space = spaces.get(space_name)
        if space is None:
            known = ", ".join(sorted(spaces)) or "none"
            raise SamplingInputError(f"model {name!r}: no embedding space {space_name!r} (the dataset has: {known})")
        if space.modality != modality:
            raise SamplingInputError(
                f"model {name!r}: space {space_name!r} holds {space.modality} vectors, not {modality} vectors"
            )
        model[f"{modality}_space"] = space_name
    if not model["image_space"] and not model["caption_space"]:
        raise SamplingInputError(f"model {name!r} names no image_space and no caption_space")
    return model


def _supports(model: dict, direction: str, spaces: Mapping[str, EmbeddingSpace]) -> bool:
    needed = {f"{modality}_space" for modality in DIRECTION_MODALITIES[direction]}
    if not all(model[field] for field in needed):
        return False
    if len(needed) == 2:
        return spaces[model["image_space"]].dimension == spaces[model["caption_space"]].dimension
    return True


def _check_directions(given, models: list[dict], spaces) -> list[str]:
    if given is None:
        chosen = [d for d in DIRECTIONS if all(_supports(m, d, spaces) for m in models)]
        if not chosen:
            raise SamplingInputError("the audited models have no direction in common; give directions")
        return chosen
    if not isinstance(given, list | tuple) or not given:
        raise SamplingInputError(f"audit directions are a list from {', '.join(DIRECTIONS)}; got {given!r}")
    unknown = [d for d in given if d not in DIRECTIONS]
    if unknown:
        raise SamplingInputError(
            f"unknown audit direction(s) {', '.join(map(repr, unknown))}; use {', '.join(DIRECTIONS)}"
        )
    for direction in dict.fromkeys(given):
        for model in models:
            if not _supports(model, direction, spaces):
                what = "an image and a caption space of one dimension (a joint space)"
                if direction in (C2C, I2I):
                    what = f"a {DIRECTION_MODALITIES[direction][0]} space"
                raise SamplingInputError(f"model {model['name']!r} cannot be audited {direction}: it needs {what}")
    return list(dict.fromkeys(given))


def _check_sizes(items: SplitItems, directions, k: int, queries: int | None, budget: int | None, n_models: int):
    counts = {"image": items.n_images, "caption": len(items.caption_ids)}
    candidates = {}
    most = 0
    for direction in directions:
        query_side, candidate_side = DIRECTION_MODALITIES[direction]
        candidates[direction] = counts[candidate_side] - (query_side == candidate_side)
        most += min(queries or counts[query_side], counts[query_side]) * k * n_models
    fewest = min(candidates, key=candidates.get)
    if k > candidates[fewest]:
        raise SamplingInputError(
            f"k={k} but a query of {fewest} has only {candidates[fewest]} candidates in the split: "
            f"with directions {', '.join(directions)}, k is at most {candidates[fewest]}"
        )
    if budget is not None and budget > most:
        raise SamplingInputError(
            f"{MODEL_TOPK}: budget {budget} is more than the {most} pairs the audit can retrieve at most "
            "(queries x k x models)"
        )


def audit_sample(
    batch: SamplingBatch,
    items: SplitItems,
    queued: Mapping[str, np.ndarray],
    budget: int | None,
    rng: np.random.Generator,
) -> tuple[list[PairSpec], list[Retrieval]]:
    """The batch's audit pairs as specs (query first), and every retrieval behind them.
    ``queued``: the split's taken pairs per sampling method (``queued_pairs``)."""
    audit = batch.audit
    spaces = {s.name: s for s in EmbeddingSpace.objects.filter(dataset=batch.dataset_id)}
    models = []
    for entry in audit["models"]:
        vectors = {}
        for modality, keys in (("image", items.image_keys), ("caption", items.caption_keys)):
            name = entry.get(f"{modality}_space")
            if name and name not in spaces:
                raise SamplingInputError(f"embedding space {name!r} of model {entry['name']!r} no longer exists")
            vectors[modality] = space_vectors(space=spaces[name], keys=keys) if name else None
        models.append(AuditedModel(entry["name"], image=vectors["image"], caption=vectors["caption"]))
    counts = {"image": items.n_images, "caption": len(items.caption_ids)}
    directions = audit["directions"]
    queries = {d: query_sample(counts[DIRECTION_MODALITIES[d][0]], audit["queries"], rng) for d in directions}
    by_kind = {DIRECTION_KIND[d]: queued[DIRECTION_METHOD[d]] for d in DIRECTIONS}
    try:
        found = model_topk(models, directions, k=batch.k, queries=queries, budget=budget, rng=rng, queued=by_kind)
    except (BudgetError, ValueError) as exc:
        raise SamplingInputError(str(exc)) from exc
    specs: list[PairSpec] = []
    retrievals: list[Retrieval] = []
    for direction, result in found.items():
        mine = items.pair_specs(DIRECTION_METHOD[direction], result.pairs)
        specs += mine
        for pair, model, d_index, rank in result.retrievals.tolist():
            retrievals.append((mine[pair].canonical().identity(), models[model].name, directions[d_index], rank))
        # Pairs the dataset had already: what this audit's models retrieved is recorded too.
        known = items.pair_specs(DIRECTION_METHOD[direction], result.known[:, :2])
        for spec, (model, d_index, rank) in zip(known, result.known[:, 2:].tolist(), strict=True):
            retrievals.append((spec.canonical().identity(), models[model].name, directions[d_index], rank))
    return specs, retrievals


def audit_retrievals_write(*, batch: SamplingBatch, retrievals: Sequence[Retrieval]) -> int:
    """Record every retrieval behind the batch's pairs and behind pairs of the split it
    found queued already (inside the batch's write transaction). A (pair, model,
    direction) recorded by an earlier audit keeps its first record; a worked example's
    pair (never queued) has none. Returns the records offered."""
    if not retrievals:
        return 0
    pair_of = pair_ids_by_identity(dataset_id=batch.dataset_id, identities=[identity for identity, *_ in retrievals])
    rows = [
        AuditRetrieval(pair_id=pair_of[identity], batch=batch, model_name=model, direction=direction, rank=rank)
        for identity, model, direction, rank in retrievals
        if identity in pair_of
    ]
    AuditRetrieval.objects.bulk_create(rows, batch_size=5000, ignore_conflicts=True)
    return len(rows)
