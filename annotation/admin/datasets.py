"""Admin pages. Imports start background jobs whose progress shows on the Job list."""

from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from annotation.admin.accounts import AccountUserAdmin  # noqa: F401 (registers)
from annotation.admin.crowd import CampaignLinkAdmin  # noqa: F401 (registers)
from annotation.admin.inlines import LabelledTabularInline
from annotation.admin.pairs import FlagAdmin, PairAdmin, RatingAdmin, RatingSlotAdmin  # noqa: F401 (registers)
from annotation.admin.quality import QualitySettingsInline, RatingExclusionAdmin  # noqa: F401 (registers)
from annotation.admin.runs import RunAdminMixin
from annotation.catalog.upload_limits import limited_upload_view, upload_form_is_valid
from annotation.catalog.uploads import EMBEDDINGS, KARPATHY, OBJECTS, UploadKind, upload_store_all
from annotation.core.errors import DomainError
from annotation.dashboard.speed_floors import speed_floor_marks_request
from annotation.jobs.dispatch import JOB_RUNS, import_job_start
from annotation.models import (
    Caption,
    Dataset,
    EmbeddingSpace,
    Image,
    Job,
    Modality,
    ObjectAnnotation,
    Qualification,
    SpeedFloor,
    Split,
    TaskKind,
)


class KarpathyImportForm(forms.Form):
    file = forms.FileField(help_text="Karpathy-split JSON (dataset_coco.json shape)")
    name = forms.SlugField(help_text="New dataset name, or an existing one to add splits")
    images_root = forms.CharField(required=False, help_text="Folder on the server holding the images")
    image_url_prefix = forms.CharField(required=False, help_text="Or: URL prefix the images are served from")
    splits = forms.CharField(required=False, help_text="Comma-separated splits to import; empty: all")
    key_prefix = forms.CharField(
        required=False, help_text="Caption key prefix such as COCO_val2014, if file names lack one"
    )


class EmbeddingImportForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all())
    space = forms.SlugField()
    modality = forms.ChoiceField(choices=Modality.choices)
    vectors = forms.FileField(help_text=".npy, float (rows, dims)")
    ids = forms.FileField(help_text="One item key per line, in row order")
    model_name = forms.CharField(required=False)


class ObjectImportForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all(), help_text="The dataset whose images they are")
    file = forms.FileField(
        help_text="COCO instances JSON (instances_val2014.json shape); images matched by COCO id, else by file name"
    )


def _start_job(request, kind: str, params: dict) -> Job:
    job = import_job_start(kind=kind, params=params, created_by=request.user)
    messages.info(request, f"Started job #{job.id}; its progress shows on the jobs list.")
    return job


def _store_uploads(form, params: dict, files: dict[str, tuple[str, UploadKind, str]]) -> bool:
    """Store the form's files, all or none (``upload_store_all``), their paths into
    ``params`` (param -> (form field, upload kind, suffix)). A file that cannot be stored
    (too large, its name too long) becomes an error on its field: False then."""
    uploads = {field: (form.cleaned_data[field], kind, suffix) for field, kind, suffix in files.values()}
    try:
        stored = upload_store_all(uploads)
    except DomainError as exc:
        form.add_error(exc.field, str(exc))
        return False
    params.update({param: stored[field] for param, (field, _, _) in files.items()})
    return True


