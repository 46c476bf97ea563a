"""A dataset's campaign numbers (researchers and admins): the dashboard's snapshot and its
rater table as JSON, the same figures the campaign pages show, and a refresh on demand.
Like the pages, every answer reads the newest snapshot and nothing per rater or pair."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.catalog import selectors
from annotation.core.errors import NotFound
from annotation.core.roles import IsResearcher
from annotation.dashboard.selectors import campaign_snapshot_part
from annotation.dashboard.services import campaign_refresh_request
from annotation.quality.flag_settings import flag_thresholds_get
from annotation.quality.flags import flagged_first
from config.openapi import error_response

# The rater table's page size: a campaign's rows are all in its snapshot, so a page is
# cheap; the cap keeps one answer under a few MB for a crowd study of thousands.
RATERS_PAGE_DEFAULT = 500
RATERS_PAGE_MAX = 1000


class SnapshotMissing(NotFound):
    code = "no_snapshot"


def _snapshot(dataset_name: str, keys: tuple[str, ...]):
    dataset = selectors.dataset_get(name=dataset_name)
    part = campaign_snapshot_part(dataset=dataset, keys=keys)
    if part is None:
        raise SnapshotMissing(
            f"dataset {dataset.name!r} has no campaign snapshot yet: POST "
            f"/api/datasets/{dataset.name}/campaign/refresh/ and ask again in a minute"
        )
    return dataset, part


def _per_kind(help_text: str, child=None):
    return serializers.DictField(child=child or serializers.IntegerField(), help_text=help_text)


class ProgressCountsSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="sts, sis or sits.")
    pairs_queued = serializers.IntegerField(help_text="Pairs not retired.")
    pairs_complete = serializers.IntegerField()
    pairs_in_progress = serializers.IntegerField(help_text="A rating or a held lease, not complete.")
    pairs_flagged = serializers.IntegerField(help_text="With an unresolved flag.")
    ratings_done = serializers.IntegerField()
    ratings_required = serializers.IntegerField()


class BatchProgressSerializer(ProgressCountsSerializer):
    batch_id = serializers.IntegerField()
    batch_name = serializers.CharField()


class DayCountSerializer(serializers.Serializer):
    date = serializers.DateField()
    ratings = serializers.IntegerField()


class HourCountSerializer(serializers.Serializer):
    hour = serializers.IntegerField(help_text="0-23, UTC.")
    ratings = serializers.IntegerField()


class PaceSerializer(serializers.Serializer):
    state = serializers.CharField()
    window = serializers.CharField(allow_null=True, help_text="last_hour or since_first_rating; null: no ratings.")
    window_seconds = serializers.FloatField()
    ratings = serializers.IntegerField()
    per_hour = serializers.FloatField(allow_null=True)


class AdaptiveSavingsSerializer(serializers.Serializer):
    pairs_closed = serializers.IntegerField(help_text="Complete pairs of adaptive batches.")
    ratings = serializers.IntegerField(help_text="Their valid ratings.")
    fixed_n = serializers.IntegerField(help_text="The fixed N compared with (CxC's five).")
    fixed_ratings = serializers.IntegerField()
    saved = serializers.IntegerField(help_text="fixed_ratings - ratings; negative: adaptive N asked for more.")
    saved_share = serializers.FloatField()


class ProgressSerializer(serializers.Serializer):
    by_kind = ProgressCountsSerializer(many=True)
    by_batch = BatchProgressSerializer(many=True)
    ratings_per_day = DayCountSerializer(many=True)
    ratings_per_hour_today = HourCountSerializer(many=True)
    ratings_last_24h = serializers.IntegerField()
    ratings_remaining = serializers.IntegerField()
    pace = PaceSerializer()
    finish_estimate = serializers.DateTimeField(allow_null=True, help_text="Null without a pace above 0.")
    raters_active_last_hour = serializers.IntegerField()
    leases_held = serializers.IntegerField()
    adaptive = AdaptiveSavingsSerializer(allow_null=True, default=None, help_text="Null: no adaptive pair closed.")


class AlphaSerializer(serializers.Serializer):
    kind = serializers.CharField()
    alpha = serializers.FloatField(allow_null=True, help_text="Interval Krippendorff's alpha; null: undefined.")
    pairs = serializers.IntegerField()


class BatchAlphaSerializer(AlphaSerializer):
    batch_id = serializers.IntegerField()
    batch_name = serializers.CharField()


class HistogramSerializer(serializers.Serializer):
    kind = serializers.CharField()
    method = serializers.CharField(required=False, help_text="The sampling method (pair mean histograms only).")
    bin_edges = serializers.ListField(child=serializers.FloatField())
    counts = serializers.ListField(child=serializers.IntegerField())


class PositiveShareSerializer(serializers.Serializer):
    kind = serializers.CharField()
    method = serializers.CharField()
    pairs = serializers.IntegerField(help_text="Complete pairs.")
    positives = serializers.IntegerField()
    share = serializers.FloatField(allow_null=True)


class MeasuredHalvesSerializer(serializers.Serializer):
    raters = serializers.IntegerField(help_text="k: ratings in each half.")
    correlation = serializers.FloatField(help_text="Between the means of two disjoint halves of k ratings.")
    pairs = serializers.IntegerField()


class PredictedReliabilitySerializer(serializers.Serializer):
    raters = serializers.IntegerField(help_text="N")
    reliability = serializers.FloatField(help_text="Of the mean of N ratings (Spearman-Brown).")


class ReliabilitySerializer(serializers.Serializer):
    kind = serializers.CharField()
    measured = MeasuredHalvesSerializer(many=True)
    single_rating = serializers.FloatField(allow_null=True, help_text="Reliability of one rating; null: too few pairs.")
    predicted = PredictedReliabilitySerializer(many=True)


class QualitySerializer(serializers.Serializer):
    alpha_by_kind = AlphaSerializer(many=True)
    alpha_by_batch = BatchAlphaSerializer(many=True)
    pair_mean_histograms = HistogramSerializer(many=True)
    pair_sd_histograms = HistogramSerializer(many=True)
    positive_share = PositiveShareSerializer(many=True)
    reliability_by_kind = ReliabilitySerializer(
        many=True, default=list, help_text="What each rating buys, per kind with complete pairs."
    )


class CampaignSnapshotSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    made_at = serializers.DateTimeField(help_text="When the snapshot was made; POST .../refresh/ for a new one.")
    refresh_seconds = serializers.FloatField(help_text="How long making it took.")
    speed_floors = _per_kind("Seconds per item under which a rating is fast, per kind.", serializers.FloatField())
    progress = ProgressSerializer()
    quality = QualitySerializer()


class PauseNoteSerializer(serializers.Serializer):
    pause_id = serializers.IntegerField()
    reason = serializers.CharField()
    automatic = serializers.BooleanField()
    since = serializers.DateTimeField()


class KindAgreementSerializer(serializers.Serializer):
    loo_correlation = serializers.FloatField(allow_null=True)
    bias = serializers.FloatField(allow_null=True)
    shared_pairs = serializers.IntegerField()


class RaterEffectsSerializer(serializers.Serializer):
    ratings = serializers.IntegerField()
    bias = serializers.FloatField()
    bias_low = serializers.FloatField()
    bias_high = serializers.FloatField()
    noise_sd = serializers.FloatField()
    noise_low = serializers.FloatField()
    noise_high = serializers.FloatField()


class CampaignRaterSerializer(serializers.Serializer):
    """One row of the rater table (the page's columns as raw numbers; null: undefined)."""

    rater_id = serializers.IntegerField()
    username = serializers.CharField()
    flag_reasons = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why the dataset's thresholds flag the rater, e.g. 'LOO r 0.05 < 0.30'; empty: not flagged.",
    )
    ratings_today = _per_kind("Ratings today (UTC) per kind.")
    ratings_total = _per_kind("Ratings in total per kind.")
    ratings_today_all = serializers.IntegerField()
    ratings_total_all = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True, help_text="Median seconds per item.")
    fast_share = serializers.FloatField(allow_null=True, help_text="Share of ratings faster than the speed floor.")
    loo_correlation = serializers.FloatField(allow_null=True, help_text="Against the others' mean, complete pairs.")
    bias = serializers.FloatField(allow_null=True)
    shared_pairs = serializers.IntegerField()
    skips = serializers.IntegerField()
    flags = serializers.IntegerField()
    last_active = serializers.DateTimeField(allow_null=True)
    gold_items = serializers.IntegerField(default=0)
    gold_error = serializers.FloatField(allow_null=True, default=None)
    gold_bias = serializers.FloatField(allow_null=True, default=None)
    gold_passed = serializers.IntegerField(default=0, help_text="Gold pairs skipped or flagged unrated.")
    excluded = serializers.IntegerField(default=0)
    superseded = serializers.IntegerField(default=0)
    paused = PauseNoteSerializer(allow_null=True, default=None, help_text="The active pause; null: not paused.")
    quota = serializers.IntegerField(
        allow_null=True, default=None, help_text="A crowd participant's quota (their links' largest); null: none."
    )
    by_kind = serializers.DictField(child=KindAgreementSerializer(), help_text="Agreement per kind rated.")
    model = serializers.DictField(
        child=RaterEffectsSerializer(),
        default=dict,
        help_text="The rater-effects model's bias and noise sd per kind (latest fit), with 95% intervals.",
    )


class CampaignRaterPageSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    made_at = serializers.DateTimeField()
    count = serializers.IntegerField(help_text="Raters in the snapshot.")
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    raters = CampaignRaterSerializer(
        many=True, help_text="Flagged raters first, then most ratings first, then by username (as the page)."
    )


class CampaignSnapshotApi(APIView):
    """The dataset's newest campaign snapshot: progress and quality, the numbers of the
    campaign dashboard page."""

    permission_classes = [IsResearcher]

    @extend_schema(
        responses={
            200: CampaignSnapshotSerializer,
            404: error_response("No such dataset, or no snapshot yet (code no_snapshot)."),
        }
    )
    def get(self, request, dataset: str):
        dataset_obj, part = _snapshot(dataset, ("speed_floors", "progress", "quality"))
        body = {"dataset": dataset_obj.name, "made_at": part.made_at, "refresh_seconds": part.refresh_seconds}
        return Response(CampaignSnapshotSerializer({**body, **part.data}).data)


class CampaignRaterListApi(APIView):
    """The rater table of the newest snapshot, a page of rows at a time (``limit`` at most
    1000, default 500; ``count`` says how many there are)."""

    permission_classes = [IsResearcher]

    class PageSerializer(serializers.Serializer):
        limit = serializers.IntegerField(min_value=1, max_value=RATERS_PAGE_MAX, default=RATERS_PAGE_DEFAULT)
        offset = serializers.IntegerField(min_value=0, max_value=2_147_483_647, default=0)

    @extend_schema(
        parameters=[PageSerializer],
        responses={
            200: CampaignRaterPageSerializer,
            404: error_response("No such dataset, or no snapshot yet (code no_snapshot)."),
        },
    )
    def get(self, request, dataset: str):
        page = self.PageSerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        limit, offset = page.validated_data["limit"], page.validated_data["offset"]
        dataset_obj, part = _snapshot(dataset, ("raters",))
        rows = flagged_first(part.data["raters"], flag_thresholds_get(dataset_id=dataset_obj.pk))
        body = {
            "dataset": dataset_obj.name,
            "made_at": part.made_at,
            "count": len(rows),
            "limit": limit,
            "offset": offset,
            "raters": rows[offset : offset + limit],
        }
        return Response(CampaignRaterPageSerializer(body).data)


class QueuedSerializer(serializers.Serializer):
    detail = serializers.CharField()


class CampaignRefreshApi(APIView):
    """Queue a new snapshot of the dataset (as the pages' "Refresh now"); the worker makes
    it within a minute or so: ``made_at`` of the snapshot says when it is there."""

    permission_classes = [IsResearcher]

    @extend_schema(
        request=None,
        responses={202: QueuedSerializer, 404: error_response("No such dataset.")},
    )
    def post(self, request, dataset: str):
        campaign_refresh_request(selectors.dataset_get(name=dataset))
        return Response({"detail": "a new snapshot is queued"}, status=status.HTTP_202_ACCEPTED)
