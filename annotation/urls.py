from django.urls import path

from annotation import apis

urlpatterns = [
    path("datasets/", apis.DatasetListApi.as_view(), name="dataset-list"),
    path("imports/karpathy/", apis.ImportKarpathyApi.as_view(), name="import-karpathy"),
    path("imports/embeddings/", apis.ImportEmbeddingsApi.as_view(), name="import-embeddings"),
    path("jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="job-detail"),
]
