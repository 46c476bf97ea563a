"""Admin pages for sampling batches: create (sampled or uploaded), start, watch progress."""

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from annotation.admin.runs import RunAdminMixin
from annotation.catalog.upload_limits import limited_upload_view, upload_form_is_valid
from annotation.catalog.uploads import PAIR_LIST, upload_store
from annotation.core.errors import DomainError
from annotation.models import EmbeddingSpace, JobStatus, Split
from sampling import selectors
from sampling.admin.audit import audit_view
from sampling.admin.intrasim import phase_two_table
from sampling.methods import strategies
from sampling.methods.pairlist import MERGE_REPEATS, REFUSE_REPEATS
from sampling.models import SamplingBatch
from sampling.runs.chord import BATCH_RUNS, shards_lines
from sampling.services import (
    PRIORITY_LIMIT,
    sampling_batch_create,
    sampling_batch_create_from_upload,
    sampling_batch_set_priority,
    sampling_batch_start,
)

METHOD_HELP = {
    strategies.I2I_CSIM: "image pairs: k nearest images by mean co-caption embedding (caption spaces)",
    strategies.C2C_ISIM: "caption pairs: one caption of each of two neighbouring images (image spaces)",
    strategies.C2C_COCAPTION: "caption pairs written for the same image",
    strategies.C2I_ORIGINAL: "every caption with its own image",
    strategies.C2I_INTRASIM: "one caption-image pair per fully rated SIS/STS pivot, highest score first",
}


class SplitChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, split: Split) -> str:
        return f"{split.dataset.name} / {split.name}"


class SpaceChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, space: EmbeddingSpace) -> str:
        return f"{space.dataset.name}: {space.name} ({space.modality}, {space.dimension}-d)"


