"""Admin pages of model audits (sampling method model_topk): the page that creates an
audit batch, and the read-only list of the retrievals behind audited pairs."""

from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.urls import reverse

from annotation.models import EmbeddingSpace, Split
from sampling.methods.model_topk import DIRECTION_MODALITIES, DIRECTIONS, MODEL_TOPK
from sampling.models import AuditRetrieval
from sampling.services import PRIORITY_LIMIT, sampling_batch_create

# Models one audit page offers rows for (the API and the command take any number).
AUDIT_FORM_MODELS = 3


class SpaceField(forms.ModelChoiceField):
    def label_from_instance(self, space: EmbeddingSpace) -> str:
        return f"{space.dataset.name}: {space.name} ({space.dimension}-d)"


class AuditForm(forms.Form):
    split = forms.ModelChoiceField(queryset=Split.objects.select_related("dataset").order_by("dataset__name", "name"))
    k = forms.IntegerField(initial=10, min_value=1, help_text="Each query's top k items become pairs.")
    queries = forms.IntegerField(
        required=False, min_value=1, help_text="Queries sampled per direction (with the seed); empty: every item."
    )
    directions = forms.MultipleChoiceField(
        choices=[(d, f"{d}: {' -> '.join(DIRECTION_MODALITIES[d])}") for d in DIRECTIONS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every direction all the models have spaces for (caption -> image and "
        "image -> caption need an image and a caption space of one dimension).",
    )
    budget = forms.IntegerField(required=False, min_value=1, help_text="Pairs at most, best ranks first; empty: all.")
    ratings_per_pair = forms.IntegerField(initial=5, help_text="Distinct raters per pair (five, as CxC).")
    seed = forms.IntegerField(initial=0, min_value=0, help_text="The same seed gives the same pairs.")
    priority = forms.IntegerField(
        initial=0, min_value=-PRIORITY_LIMIT, max_value=PRIORITY_LIMIT, help_text="Higher batches are rated first."
    )
    start = forms.BooleanField(initial=True, required=False, help_text="Start sampling as soon as it is created.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        spaces = EmbeddingSpace.objects.select_related("dataset").order_by("dataset__name", "name")
        for n in range(AUDIT_FORM_MODELS):
            self.fields[f"model_{n}_name"] = forms.CharField(
                required=False, max_length=100, label="name", help_text="How the model is named in the records."
            )
            for modality in ("image", "caption"):
                self.fields[f"model_{n}_{modality}"] = SpaceField(
                    queryset=spaces.filter(modality=modality), required=False, label=f"{modality} space"
                )

    def model_rows(self):
        """(name, image space, caption space) bound fields of each model row."""
        return [
            tuple(self[f"model_{n}_{part}"] for part in ("name", "image", "caption")) for n in range(AUDIT_FORM_MODELS)
        ]

    def clean(self):
        data = super().clean()
        filled = [
            n for n in range(AUDIT_FORM_MODELS) if any(data.get(f"model_{n}_{p}") for p in ("name", "image", "caption"))
        ]
        if not filled:
            raise forms.ValidationError(
                "Fill in at least one model: a name and its image space, caption space or both."
            )
        return data

    def audit(self) -> dict:
        data = self.cleaned_data
        models = []
        for n in range(AUDIT_FORM_MODELS):
            image, caption = data.get(f"model_{n}_image"), data.get(f"model_{n}_caption")
            name = (data.get(f"model_{n}_name") or "").strip()
            if name or image or caption:
                models.append(
                    {
                        "name": name,
                        "image_space": image.name if image else None,
                        "caption_space": caption.name if caption else None,
                    }
                )
        audit: dict = {"models": models, "queries": data.get("queries")}
        if data.get("directions"):
            audit["directions"] = data["directions"]
        return audit


def audit_view(model_admin, request):
    """Create an audit batch: every input checked by the service, a problem said on the form."""
    form = AuditForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        split = data["split"]
        batch = model_admin._create(
            request,
            form,
            lambda: sampling_batch_create(
                dataset_name=split.dataset.name,
                split_name=split.name,
                methods={MODEL_TOPK: data.get("budget")},
                k=data["k"],
                audit=form.audit(),
                ratings_per_pair=data["ratings_per_pair"],
                seed=data["seed"],
                priority=data["priority"],
                created_by=request.user,
                start=data["start"],
            ),
        )
        if batch is not None:
            directions = ", ".join(batch.audit["directions"])
            messages.info(request, f"Batch #{batch.pk} audits {directions} with the top {batch.k} of each query.")
            return redirect(reverse("admin:sampling_samplingbatch_changelist"))
    return model_admin._form_page(request, form, "Audit models: rate their own top-k", audit_models=form.model_rows())


@admin.register(AuditRetrieval)
class AuditRetrievalAdmin(admin.ModelAdmin):
    """Which model retrieved which audited pair, in which direction, at which rank."""

    list_display = ["pair", "batch", "model_name", "direction", "rank"]
    list_filter = ["model_name", "direction", ("batch", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["pair", "batch"]
    readonly_fields = ["pair", "batch", "model_name", "direction", "rank"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # A record goes with its pair, never alone.
        return False
