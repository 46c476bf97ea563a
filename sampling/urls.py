from django.urls import path

import config.converters  # noqa: F401  (registers <id:...>, the bounded database id)
from sampling import apis

urlpatterns = [
    path("batches/", apis.SamplingBatchListApi.as_view(), name="sampling-batch-list"),
    path("batches/upload/", apis.SamplingBatchUploadApi.as_view(), name="sampling-batch-upload"),
    path("batches/<id:batch_id>/", apis.SamplingBatchDetailApi.as_view(), name="sampling-batch-detail"),
    path("batches/<id:batch_id>/start/", apis.SamplingBatchStartApi.as_view(), name="sampling-batch-start"),
    path("splits/<str:dataset>/<str:split>/", apis.SplitSummaryApi.as_view(), name="sampling-split-summary"),
]
