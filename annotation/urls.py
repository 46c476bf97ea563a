from django.urls import path

from annotation import apis

urlpatterns = [
    path("auth/token/", apis.TokenApi.as_view(), name="auth-token"),
    path("datasets/", apis.DatasetListApi.as_view(), name="dataset-list"),
    path("imports/karpathy/", apis.ImportKarpathyApi.as_view(), name="import-karpathy"),
    path("imports/embeddings/", apis.ImportEmbeddingsApi.as_view(), name="import-embeddings"),
    path("jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="job-detail"),
    path("exports/", apis.ExportListApi.as_view(), name="export-list"),
    path("exports/<int:job_id>/", apis.ExportDetailApi.as_view(), name="export-detail"),
    path("exports/<int:job_id>/files/", apis.ExportFileListApi.as_view(), name="export-files"),
    path("exports/<int:job_id>/files/<str:name>", apis.ExportFileDownloadApi.as_view(), name="export-file"),
    path("rate/<slug:dataset>/claim/", apis.RatingClaimApi.as_view(), name="rate-claim"),
    path("rate/<slug:dataset>/slots/<int:slot_id>/heartbeat/", apis.SlotHeartbeatApi.as_view(), name="rate-heartbeat"),
    path("rate/<slug:dataset>/slots/<int:slot_id>/submit/", apis.RatingSubmitApi.as_view(), name="rate-submit"),
    path("rate/<slug:dataset>/slots/<int:slot_id>/skip/", apis.SlotSkipApi.as_view(), name="rate-skip"),
    path("rate/<slug:dataset>/slots/<int:slot_id>/flag/", apis.SlotFlagApi.as_view(), name="rate-flag"),
    path("rate/<slug:dataset>/progress/", apis.RaterProgressApi.as_view(), name="rate-progress"),
    path("rate/<slug:dataset>/ratings/", apis.RaterRatingListApi.as_view(), name="rate-ratings"),
    path("raters/<str:username>/qualifications/", apis.RaterQualificationsApi.as_view(), name="rater-qualifications"),
]

# Mounted at /media/images/ by config/urls.py.
image_urlpatterns = [
    path("<slug:dataset>/<path:key>", apis.ImageFileApi.as_view(), name="image-file"),
]
