"""Thin API views, one module per resource: each parses input, calls one service or
selector and serializes the result. The views are importable from here too."""

from annotation.apis.accounts import TokenApi
from annotation.apis.datasets import (
    DatasetListApi,
    DatasetSerializer,
    ImportEmbeddingsApi,
    ImportKarpathyApi,
    ImportObjectsApi,
)
from annotation.apis.exports import (
    ExportDetailApi,
    ExportFileDownloadApi,
    ExportFileListApi,
    ExportFileSerializer,
    ExportJobSerializer,
    ExportListApi,
    ExportRequestSerializer,
)
from annotation.apis.fields import StrictFloatField, StrictIntegerField
from annotation.apis.images import ImageFileApi
from annotation.apis.jobs import JobDetailApi, JobSerializer
from annotation.apis.rating import (
    AssignmentSerializer,
    ItemSerializer,
    LeaseSerializer,
    RaterQualificationsApi,
    RaterRatingListApi,
    RatingClaimApi,
    RatingSubmitApi,
    SlotFlagApi,
    SlotHeartbeatApi,
    SlotSkipApi,
)
from annotation.apis.rating_progress import RaterProgressApi

__all__ = [
    "AssignmentSerializer",
    "DatasetListApi",
    "DatasetSerializer",
    "ExportDetailApi",
    "ExportFileDownloadApi",
    "ExportFileListApi",
    "ExportFileSerializer",
    "ExportJobSerializer",
    "ExportListApi",
    "ExportRequestSerializer",
    "ImageFileApi",
    "ImportEmbeddingsApi",
    "ImportKarpathyApi",
    "ImportObjectsApi",
    "ItemSerializer",
    "JobDetailApi",
    "JobSerializer",
    "LeaseSerializer",
    "RaterProgressApi",
    "RaterQualificationsApi",
    "RaterRatingListApi",
    "RatingClaimApi",
    "RatingSubmitApi",
    "SlotFlagApi",
    "SlotHeartbeatApi",
    "SlotSkipApi",
    "StrictFloatField",
    "StrictIntegerField",
    "TokenApi",
]
