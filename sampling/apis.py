"""Thin API views for sampling batches (admins): parse, call one service or selector, serialize."""

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis.fields import StaleRunField
from annotation.catalog.upload_limits import LimitedMultiPartParser
from annotation.catalog.uploads import PAIR_LIST, upload_store
from annotation.core.inputs import BIGINT_MAX
from annotation.core.roles import IsAdmin
from annotation.quality.adaptive_plans import batch_plan_told
from config.openapi import error_response
from sampling import selectors
from sampling.methods import strategies
from sampling.methods.pairlist import MERGE_REPEATS, REPEATS
from sampling.models import SamplingBatch
from sampling.runs.chord import BATCH_RUNS
from sampling.services import (
    PRIORITY_LIMIT,
    AdaptiveN,
    sampling_batch_create,
    sampling_batch_create_from_upload,
    sampling_batch_set_priority,
    sampling_batch_start,
)


class SamplingBatchSerializer(serializers.ModelSerializer):
    dataset = serializers.CharField(source="dataset.name")
    split = serializers.CharField(source="split.name")
    k = serializers.IntegerField(allow_null=True, help_text="Neighbours per item; null for an uploaded list.")
    seed = serializers.IntegerField(allow_null=True, help_text="Null for an uploaded list.")
    spaces = serializers.ListField(
        child=serializers.CharField(), allow_null=True, help_text="Spaces searched; null for an uploaded list."
    )
    cocaption_pairs = serializers.CharField(
        allow_null=True, help_text="Sampled batches: cycle or all co-caption pairs; null for an uploaded list."
    )
    upload_repeats = serializers.CharField(
        allow_null=True, help_text="Uploaded lists: merge or refuse repeated pairs; null for sampled batches."
    )
    stale = StaleRunField(BATCH_RUNS)
    adaptive_plan = serializers.SerializerMethodField(
        help_text="Adaptive N: the precision target and the ratings it is expected to take in all (with a budget, "
        "the target that meets it), from the latest rater-model fits; null for fixed N or no pair open."
    )

    def get_adaptive_plan(self, batch: SamplingBatch) -> dict | None:
        return batch_plan_told(batch)

    class Meta:
        model = SamplingBatch
        fields = [
            "id",
            "dataset",
            "split",
            "source",
            "methods",
            "k",
            "spaces",
            "ratings_per_pair",
            "ratings_max",
            "adaptive_half_width",
            "adaptive_budget",
            "adaptive_plan",
            "seed",
            "priority",
            "status",
            "progress_done",
            "progress_total",
            "progress_message",
            "pairs_per_method",
            "stats",
            "error",
            "runner",
            "stale",
            "upload_state",
            "upload_removed_at",
            "upload_repeats",
            "cocaption_pairs",
            "audit",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def to_representation(self, batch: SamplingBatch) -> dict:
        data = super().to_representation(batch)
        if batch.source == SamplingBatch.Source.UPLOADED:
            # Neighbours, seed and spaces mean nothing for a list someone else sampled.
            data.update(k=None, seed=None, spaces=None, cocaption_pairs=None)
        else:
            data["upload_repeats"] = None
        return data


NO_SPLIT = error_response("No dataset or split of that name.")


def _created(batch: SamplingBatch) -> Response:
    # Read after the commit, so an in-process (eager) run shows its outcome.
    batch = selectors.sampling_batch_get(batch_id=batch.pk)
    return Response(SamplingBatchSerializer(batch).data, status=status.HTTP_201_CREATED)


class RatingsPerPairMixin(serializers.Serializer):
    """How many ratings each pair of a new batch gets: exactly ratings_per_pair, or with
    ratings_max and adaptive_half_width adaptive N (``adaptive_n``)."""

    ratings_per_pair = serializers.IntegerField(
        default=5, help_text="Distinct raters per pair; with ratings_max (adaptive N) the minimum."
    )
    ratings_max = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Adaptive N: at most this many ratings a pair, one more at a time while the pair's 95% "
        "interval is wider than adaptive_half_width. Leave out for exactly ratings_per_pair (as CxC).",
    )
    adaptive_half_width = serializers.FloatField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Adaptive N: the precision target, half a pair's 95% interval (0-5 scale); or give adaptive_budget.",
    )
    adaptive_budget = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Adaptive N: the ratings all the batch's pairs may take; the precision target that meets it is "
        "solved from the rater model (the batch's adaptive_plan tells it).",
    )


