from django.urls import path

from sampling import apis

urlpatterns = [
    path("batches/", apis.SamplingBatchListApi.as_view(), name="sampling-batch-list"),
    path("batches/upload/", apis.SamplingBatchUploadApi.as_view(), name="sampling-batch-upload"),
    path("batches/<int:batch_id>/", apis.SamplingBatchDetailApi.as_view(), name="sampling-batch-detail"),
    path("batches/<int:batch_id>/start/", apis.SamplingBatchStartApi.as_view(), name="sampling-batch-start"),
    path("splits/<str:dataset>/<str:split>/", apis.SplitSummaryApi.as_view(), name="sampling-split-summary"),
]
