"""The gold list's pages: upload a gold CSV with a preview of every row as
raters will see it, promote agreed complete pairs, choose the quiz questions. Thin views:
the services in ``annotation.quality`` check and write; these parse forms and show."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import urlencode

from annotation.admin.pairs import pair_items_html
from annotation.catalog.upload_limits import limited_upload_view, upload_form_is_valid
from annotation.catalog.uploads import PAIR_LIST
from annotation.core.errors import DomainError
from annotation.models import DEFAULT_PROMOTE_MAX_SD, Dataset, GoldPair, Pair, TaskKind
from annotation.quality.gold.staging import (
    PREVIEW_ROWS,
    gold_upload_cancel,
    gold_upload_preview,
    gold_upload_save,
)
from annotation.quality.gold.upload import gold_pairs_promote, gold_promote_candidates
from annotation.quality.quiz import QuizPool, quiz_pools, quiz_set, quiz_settings

# Rows a page lists (with pictures); the counts above them cover all.
LISTED = 200


class GoldUploadForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    file = forms.FileField(
        label="Gold CSV",
        help_text="Header image1,image2 / caption1,caption2 / caption,image, then gold_score (0-5) and "
        "optionally explanation (shown to raters after a quiz answer). Nothing is saved before the preview.",
    )


class DatasetKindForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    kind = forms.ChoiceField(choices=TaskKind.choices)


class PromoteForm(DatasetKindForm):
    max_sd = forms.FloatField(
        label="Largest rating sd",
        min_value=0,
        max_value=5,
        initial=DEFAULT_PROMOTE_MAX_SD,
        help_text="Complete pairs whose valid ratings have at most this sample standard deviation.",
    )


class GoldPagesMixin:
    """URLs and views of the gold list's pages, for GoldPairAdmin."""

    def get_urls(self):
        wrap = self.admin_site.admin_view
        upload = limited_upload_view(self.upload_view, {"file": PAIR_LIST})
        return [
            path("upload/", wrap(upload), name="annotation_goldpair_upload"),
            path("upload/save/", wrap(self.upload_save_view), name="annotation_goldpair_upload_save"),
            path("promote/", wrap(self.promote_view), name="annotation_goldpair_promote"),
            path("quiz/", wrap(self.quiz_view), name="annotation_goldpair_quiz"),
            *super().get_urls(),
        ]

    def _page(self, request, template: str, title: str, **context):
        if not self.has_change_permission(request):
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "title": title, **context}
        return TemplateResponse(request, f"admin/annotation/goldpair/{template}", context)

    def upload_view(self, request):
        """GET: the form. POST: store and check the file, then show every row."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        form = GoldUploadForm(request.POST or None, request.FILES or None)
        preview = None
        if request.method == "POST" and upload_form_is_valid(request, form):
            try:
                preview = gold_upload_preview(
                    uploaded_file=form.cleaned_data["file"], dataset=form.cleaned_data["dataset"], user=request.user
                )
            except DomainError as problem:
                form.add_error("file", str(problem))
        rows = preview.file.rows if preview else []
        listed = [(row, pair_items_html(row.gold, max_px=160) if row.gold else "") for row in rows[:PREVIEW_ROWS]]
        return self._page(
            request, "upload.html", "Upload gold pairs", form=form, preview=preview, listed=listed, shown=PREVIEW_ROWS
        )

    def upload_save_view(self, request):
        """POST a preview's token: save its pairs (or, with ``cancel``, drop the file)."""
        if request.method != "POST":
            return redirect("admin:annotation_goldpair_upload")
        if not self.has_change_permission(request):
            raise PermissionDenied
        token = request.POST.get("token", "")
        try:
            if "cancel" in request.POST:
                gold_upload_cancel(token=token, user=request.user)
                self.message_user(request, "Nothing saved; the uploaded file was removed.", messages.INFO)
                return redirect("admin:annotation_goldpair_changelist")
            dataset, created = gold_upload_save(token=token, user=request.user)
        except DomainError as problem:
            self.message_user(request, f"Nothing saved: {problem}", messages.ERROR)
            return redirect("admin:annotation_goldpair_upload")
        self.message_user(request, f"Added {created} gold pair(s) to {dataset.name}.", messages.SUCCESS)
        return redirect(reverse("admin:annotation_goldpair_changelist") + f"?dataset__id__exact={dataset.pk}")

    def promote_view(self, request):
        """GET: the agreed complete pairs of a dataset and kind. POST: promote the chosen."""
        form = PromoteForm(request.POST if request.method == "POST" else request.GET or None)
        if not form.is_valid():
            return self._page(request, "promote.html", "Promote agreed pairs to gold", form=form)
        data = form.cleaned_data
        if request.method == "POST":
            return self._promote(request, data)
        candidates = gold_promote_candidates(dataset=data["dataset"], kind=data["kind"], max_sd=data["max_sd"])
        pairs = Pair.objects.select_related("dataset", "caption_a", "caption_b", "image_a", "image_b").in_bulk(
            [candidate.pair_id for candidate in candidates[:LISTED]]
        )
        listed = [(c, pair_items_html(pairs[c.pair_id], max_px=160)) for c in candidates[:LISTED]]
        return self._page(
            request,
            "promote.html",
            "Promote agreed pairs to gold",
            form=form,
            data=data,
            candidates=candidates,
            listed=listed,
            shown=LISTED,
        )

    def _promote(self, request, data: dict):
        if not self.has_change_permission(request):
            raise PermissionDenied
        chosen = [int(value) for value in request.POST.getlist("pair") if value.isdigit()]
        query = urlencode({"dataset": data["dataset"].pk, "kind": data["kind"], "max_sd": data["max_sd"]})
        if not chosen:
            self.message_user(request, "No pair chosen: nothing promoted.", messages.WARNING)
            return redirect(reverse("admin:annotation_goldpair_promote") + f"?{query}")
        created = gold_pairs_promote(
            dataset=data["dataset"],
            kind=data["kind"],
            max_sd=data["max_sd"],
            limit=len(chosen),
            pair_ids=chosen,
            created_by=request.user,
        )
        gone = f" ({len(chosen) - created} no longer candidates, left as they are)" if created < len(chosen) else ""
        self.message_user(request, f"Promoted {created} pair(s) to gold{gone}.", messages.SUCCESS)
        return redirect(reverse("admin:annotation_goldpair_promote") + f"?{query}")

    def quiz_view(self, request):
        """GET: a dataset's gold pairs of a kind, ticked when in the quiz, and its pool
        against two attempts' worth. POST: put the ticked in, the unticked listed out."""
        form = DatasetKindForm(request.POST if request.method == "POST" else request.GET or None)
        if not form.is_valid():
            return self._page(request, "quiz.html", "Quiz questions", form=form)
        dataset, kind = form.cleaned_data["dataset"], form.cleaned_data["kind"]
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            listed = {int(value) for value in request.POST.getlist("listed") if value.isdigit()}
            chosen = {int(value) for value in request.POST.getlist("quiz") if value.isdigit()} & listed
            added = quiz_set(dataset_id=dataset.pk, gold_pair_ids=sorted(chosen), in_quiz=True)
            removed = quiz_set(dataset_id=dataset.pk, gold_pair_ids=sorted(listed - chosen), in_quiz=False)
            # The page it returns to shows the pool against two attempts' worth.
            self.message_user(request, f"{added} put in the quiz, {removed} taken out.", messages.SUCCESS)
            query = urlencode({"dataset": dataset.pk, "kind": kind})
            return redirect(reverse("admin:annotation_goldpair_quiz") + f"?{query}")
        gold = GoldPair.objects.filter(dataset=dataset, kind=kind, active=True).select_related(
            "dataset", "caption_a", "caption_b", "image_a", "image_b"
        )
        total = gold.count()
        listed = [(pair, pair_items_html(pair, max_px=160)) for pair in gold.order_by("-in_quiz", "pk")[:LISTED]]
        return self._page(
            request,
            "quiz.html",
            "Quiz questions",
            form=form,
            dataset=dataset,
            kind=kind,
            listed=listed,
            total=total,
            shown=LISTED,
            pool=_pool(dataset.pk, kind),
        )


def _pool(dataset_id: int, kind: str) -> QuizPool:
    """The kind's quiz pool, empty when no gold pair of it is in the quiz."""
    pools = {pool.kind: pool for pool in quiz_pools(dataset_id=dataset_id)}
    return pools.get(kind) or QuizPool(kind=kind, size=0, quiz_length=quiz_settings(dataset_id)[0])