def adaptive_n(values: dict) -> AdaptiveN | None:
    """The adaptive rule of a create request: ratings_max with a half-width or a budget, or
    none of them."""
    maximum, half_width = values.get("ratings_max"), values.get("adaptive_half_width")
    budget = values.get("adaptive_budget")
    if maximum is None and half_width is None and budget is None:
        return None
    if maximum is None:
        return _refused("ratings_max", "adaptive N needs ratings_max")
    if (half_width is None) == (budget is None):
        return _refused("adaptive_half_width", "adaptive N needs either adaptive_half_width or adaptive_budget")
    return AdaptiveN(maximum=maximum, half_width=half_width, budget=budget)


def _refused(field: str, message: str):
    raise ValidationError({field: [message]})


class SamplingBatchListApi(APIView):
    """List batches, or create one from a sampling configuration (started unless start=false)."""

    permission_classes = [IsAdmin]

    class InputSerializer(RatingsPerPairMixin, serializers.Serializer):
        dataset = serializers.CharField()
        split = serializers.CharField()
        methods = serializers.DictField(
            child=serializers.IntegerField(allow_null=True),
            help_text='Method name -> budget (null: all the method gives), e.g. {"i2i_csim": null}.',
        )
        k = serializers.IntegerField(default=5)
        spaces = serializers.ListField(child=serializers.CharField(), default=list)
        seed = serializers.IntegerField(default=0, max_value=BIGINT_MAX)
        priority = serializers.IntegerField(default=0)
        cocaption = serializers.ChoiceField(
            choices=strategies.COCAPTION_MODES,
            default=strategies.COCAPTION_CYCLE,
            help_text="c2c_cocaption pairs: cycle (each caption in two pairs, as CxC) or all (every pair of a group).",
        )
        audit = serializers.DictField(
            required=False,
            allow_null=True,
            help_text="With method model_topk: the models audited, "
            '{"models": [{"name": "clip", "image_space": "clip-img", "caption_space": "clip-txt"}], '
            '"directions": ["c2i", "i2c", "c2c", "i2i"] (default: every one all models allow), '
            '"queries": 500 (queries sampled per direction; null: all)}. k is the top-k.',
        )
        start = serializers.BooleanField(default=True)

        class Meta:
            ref_name = "SamplingBatchCreate"

    @extend_schema(responses=SamplingBatchSerializer(many=True))
    def get(self, request):
        return Response(SamplingBatchSerializer(selectors.sampling_batch_list()[:200], many=True).data)

    @extend_schema(request=InputSerializer, responses={201: SamplingBatchSerializer, 404: NO_SPLIT})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        batch = sampling_batch_create(
            dataset_name=values["dataset"],
            split_name=values["split"],
            methods=values["methods"],
            k=values["k"],
            spaces=values["spaces"],
            ratings_per_pair=values["ratings_per_pair"],
            adaptive=adaptive_n(values),
            seed=values["seed"],
            priority=values["priority"],
            cocaption=values["cocaption"],
            audit=values.get("audit"),
            created_by=request.user,
            start=values["start"],
        )
        return _created(batch)