class SpeedFloorInline(LabelledTabularInline):
    """The campaign dashboard's speed floor per kind; a kind without a row uses the default."""

    model = SpeedFloor
    extra = 0
    max_num = len(TaskKind.values)
    verbose_name = "speed floor (dashboard)"
    # Django would append an "s" to the whole name: "speed floor (dashboard)s".
    verbose_name_plural = "speed floors (dashboard)"


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "images_root", "image_url_prefix", "created_at"]
    inlines = [SpeedFloorInline, QualitySettingsInline]
    search_fields = ["name"]
    change_list_template = "admin/annotation/dataset/change_list.html"

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.model is not SpeedFloor:
            return
        # Ratings carry the mark of the floor they were given under; a new floor re-marks
        # them, in the background (a CxC-sized kind is hundreds of thousands of rows).
        changed = {floor.kind for floor in [*formset.new_objects, *(obj for obj, _ in formset.changed_objects)]}
        changed |= {floor.kind for floor in formset.deleted_objects}
        for kind in sorted(changed):
            speed_floor_marks_request(dataset_id=form.instance.pk, kind=kind)
            self.message_user(request, f"{kind}: the ratings are being marked against the new speed floor.")

    def get_urls(self):
        return [
            path(
                "import-karpathy/",
                self.admin_site.admin_view(limited_upload_view(self.import_karpathy, {"file": KARPATHY})),
                name="dataset-import-karpathy",
            ),
            path(
                "import-embeddings/",
                self.admin_site.admin_view(
                    limited_upload_view(self.import_embeddings, {"vectors": EMBEDDINGS, "ids": EMBEDDINGS})
                ),
                name="dataset-import-embeddings",
            ),
            path(
                "import-objects/",
                self.admin_site.admin_view(limited_upload_view(self.import_objects, {"file": OBJECTS})),
                name="dataset-import-objects",
            ),
            *super().get_urls(),
        ]

    def import_karpathy(self, request):
        form = KarpathyImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and upload_form_is_valid(request, form):
            data = form.cleaned_data
            params = {
                "name": data["name"],
                "images_root": data["images_root"],
                "image_url_prefix": data["image_url_prefix"],
                "splits": [s.strip() for s in data["splits"].split(",") if s.strip()],
                "key_prefix": data["key_prefix"],
            }
            if _store_uploads(form, params, {"path": ("file", KARPATHY, ".json")}):
                _start_job(request, Job.Kind.IMPORT_KARPATHY, params)
                return redirect(reverse("admin:annotation_job_changelist"))
        return self._form_page(request, form, "Import Karpathy JSON")

    def import_embeddings(self, request):
        form = EmbeddingImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and upload_form_is_valid(request, form):
            data = form.cleaned_data
            params = {
                "dataset": data["dataset"].name,
                "space": data["space"],
                "modality": data["modality"],
                "model_name": data["model_name"],
            }
            files = {"vectors_path": ("vectors", EMBEDDINGS, ".npy"), "ids_path": ("ids", EMBEDDINGS, ".txt")}
            if _store_uploads(form, params, files):
                _start_job(request, Job.Kind.IMPORT_EMBEDDINGS, params)
                return redirect(reverse("admin:annotation_job_changelist"))
        return self._form_page(request, form, "Import embeddings")

    def import_objects(self, request):
        form = ObjectImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and upload_form_is_valid(request, form):
            params = {"dataset": form.cleaned_data["dataset"].name}
            if _store_uploads(form, params, {"path": ("file", OBJECTS, ".json")}):
                _start_job(request, Job.Kind.IMPORT_OBJECTS, params)
                return redirect(reverse("admin:annotation_job_changelist"))
        return self._form_page(request, form, "Import object annotations")

    def _form_page(self, request, form, title):
        context = {**self.admin_site.each_context(request), "form": form, "title": title, "opts": self.model._meta}
        return TemplateResponse(request, "admin/annotation/import_form.html", context)


@admin.register(Split)
class SplitAdmin(admin.ModelAdmin):
    list_display = ["dataset", "name"]
    list_filter = ["dataset"]


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["key", "dataset", "split", "file_path", "width", "height"]
    list_filter = ["dataset", "split"]
    search_fields = ["key"]
    list_select_related = ["dataset", "split"]
    show_full_result_count = False


@admin.register(ObjectAnnotation)
class ObjectAnnotationAdmin(admin.ModelAdmin):
    """The objects imported into images (``manage.py import_objects``), to look at."""

    list_display = ["category", "image", "area", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "iscrowd"]
    list_filter = ["image__dataset"]
    search_fields = ["category", "image__key"]
    raw_id_fields = ["image"]
    list_select_related = ["image"]
    show_full_result_count = False


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["key", "text", "image"]
    list_filter = ["dataset"]
    search_fields = ["key", "text"]
    raw_id_fields = ["image"]
    list_select_related = ["image"]
    show_full_result_count = False


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "modality", "model_name", "dimension", "count", "created_at"]
    list_filter = ["dataset", "modality"]
    readonly_fields = ["vectors_path", "ids_path", "dimension", "count"]


@admin.register(Job)
class JobAdmin(RunAdminMixin, admin.ModelAdmin):
    run_kind = JOB_RUNS
    list_display = ["id", "kind", "dataset", "target", *RunAdminMixin.run_columns, "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = [f.name for f in Job._meta.fields]

    @admin.display(description="dataset")
    def dataset(self, job: Job) -> str:
        return job.params.get("dataset") or job.params.get("name") or "-"

    @admin.display(description="target")
    def target(self, job: Job) -> str:
        """What the job writes: an export's folder, an import's dataset splits or space."""
        params = job.params
        if job.kind == Job.Kind.EXPORT_DATASET:
            return params.get("out", "-")
        if job.kind == Job.Kind.IMPORT_EMBEDDINGS:
            return f"space {params.get('space', '?')} ({params.get('modality', '?')})"
        if job.kind == Job.Kind.IMPORT_OBJECTS:
            return "object annotations"
        return f"splits {', '.join(params.get('splits') or []) or 'all'}"

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Qualification)
class QualificationAdmin(admin.ModelAdmin):
    list_display = ["rater", "kind", "dataset", "granted_at"]
    list_filter = ["kind", "dataset"]