class SamplingBatchForm(forms.Form):
    split = SplitChoiceField(queryset=Split.objects.select_related("dataset").order_by("dataset__name", "name"))
    k = forms.IntegerField(initial=5, help_text="Neighbours per item for the kNN methods.")
    spaces = SpaceChoiceField(
        queryset=EmbeddingSpace.objects.select_related("dataset").order_by("dataset__name", "name"),
        required=False,
        help_text="Embedding spaces to search; none selected: every space of the dataset a method needs.",
    )
    ratings_per_pair = forms.IntegerField(initial=5)
    seed = forms.IntegerField(initial=0, help_text="The same seed gives the same pairs.")
    cocaption = forms.ChoiceField(
        choices=[(mode, mode) for mode in strategies.COCAPTION_MODES],
        initial=strategies.COCAPTION_CYCLE,
        required=False,
        label="c2c_cocaption pairs",
        help_text="cycle: each caption in two pairs (five per image of five captions, as CxC); all: every pair.",
    )
    priority = forms.IntegerField(
        initial=0, min_value=-PRIORITY_LIMIT, max_value=PRIORITY_LIMIT, help_text="Higher batches are rated first."
    )
    start = forms.BooleanField(initial=True, required=False, help_text="Start sampling as soon as it is created.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for method in strategies.METHODS:
            self.fields[f"use_{method}"] = forms.BooleanField(
                required=False, label=method, help_text=METHOD_HELP[method]
            )
            self.fields[f"budget_{method}"] = forms.IntegerField(
                required=False, label=f"{method} budget", help_text="Pairs wanted; empty: all the method gives."
            )

    def methods(self) -> dict[str, int | None]:
        data = self.cleaned_data
        return {m: data.get(f"budget_{m}") for m in strategies.METHODS if data.get(f"use_{m}")}


class PairListUploadForm(forms.Form):
    split = SplitChoiceField(queryset=Split.objects.select_related("dataset").order_by("dataset__name", "name"))
    file = forms.FileField(
        help_text="CSV like the CxC files: caption1,caption2 or image1,image2 or caption,image, "
        "plus sampling_method (agg_score is ignored)."
    )
    ratings_per_pair = forms.IntegerField(initial=5)
    priority = forms.IntegerField(initial=0, min_value=-PRIORITY_LIMIT, max_value=PRIORITY_LIMIT)
    repeats = forms.ChoiceField(
        choices=[(MERGE_REPEATS, "merge: queue it once"), (REFUSE_REPEATS, "refuse the list")],
        initial=MERGE_REPEATS,
        required=False,
        help_text="A pair the list names twice (in either order).",
    )
    start = forms.BooleanField(initial=True, required=False)


@admin.register(SamplingBatch)
class SamplingBatchAdmin(RunAdminMixin, admin.ModelAdmin):
    run_kind = BATCH_RUNS
    list_display = ["id", "where", *RunAdminMixin.run_columns, "pairs", "rated", "created"]
    list_filter = ["status", "source", "dataset"]
    # Only the priority can change once a batch exists; the rest is its record.
    readonly_fields = [
        *(f.name for f in SamplingBatch._meta.fields if f.name != "priority"),
        "audit_results",
        "phase_two_rule",
        "search_shards",
    ]
    actions = ["start_batches"]
    change_list_template = "admin/sampling/samplingbatch/change_list.html"
    # Settings that mean nothing for the other source of batch.
    SAMPLED_ONLY = ("k", "seed", "spaces", "cocaption_pairs")
    UPLOADED_ONLY = ("upload_path", "upload_repeats", "upload_state", "upload_removed_at")

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        if obj is None:
            return fields
        hidden = self.SAMPLED_ONLY if obj.source == SamplingBatch.Source.UPLOADED else self.UPLOADED_ONLY
        if not obj.audit:
            hidden = (*hidden, "audit", "audit_results")
        if strategies.C2I_INTRASIM not in obj.stats:
            hidden = (*hidden, "phase_two_rule")
        if "chord" not in obj.stats:
            hidden = (*hidden, "search_shards")
        return [field for field in fields if field not in hidden]

    @admin.display(description="phase 2 rule (c2i_intrasim)")
    def phase_two_rule(self, batch: SamplingBatch) -> str:
        """What the batch's c2i_intrasim did, from its stats: the rule, and per half the
        pivots, each skip and the pairs taken (sampling.methods.intrasim)."""
        return phase_two_table(batch.stats[strategies.C2I_INTRASIM])

    @admin.display(description="search shards (Celery chord)")
    def search_shards(self, batch: SamplingBatch) -> str:
        """Shards done per stage, retries, the slowest shard and the hosts that ran them."""
        return format_html_join("", "<div>{}</div>", ((line,) for line in shards_lines(batch)))

    @admin.display(description="audit results")
    def audit_results(self, batch: SamplingBatch) -> str:
        """Links to the pairs this audit queued and to what its models retrieved."""
        pairs = reverse("admin:annotation_pair_changelist") + f"?batch__id__exact={batch.pk}"
        retrievals = reverse("admin:sampling_auditretrieval_changelist") + f"?batch__id__exact={batch.pk}"
        return format_html(
            '<a href="{}">{} pairs queued</a> · <a href="{}">{} retrievals recorded</a> (models, directions, ranks)',
            pairs,
            sum(batch.pairs_per_method.values()),
            retrievals,
            batch.audit_retrievals.count(),
        )

    def get_urls(self):
        return [
            path("create/", self.admin_site.admin_view(self.create_view), name="sampling-batch-create"),
            path(
                "audit/",
                self.admin_site.admin_view(lambda request: audit_view(self, request)),
                name="sampling-batch-audit",
            ),
            path(
                "upload/",
                self.admin_site.admin_view(limited_upload_view(self.upload_view, {"file": PAIR_LIST})),
                name="sampling-batch-upload",
            ),
            *super().get_urls(),
        ]

    def has_add_permission(self, request) -> bool:
        # Batches are made through the create and upload pages, which check every input.
        return False

    def changelist_view(self, request, extra_context=None):
        active = SamplingBatch.objects.filter(status__in=[JobStatus.PENDING, JobStatus.RUNNING]).exists()
        return super().changelist_view(request, {**(extra_context or {}), "refresh": active})

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "priority":
            kwargs.update(
                min_value=-PRIORITY_LIMIT,
                max_value=PRIORITY_LIMIT,
                help_text="Higher batches are rated first. A change reorders the batch's queued pairs at once.",
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if not change or "priority" not in form.changed_data:
            return
        batch_id, priority = obj.pk, obj.priority
        # After the admin's own transaction: the service changes the pairs in short
        # transactions so that raters' claims are not held up (see _apply_batch_priority).
        transaction.on_commit(lambda: sampling_batch_set_priority(batch_id=batch_id, priority=priority))
        messages.info(request, f"Batch #{batch_id} and its queued pairs now have priority {priority}.")

    def get_queryset(self, request):
        return selectors.sampling_batches_with_rating_counts(super().get_queryset(request))

    @admin.display(description="batch", ordering="dataset__name")
    def where(self, batch: SamplingBatch) -> str:
        """Dataset / split, and the methods asked for (or the uploaded list's)."""
        label = "uploaded: " if batch.source == SamplingBatch.Source.UPLOADED else ""
        methods = ", ".join(f"{m}={b}" if b is not None else m for m, b in batch.methods.items())
        if batch.audit:
            models = ", ".join(model["name"] for model in batch.audit["models"])
            methods += f" of {models} ({', '.join(batch.audit['directions'])}; top {batch.k})"
        return format_html("{} / {}<br><small>{}{}</small>", batch.dataset.name, batch.split.name, label, methods)

    @admin.display(description="pairs queued")
    def pairs(self, batch: SamplingBatch) -> str:
        if not batch.pairs_per_method:
            return "-"
        per_method = format_html_join(
            "", "<br>{}: {}", ((method, count) for method, count in batch.pairs_per_method.items())
        )
        return format_html("{}<small>{}</small>", sum(batch.pairs_per_method.values()), per_method)

    @admin.display(description="created", ordering="created_at")
    def created(self, batch: SamplingBatch) -> str:
        return batch.created_at.strftime("%Y-%m-%d %H:%M")

    @admin.display(description="rated")
    def rated(self, batch: SamplingBatch) -> str:
        """How far raters are: pairs with all their ratings, and ratings of all slots."""
        if not batch.pairs_total:
            return "-"
        return format_html(
            '<progress value="{}" max="{}"></progress> {} of {} pairs<br><small>{} of {} ratings</small>',
            batch.ratings_given,
            batch.ratings_wanted,
            batch.pairs_complete,
            batch.pairs_total,
            batch.ratings_given,
            batch.ratings_wanted,
        )

    @admin.action(description="Start (or restart) the selected batches")
    def start_batches(self, request, queryset):
        for batch in queryset.order_by("id"):
            try:
                sampling_batch_start(batch=batch)
            except DomainError as exc:
                messages.error(request, str(exc))
            else:
                messages.info(request, f"Started batch #{batch.pk}; its progress shows below.")

    def create_view(self, request):
        form = SamplingBatchForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            split = data["split"]
            batch = self._create(
                request,
                form,
                lambda: sampling_batch_create(
                    dataset_name=split.dataset.name,
                    split_name=split.name,
                    methods=form.methods(),
                    k=data["k"],
                    spaces=[space.name for space in data["spaces"]],
                    ratings_per_pair=data["ratings_per_pair"],
                    seed=data["seed"],
                    priority=data["priority"],
                    cocaption=data["cocaption"] or strategies.COCAPTION_CYCLE,
                    created_by=request.user,
                    start=data["start"],
                ),
            )
            if batch is not None:
                return redirect(reverse("admin:sampling_samplingbatch_changelist"))
        methods = [(form[f"use_{m}"], form[f"budget_{m}"]) for m in strategies.METHODS]
        return self._form_page(request, form, "Create a sampling batch", methods=methods)

    def upload_view(self, request):
        form = PairListUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and upload_form_is_valid(request, form):
            data = form.cleaned_data
            split = data["split"]
            batch = self._create(
                request,
                form,
                # Stored inside the service call, so a file name too long to store is a form error.
                lambda: sampling_batch_create_from_upload(
                    dataset_name=split.dataset.name,
                    split_name=split.name,
                    path=upload_store(data["file"], kind=PAIR_LIST, suffix_hint=".csv"),
                    ratings_per_pair=data["ratings_per_pair"],
                    priority=data["priority"],
                    repeats=data["repeats"] or MERGE_REPEATS,
                    created_by=request.user,
                    start=data["start"],
                ),
            )
            if batch is not None:
                return redirect(reverse("admin:sampling_samplingbatch_changelist"))
        return self._form_page(request, form, "Upload a pair list")

    def _create(self, request, form, create):
        """Create (and start, if asked) in one service call; a DomainError becomes a form error."""
        try:
            batch = create()
        except DomainError as exc:
            form.add_error(None, str(exc))
            return None
        # Embedded mode runs the batch when the creation commits, so it may be done now.
        batch.refresh_from_db()
        if batch.status == JobStatus.SUCCEEDED:
            total = sum(batch.pairs_per_method.values())
            messages.success(request, f"Batch #{batch.pk} succeeded: {total} pairs queued.")
        elif batch.status == JobStatus.FAILED:
            messages.error(request, f"Batch #{batch.pk} failed: {batch.error}")
        elif form.cleaned_data["start"]:
            messages.info(request, f"Batch #{batch.pk} started; its progress shows below.")
        else:
            messages.info(request, f"Batch #{batch.pk} created (start it with the action below).")
        return batch

    def _form_page(self, request, form, title, **extra):
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": title,
            "opts": self.model._meta,
            "summaries": selectors.split_summaries(),
            **extra,
        }
        return TemplateResponse(request, "admin/sampling/samplingbatch/batch_form.html", context)
