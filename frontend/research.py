"""The researcher page: the datasets they may export, a form that starts an export through
the export API, their export jobs with status, progress and download links (kept fresh
by the page's script), and a form that evaluates a model with the dataset's own embedding
spaces through the evaluation API, with its progress, report table and files."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from annotation.catalog.selectors import dataset_list
from annotation.core.cxc import POSITIVE_THRESHOLDS
from annotation.core.roles import ADMIN, RESEARCHER, has_role
from annotation.export import FORMATS
from annotation.models import EmbeddingSpace, Split

# What each format and each file holds, as annotation/export/writers.py and parquet.py
# write them (tests/frontend/test_research_page.py checks the files against these notes).
FORMAT_NOTES = {
    "cxc": "CSV as the CxC release: one row per pair, and a raw file with one row per rating",
    "jsonl": "one JSON object per pair: its statistics and its ratings (rater pseudonyms)",
    "parquet": "one row per pair with its statistics, and a raw file with one row per rating",
}
# (file name pattern, the suffix that marks it, what one row holds)
FILE_NOTES = (
    ("<task>_<split>.csv", ".csv", "one row per complete pair: the two item ids, agg_score (the mean rounded "
     "to two decimals) and sampling_method, the columns of the CxC release"),
    ("<task>_<split>_raw.csv", "_raw.csv", "one row per rating: the two item ids, score, rater_id (a "
     "pseudonym), time_on_item_ms, sampling_method"),
    ("<task>_<split>.jsonl", ".jsonl", "one JSON object per complete pair: the ids, agg_score, "
     "sampling_method, mean, median, std, count, 95% interval, positive, the rater-effects model's "
     "score and 95% interval, batch_id and its ratings (rater_id, score, time_on_item_ms)"),
    ("<task>_<split>.parquet", ".parquet", "one row per complete pair: the JSONL's fields without the ratings"),
    ("<task>_<split>_raw.parquet", "_raw.parquet", "one row per rating, as the raw CSV"),
    ("agreement.json", "agreement.json", "Krippendorff's alpha per task and per sampling batch; per rater "
     "the leave-one-out correlation, mean bias and median time"),
    ("rater_model.json", "rater_model.json", "the rater-effects model per task: its fit (ratings, pairs, "
     "raters, pooled noise, priors per sampling method) and each rater's bias and noise sd with 95% "
     "intervals, under the pseudonyms of the rating files"),
    ("study_answers.csv", "study_answers.csv", "one row per answer of a crowd participant to a campaign "
     "link's questions: rater_id (the pseudonym of the rating files), link, phase, position, question, "
     "answer_type, answer, answered_at"),
    ("manifest.json", "manifest.json", "what was exported: splits, formats, counts per task and method "
     "(incomplete pairs left out are counted), scoring rules, exclusions, size and SHA-256 of every file"),
)  # fmt: skip


def cli_model(spaces: list[dict]) -> str:
    """A ``--model`` spec of the dataset's first image and caption spaces ("" without any):
    unimodal unless both are there with one dimension (the command's joint default)."""
    first = {}
    for space in spaces:
        first.setdefault(space["modality"], space)
    if not first:
        return ""
    parts = [f"{modality}-space={space['name']}" for modality, space in sorted(first.items(), reverse=True)]
    if len({space["dimension"] for space in first.values()}) > 1:
        parts.append("spaces=unimodal")
    return "stored:" + ",".join(parts)


def file_note(name: str) -> str:
    """The note of the FILE_NOTES entry whose suffix ``name`` ends with (the longest)."""
    matches = [entry for entry in FILE_NOTES if name.endswith(entry[1])]
    if not matches:
        raise ValueError(f"no note describes the export file {name!r}")
    return max(matches, key=lambda entry: len(entry[1]))[2]


@login_required
def research(request):
    if not (has_role(request.user, RESEARCHER) or has_role(request.user, ADMIN)):
        context = {"title": "Researchers only", "text": "This page is for researchers and admins."}
        return render(request, "frontend/message.html", context, status=403)
    datasets = list(dataset_list())
    splits: dict[int, list[str]] = {}
    for dataset_id, name in Split.objects.order_by("name").values_list("dataset_id", "name"):
        splits.setdefault(dataset_id, []).append(name)
    spaces: dict[int, list[dict]] = {}
    for space in EmbeddingSpace.objects.order_by("name").values("dataset_id", "name", "modality", "dimension"):
        spaces.setdefault(space.pop("dataset_id"), []).append(space)
    context = {
        "datasets": [
            {
                "name": d.name,
                "images": d.image_count or 0,
                "splits": splits.get(d.pk, []),
                "spaces": spaces.get(d.pk, []),
            }
            for d in datasets
        ],
        "formats": [(name, FORMAT_NOTES[name]) for name in FORMATS],
        "file_notes": [(pattern, note) for pattern, _, note in FILE_NOTES],
        "cli_model": cli_model(spaces.get(datasets[0].pk, [])) if datasets else "",
        "config": {
            "exports_url": reverse("export-list"),
            "positive_at": dict(POSITIVE_THRESHOLDS),
            "evaluations_url": reverse("evaluation-list"),
            "spaces": {d.name: spaces.get(d.pk, []) for d in datasets},
            "splits": {d.name: splits.get(d.pk, []) for d in datasets},
        },
    }
    return render(request, "frontend/research.html", context)
