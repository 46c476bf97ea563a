"""Sampling's domain errors: the API answers them with 4xx and the message."""

from annotation.core.errors import Conflict, DomainError


class SamplingInputError(DomainError):
    """A batch cannot be created or run as configured. Nothing was written."""

    code = "sampling_invalid"


class PairListError(SamplingInputError):
    """A bad uploaded pair list. The message names the line or column."""

    code = "pair_list_invalid"


class BatchConflict(Conflict):
    """The batch is not in a state that allows this (running, already done ...)."""

    code = "batch_conflict"
