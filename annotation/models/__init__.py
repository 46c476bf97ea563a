"""The annotation app's models, one module per group; every model is importable from
``annotation.models`` as before the split.

Invariants live in the database (unique and check constraints), not in ``save()``:
- item keys are unique per dataset, and every caption belongs to exactly one image;
- a pair is stored once, unordered, per kind;
- a pair has ``ratings_required`` slots plus one top-up slot per excluded rating; a
  rating fills exactly one slot, so a pair never collects more valid ratings than
  ``ratings_required``; one rater rates a pair at most once.
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
from annotation.models.objects import ObjectAnnotation
from annotation.models.onboarding import (
    QUIZ_ATTEMPTS,
    CampaignLink,
    Invitation,
    InvitationDownload,
    Participant,
    ParticipantOutcome,
    ParticipantSignup,
    QuizAttempt,
)
from annotation.models.pairs import Pair, Rating, RatingSlot, RatingStatus, SlotState
from annotation.models.quality import (
    DEFAULT_FLAG_FAST_SHARE_ABOVE,
    DEFAULT_FLAG_GOLD_ERROR_ABOVE,
    DEFAULT_FLAG_GOLD_SKIP_SHARE_ABOVE,
    DEFAULT_FLAG_LOO_BELOW,
    DEFAULT_FLAG_NOISE_ABOVE,
    DEFAULT_GOLD_ONE_IN,
    DEFAULT_PAUSE_MAX_ERROR,
    DEFAULT_PAUSE_WINDOW,
    DEFAULT_PROMOTE_MAX_SD,
    DEFAULT_QUIZ_LENGTH,
    DEFAULT_QUIZ_MAX_ERROR,
    MAX_QUIZ_LENGTH,
    ExclusionPause,
    ExclusionState,
    GoldLease,
    GoldLeaseState,
    GoldPair,
    GoldPurpose,
    GoldRating,
    GoldSource,
    QualitySettings,
    RaterPause,
    RatingExclusion,
)
from annotation.models.queue import (
    Flag,
    FlagReason,
    GoldCounter,
    PairSkip,
    Qualification,
    QueueCounter,
    RaterGoldMet,
    RaterTally,
)
from annotation.models.rater_model import RaterEstimate, RaterModelFit
from annotation.models.runs import BackgroundRun, Job, JobStatus, UploadState, upload_state_constraints
from annotation.models.study import AnswerType, ParticipantAnswer, QuestionPhase, StudyQuestion

__all__ = [
    "DEFAULT_FLAG_FAST_SHARE_ABOVE",
    "DEFAULT_FLAG_GOLD_ERROR_ABOVE",
    "DEFAULT_FLAG_GOLD_SKIP_SHARE_ABOVE",
    "DEFAULT_FLAG_LOO_BELOW",
    "DEFAULT_FLAG_NOISE_ABOVE",
    "DEFAULT_GOLD_ONE_IN",
    "DEFAULT_PAUSE_MAX_ERROR",
    "DEFAULT_PAUSE_WINDOW",
    "DEFAULT_PROMOTE_MAX_SD",
    "DEFAULT_QUIZ_LENGTH",
    "DEFAULT_QUIZ_MAX_ERROR",
    "DEFAULT_SPEED_FLOORS",
    "MAX_QUIZ_LENGTH",
    "METHOD_KIND",
    "QUIZ_ATTEMPTS",
    "AnswerType",
    "BackgroundRun",
    "CampaignLink",
    "CampaignSnapshot",
    "Caption",
    "Dataset",
    "EmbeddingSpace",
    "ExclusionPause",
    "ExclusionState",
    "Flag",
    "FlagReason",
    "GoldCounter",
    "GoldLease",
    "GoldLeaseState",
    "GoldPair",
    "GoldPurpose",
    "GoldRating",
    "GoldSource",
    "Image",
    "Invitation",
    "InvitationDownload",
    "Job",
    "JobStatus",
    "Modality",
    "ObjectAnnotation",
    "Pair",
    "PairSkip",
    "Participant",
    "ParticipantAnswer",
    "ParticipantOutcome",
    "ParticipantSignup",
    "Qualification",
    "QualitySettings",
    "QuestionPhase",
    "QueueCounter",
    "QuizAttempt",
    "RaterEstimate",
    "RaterGoldMet",
    "RaterModelFit",
    "RaterPause",
    "RaterTally",
    "Rating",
    "RatingExclusion",
    "RatingSlot",
    "RatingStatus",
    "SamplingMethod",
    "SlotState",
    "SpeedFloor",
    "Split",
    "StudyQuestion",
    "TaskKind",
    "UploadState",
    "upload_state_constraints",
]
