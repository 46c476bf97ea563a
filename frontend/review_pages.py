"""The rater's page of the failure review (the REV kind at ``/rate/<dataset>/rev/``): the
query, the expected and the retrieved picture side by side, the marks and the slider.
The rating page's view sends a rater qualified for reviews here; the page talks to the
review API (annotation.apis.reviews)."""

from django.shortcuts import render
from django.urls import reverse

from annotation.evaluation.review.marks import FAIR_ALTERNATIVE, MARK_LABELS, MISREADING_MARKS
from frontend.instructions import INSTRUCTIONS, review_levels
from frontend.review_examples import REVIEW_EXAMPLES


def review_page(request, dataset):
    """The review page of ``dataset`` for a rater the caller found qualified."""
    claim_url = reverse("review-claim", args=[dataset.name])
    config = {
        "dataset": dataset.name,
        "kind": "REV",
        "api_base": claim_url.removesuffix("claim/"),
        "levels": review_levels(),
        "rate_home": reverse("rate-home"),
    }
    context = {
        "dataset": dataset,
        "instructions": INSTRUCTIONS["REV"],
        "misreadings": [(name, MARK_LABELS[name]) for name in MISREADING_MARKS],
        "fair_alternative": (FAIR_ALTERNATIVE, MARK_LABELS[FAIR_ALTERNATIVE]),
        "examples": REVIEW_EXAMPLES,
        "config": config,
    }
    return render(request, "frontend/review.html", context)
