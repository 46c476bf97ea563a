from django.urls import path

from annotation import apis

urlpatterns = [
    path("datasets/", apis.DatasetListApi.as_view(), name="dataset-list"),
    path("imports/karpathy/", apis.ImportKarpathyApi.as_view(), name="import-karpathy"),
    path("imports/embeddings/", apis.ImportEmbeddingsApi.as_view(), name="import-embeddings"),
    path("jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="job-detail"),
    path("exports/", apis.ExportListApi.as_view(), name="export-list"),
    path("exports/<int:job_id>/", apis.ExportDetailApi.as_view(), name="export-detail"),
    path("exports/<int:job_id>/files/", apis.ExportFileListApi.as_view(), name="export-files"),
    path("exports/<int:job_id>/files/<str:name>", apis.ExportFileDownloadApi.as_view(), name="export-file"),
]
