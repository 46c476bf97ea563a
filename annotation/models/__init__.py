"""The annotation app's models, one module per group; every model is importable from
``annotation.models`` as before the split.

Invariants live in the database (unique and check constraints), not in ``save()``:
- item keys are unique per dataset, and every caption belongs to exactly one image;
- a pair is stored once, unordered, per kind;
- a pair has ``ratings_required`` slots; a rating fills exactly one slot, so a pair can
  never collect more ratings than slots; one rater rates a pair at most once.
"""

from annotation.models.dashboard import DEFAULT_SPEED_FLOORS, CampaignSnapshot, SpeedFloor
from annotation.models.items import (
    METHOD_KIND,
    Caption,
    Dataset,
    EmbeddingSpace,
    Image,
    Modality,
    SamplingMethod,
    Split,
    TaskKind,
)
from annotation.models.pairs import Pair, Rating, RatingSlot, SlotState
from annotation.models.queue import Flag, FlagReason, PairSkip, Qualification, QueueCounter
from annotation.models.runs import BackgroundRun, Job, JobStatus, UploadState, upload_state_constraints

__all__ = [
    "DEFAULT_SPEED_FLOORS",
    "METHOD_KIND",
    "BackgroundRun",
    "CampaignSnapshot",
    "Caption",
    "Dataset",
    "EmbeddingSpace",
    "Flag",
    "FlagReason",
    "Image",
    "Job",
    "JobStatus",
    "Modality",
    "Pair",
    "PairSkip",
    "Qualification",
    "QueueCounter",
    "Rating",
    "RatingSlot",
    "SamplingMethod",
    "SlotState",
    "SpeedFloor",
    "Split",
    "TaskKind",
    "UploadState",
    "upload_state_constraints",
]