class SamplingBatchUploadApi(APIView):
    """Create a batch from a CSV pair list shaped like the CxC files (started unless
    start=false). A file over UPLOAD_MAX_PAIRLIST_BYTES is refused with 413."""

    permission_classes = [IsAdmin]
    # Files travel in multipart forms only (an urlencoded form cannot carry them).
    parser_classes = [LimitedMultiPartParser]
    upload_kinds = {"file": PAIR_LIST}

    class InputSerializer(RatingsPerPairMixin, serializers.Serializer):
        dataset = serializers.CharField()
        split = serializers.CharField()
        file = serializers.FileField()
        priority = serializers.IntegerField(default=0)
        repeats = serializers.ChoiceField(
            choices=REPEATS,
            default=MERGE_REPEATS,
            help_text="A pair the list names twice (either order): queued once (merge) or the list refused (refuse).",
        )
        start = serializers.BooleanField(default=True)

        class Meta:
            ref_name = "PairListUpload"

    @extend_schema(request=InputSerializer, responses={201: SamplingBatchSerializer, 404: NO_SPLIT})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        stored = upload_store(values["file"], kind=PAIR_LIST, suffix_hint=".csv")
        batch = sampling_batch_create_from_upload(
            dataset_name=values["dataset"],
            split_name=values["split"],
            path=stored,
            ratings_per_pair=values["ratings_per_pair"],
            adaptive=adaptive_n(values),
            priority=values["priority"],
            repeats=values["repeats"],
            created_by=request.user,
            start=values["start"],
        )
        return _created(batch)


class SamplingBatchDetailApi(APIView):
    permission_classes = [IsAdmin]

    class PriorityInputSerializer(serializers.Serializer):
        priority = serializers.IntegerField(
            min_value=-PRIORITY_LIMIT,
            max_value=PRIORITY_LIMIT,
            help_text="Higher batches are rated first; reorders queued pairs.",
        )

    @extend_schema(responses=SamplingBatchSerializer)
    def get(self, request, batch_id: int):
        return Response(SamplingBatchSerializer(selectors.sampling_batch_get(batch_id=batch_id)).data)

    @extend_schema(request=PriorityInputSerializer, responses=SamplingBatchSerializer)
    def patch(self, request, batch_id: int):
        data = self.PriorityInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        sampling_batch_set_priority(batch_id=batch_id, priority=data.validated_data["priority"])
        return Response(SamplingBatchSerializer(selectors.sampling_batch_get(batch_id=batch_id)).data)


class SamplingBatchStartApi(APIView):
    """Start a pending or failed batch (a running one whose worker died counts as failed)."""

    permission_classes = [IsAdmin]

    @extend_schema(
        request=None,
        responses={
            202: SamplingBatchSerializer,
            409: error_response("The batch is running or has succeeded already."),
        },
    )
    def post(self, request, batch_id: int):
        batch = sampling_batch_start(batch=selectors.sampling_batch_get(batch_id=batch_id))
        batch = selectors.sampling_batch_get(batch_id=batch.pk)
        return Response(SamplingBatchSerializer(batch).data, status=status.HTTP_202_ACCEPTED)


class SplitSummarySerializer(serializers.Serializer):
    dataset = serializers.CharField()
    split = serializers.CharField()
    images = serializers.IntegerField()
    captions = serializers.IntegerField()
    spaces = serializers.ListField(child=serializers.DictField())
    pivots = serializers.DictField(child=serializers.DictField())
    ready_pivots = serializers.IntegerField()
    cocaption_pairs = serializers.IntegerField()
    queued = serializers.DictField(child=serializers.IntegerField())


class SplitSummaryApi(APIView):
    """What a split can give a batch: items, embedding spaces, pivots ready for c2i_intrasim."""

    permission_classes = [IsAdmin]

    @extend_schema(responses=SplitSummarySerializer)
    def get(self, request, dataset: str, split: str):
        summary = selectors.split_summary(split=selectors.split_get(dataset_name=dataset, split_name=split))
        data = asdict(summary)
        data["ready_pivots"] = summary.ready_pivots
        return Response(SplitSummarySerializer(data).data)
