"""The sampling methods: which pairs to rate.

``strategies`` (intramodal pairs through the other modality, co-caption pairs, phase two's
intermodal pairs), ``intrasim`` (phase two's intramodal similarities), ``pairlist`` (an
uploaded pair list), ``pair_arrays`` and ``model_topk`` (a model's own retrievals to audit).

Imports: ``sampling.search``, ``annotation.core``; no Django models.
"""
