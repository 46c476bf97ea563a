"""The researcher page: the datasets they may export, a form that starts an export through
the export API, their export jobs with status, progress and download links (kept fresh
by the page's script), and how to evaluate a model on an export."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from annotation.export import FORMATS
from annotation.models import Split
from annotation.roles import ADMIN, RESEARCHER, has_role
from annotation.selectors import dataset_list

FORMAT_NOTES = {
    "cxc": "CxC CSV files (sts/sis/sits per split), as the public release",
    "jsonl": "one JSON object per rating, with rater pseudonyms",
    "parquet": "the same as JSONL, as Parquet",
}


@login_required
def research(request):
    if not (has_role(request.user, RESEARCHER) or has_role(request.user, ADMIN)):
        context = {"title": "Researchers only", "text": "This page is for researchers and admins."}
        return render(request, "frontend/message.html", context, status=403)
    datasets = list(dataset_list())
    splits: dict[int, list[str]] = {}
    for dataset_id, name in Split.objects.order_by("name").values_list("dataset_id", "name"):
        splits.setdefault(dataset_id, []).append(name)
    context = {
        "datasets": [{"name": d.name, "images": d.image_count or 0, "splits": splits.get(d.pk, [])} for d in datasets],
        "formats": [(name, FORMAT_NOTES.get(name, "")) for name in FORMATS],
        "config": {"exports_url": reverse("export-list")},
    }
    return render(request, "frontend/research.html", context)
