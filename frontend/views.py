"""Pages. Views only gather what the template needs from selectors."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from annotation.models import FlagReason, TaskKind
from annotation.roles import RATER, has_role
from annotation.selectors import dataset_get, dataset_list, qualification_kinds
from config.runtime import describe_mode
from frontend.instructions import INSTRUCTIONS, levels_for
from frontend.selectors import worked_example_list


def home(request):
    return render(request, "frontend/home.html", {"mode": describe_mode(), "datasets": dataset_list()})


@login_required
def rate_home(request):
    kinds = qualification_kinds(rater=request.user) if has_role(request.user, RATER) else []
    tasks = [
        {
            "dataset": dataset.name,
            "title": INSTRUCTIONS[kind]["title"],
            "url": reverse("rate-page", args=[dataset.name, kind.lower()]),
        }
        for dataset in dataset_list()
        for kind in kinds
    ]
    return render(request, "frontend/rate_home.html", {"tasks": tasks})


@login_required
def rate_page(request, dataset: str, kind: str):
    kind = kind.upper()
    if kind not in TaskKind.values:
        return render(
            request,
            "frontend/message.html",
            {"title": "No such task", "text": f"There is no task kind {kind!r}."},
            status=404,
        )
    dataset_obj = dataset_get(name=dataset)
    kinds = qualification_kinds(rater=request.user) if has_role(request.user, RATER) else []
    if kind not in kinds:
        return render(
            request,
            "frontend/message.html",
            {
                "title": "Not qualified for this task",
                "text": f"You are not qualified to rate {TaskKind(kind).label} pairs. Ask an admin to qualify you.",
            },
            status=403,
        )
    config = {
        "dataset": dataset_obj.name,
        "kind": kind,
        "user": request.user.username,
        "api_base": f"/api/rate/{dataset_obj.name}/",
        "levels": levels_for(kind),
        # Where the no-work state sends the rater when this task is done and others are not.
        "other_tasks": [
            {
                "kind": other,
                "title": INSTRUCTIONS[other]["title"],
                "url": reverse("rate-page", args=[dataset, other.lower()]),
            }
            for other in kinds
            if other != kind
        ],
    }
    return render(
        request,
        "frontend/rate.html",
        {
            "dataset": dataset_obj,
            "kind": kind,
            "instructions": INSTRUCTIONS[kind],
            "examples": worked_example_list(dataset=dataset_obj, kind=kind),
            "flag_reasons": FlagReason.choices,
            "config": config,
        },
    )
