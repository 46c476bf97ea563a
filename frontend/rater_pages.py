"""A rater's own page: their ratings today and in total per dataset and task kind, the
quizzes they may take and their quiz results."""

from dataclasses import dataclass
from datetime import datetime, time

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.shortcuts import render
from django.utils import timezone

from annotation.core.roles import RATER, has_role
from annotation.models import GoldPair, GoldPurpose, GoldRating, Rating, TaskKind
from annotation.quality.quiz import quiz_offered, quiz_results
from frontend.instructions import INSTRUCTIONS


@dataclass(frozen=True)
class RatedCount:
    dataset: str
    kind: str
    title: str
    today: int
    total: int


@dataclass(frozen=True)
class QuizOffer:
    dataset: str
    kind: str
    title: str


def rated_counts(*, rater, now: datetime | None = None) -> list[RatedCount]:
    """The rater's ratings per dataset and kind, today (from midnight in the server's
    time zone) and in total. Items that were gold count as any other: to the rater they
    were one more pair."""
    now = now or timezone.now()
    tz = timezone.get_default_timezone()
    day_start = datetime.combine(now.astimezone(tz).date(), time.min, tzinfo=tz)
    counts: dict[tuple[str, str], list[int]] = {}
    ordinary = Rating.objects.filter(rater=rater).values_list("pair__dataset__name", "pair__kind")
    gold = GoldRating.objects.filter(rater=rater, purpose=GoldPurpose.QUEUE).values_list(
        "dataset__name", "gold_pair__kind"
    )
    for rows in (ordinary, gold):
        grouped = rows.order_by().annotate(total=Count("id"), today=Count("id", filter=Q(created_at__gte=day_start)))
        for dataset, kind, total, today in grouped:
            entry = counts.setdefault((dataset, kind), [0, 0])
            entry[0] += today
            entry[1] += total
    order = {kind: index for index, kind in enumerate(TaskKind.values)}
    return [
        RatedCount(dataset=dataset, kind=kind, title=INSTRUCTIONS[kind]["title"], today=today, total=total)
        for (dataset, kind), (today, total) in sorted(counts.items(), key=lambda item: (item[0][0], order[item[0][1]]))
    ]


def quiz_offers(*, rater) -> list[QuizOffer]:
    """The qualification quizzes the rater may take (or finish) now."""
    quizzes = (
        GoldPair.objects.filter(in_quiz=True, active=True)
        .values_list("dataset_id", "dataset__name", "kind")
        .distinct()
        .order_by("dataset__name", "kind")
    )
    return [
        QuizOffer(dataset=name, kind=kind, title=INSTRUCTIONS[kind]["title"])
        for dataset_id, name, kind in quizzes
        if quiz_offered(rater=rater, dataset_id=dataset_id, kind=kind)
    ]


@login_required
def rater_own_page(request):
    if not has_role(request.user, RATER):
        context = {"title": "Raters only", "text": "This page shows a rater's own work; your account is no rater."}
        return render(request, "frontend/message.html", context, status=403)
    context = {
        "counts": rated_counts(rater=request.user),
        "offers": quiz_offers(rater=request.user),
        "attempts": quiz_results(rater=request.user),
        "time_zone": timezone.get_default_timezone_name(),
    }
    return render(request, "frontend/rater_own.html", context)
