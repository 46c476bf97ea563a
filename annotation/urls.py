from django.urls import path

import config.converters  # noqa: F401  (registers <id:...>, the bounded database id)
from annotation.apis import (
    accounts,
    campaign,
    campaign_links,
    datasets,
    evaluations,
    exclusions,
    exports,
    gold,
    images,
    jobs,
    participants,
    pauses,
    quiz,
    raters,
    rating,
    rating_progress,
    reviews,
)
from annotation.apis.fast_path import token_fast_path
from annotation.apis.rating_cycle import claim_input, submit_input

urlpatterns = [
    # The rating cycle first: every request walks the patterns in order until one matches,
    # and these take nearly all requests.
    path(
        "rate/<slug:dataset>/claim/",
        token_fast_path(
            rating.RatingClaimApi.as_view(),
            claim_input,
            rating.claim_answer,
            rating.RatingClaimApi.RatingClaimInputSerializer,
        ),
        name="rate-claim",
    ),
    path(
        "rate/<slug:dataset>/slots/<slot_ref:slot_id>/heartbeat/",
        rating.SlotHeartbeatApi.as_view(),
        name="rate-heartbeat",
    ),
    path(
        "rate/<slug:dataset>/slots/<slot_ref:slot_id>/submit/",
        token_fast_path(
            rating.RatingSubmitApi.as_view(),
            submit_input,
            rating.submit_answer_for,
            rating.RatingSubmitApi.RatingSubmitInputSerializer,
        ),
        name="rate-submit",
    ),
    path("auth/token/", accounts.TokenApi.as_view(), name="auth-token"),
    path("auth/tokens/", accounts.TokenSetApi.as_view(), name="auth-tokens"),
    path("users/<str:username>/tokens/", accounts.UserTokensApi.as_view(), name="user-tokens"),
    path("datasets/", datasets.DatasetListApi.as_view(), name="dataset-list"),
    path("datasets/<slug:dataset>/exclusions/", exclusions.ExclusionListApi.as_view(), name="exclusion-list"),
    path(
        "datasets/<slug:dataset>/exclusions/<id:exclusion_id>/",
        exclusions.ExclusionDetailApi.as_view(),
        name="exclusion-detail",
    ),
    path(
        "datasets/<slug:dataset>/exclusions/<id:exclusion_id>/undo/",
        exclusions.ExclusionUndoApi.as_view(),
        name="exclusion-undo",
    ),
    path("datasets/<slug:dataset>/pauses/", pauses.PauseListApi.as_view(), name="pause-list"),
    path("datasets/<slug:dataset>/pauses/<id:pause_id>/lift/", pauses.PauseLiftApi.as_view(), name="pause-lift"),
    path(
        "datasets/<slug:dataset>/campaign-links/",
        campaign_links.CampaignLinkListApi.as_view(),
        name="campaign-link-list",
    ),
    path(
        "datasets/<slug:dataset>/campaign-links/<id:link_id>/participants/",
        participants.CampaignLinkParticipantsApi.as_view(),
        name="campaign-link-participants",
    ),
    path(
        "datasets/<slug:dataset>/campaign-links/<id:link_id>/close/",
        campaign_links.CampaignLinkCloseApi.as_view(),
        name="campaign-link-close",
    ),
    path("datasets/<slug:dataset>/campaign/", campaign.CampaignSnapshotApi.as_view(), name="campaign-snapshot-api"),
    path(
        "datasets/<slug:dataset>/campaign/raters/",
        campaign.CampaignRaterListApi.as_view(),
        name="campaign-raters-api",
    ),
    path(
        "datasets/<slug:dataset>/campaign/refresh/", campaign.CampaignRefreshApi.as_view(), name="campaign-refresh-api"
    ),
    path("datasets/<slug:dataset>/gold/", gold.GoldListApi.as_view(), name="gold-list"),
    path("datasets/<slug:dataset>/gold/promote/", gold.GoldPromoteApi.as_view(), name="gold-promote"),
    path("datasets/<slug:dataset>/quiz/", quiz.QuizSettingsApi.as_view(), name="quiz-settings"),
    path("datasets/<slug:dataset>/quality/", gold.QualitySettingsApi.as_view(), name="quality-settings"),
    path("imports/karpathy/", datasets.ImportKarpathyApi.as_view(), name="import-karpathy"),
    path("imports/embeddings/", datasets.ImportEmbeddingsApi.as_view(), name="import-embeddings"),
    path("imports/objects/", datasets.ImportObjectsApi.as_view(), name="import-objects"),
    path("jobs/<id:job_id>/", jobs.JobDetailApi.as_view(), name="job-detail"),
    path("exports/", exports.ExportListApi.as_view(), name="export-list"),
    path("exports/<id:job_id>/", exports.ExportDetailApi.as_view(), name="export-detail"),
    path("exports/<id:job_id>/files/", exports.ExportFileListApi.as_view(), name="export-files"),
    path("evaluations/", evaluations.EvaluationListApi.as_view(), name="evaluation-list"),
    path("evaluations/<id:job_id>/", evaluations.EvaluationDetailApi.as_view(), name="evaluation-detail"),
    path("evaluations/<id:job_id>/failures/", evaluations.EvaluationFailuresApi.as_view(), name="evaluation-failures"),
    path(
        "evaluations/<id:job_id>/files/<str:name>",
        evaluations.EvaluationFileDownloadApi.as_view(),
        name="evaluation-file",
    ),
    path("evaluations/<id:job_id>/review/", reviews.EvaluationReviewApi.as_view(), name="evaluation-review"),
    path("evaluations/<id:job_id>/review.csv", reviews.EvaluationReviewFileApi.as_view(), name="evaluation-review-csv"),
    path("rate/<slug:dataset>/review/claim/", reviews.ReviewClaimApi.as_view(), name="review-claim"),
    path(
        "rate/<slug:dataset>/review/<review_ref:slot_id>/submit/",
        reviews.ReviewSubmitApi.as_view(),
        name="review-submit",
    ),
    path(
        "rate/<slug:dataset>/review/<review_ref:slot_id>/heartbeat/",
        reviews.ReviewHeartbeatApi.as_view(),
        name="review-heartbeat",
    ),
    path("rate/<slug:dataset>/review/<review_ref:slot_id>/skip/", reviews.ReviewSkipApi.as_view(), name="review-skip"),
    path("exports/<id:job_id>/archive", exports.ExportArchiveApi.as_view(), name="export-archive"),
    path("exports/<id:job_id>/files/<str:name>", exports.ExportFileDownloadApi.as_view(), name="export-file"),
    path("rate/<slug:dataset>/slots/<slot_ref:slot_id>/skip/", rating.SlotSkipApi.as_view(), name="rate-skip"),
    path("rate/<slug:dataset>/slots/<slot_ref:slot_id>/flag/", rating.SlotFlagApi.as_view(), name="rate-flag"),
    path("rate/<slug:dataset>/quiz/<slug:kind>/", quiz.QuizStateApi.as_view(), name="quiz-state"),
    path("rate/<slug:dataset>/quiz/<slug:kind>/answer/", quiz.QuizAnswerApi.as_view(), name="quiz-answer"),
    path("rate/<slug:dataset>/progress/", rating_progress.RaterProgressApi.as_view(), name="rate-progress"),
    path("rate/<slug:dataset>/ratings/", rating.RaterRatingListApi.as_view(), name="rate-ratings"),
    path("raters/", raters.RaterBulkAddApi.as_view(), name="rater-bulk-add"),
    path(
        "raters/invitation-downloads/<str:token>/",
        raters.RaterInvitationsCsvApi.as_view(),
        name="rater-invitations-csv",
    ),
    path("raters/<str:username>/qualifications/", rating.RaterQualificationsApi.as_view(), name="rater-qualifications"),
]

# Mounted at /media/images/ by config/urls.py.
image_urlpatterns = [
    path("<slug:dataset>/<path:key>", images.ImageFileApi.as_view(), name="image-file"),
]
