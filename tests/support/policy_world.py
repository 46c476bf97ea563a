"""The small world the rating-policy state machine plays in (tests/annotation/
test_policy_invariants.py), and the invariants it checks against the database.

The world is built once per test, before the machine's first example, through the admin
API where one exists: dataset ``main`` with 4 STS, 4 SIS and 4 SITS pairs of N=3 ratings,
gold on one item in two, two SIS gold pairs in the queue and a SITS quiz of five gold
pairs asked one at a time that rater r0 took; raters r0..r3; a campaign link over STS and SIS with a quota of
3 items and its two participants; dataset ``other`` with two STS pairs nobody of the
link belongs in. Every example runs in a savepoint on top of it and is rolled back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from rest_framework.test import APIClient

from annotation.models import (
    GoldLease,
    GoldLeaseState,
    GoldPair,
    GoldPurpose,
    GoldRating,
    Pair,
    PairSkip,
    QueueCounter,
    Rating,
    RatingSlot,
    RatingStatus,
    SlotState,
    TaskKind,
)
from annotation.people.crowd.join import participant_join
from annotation.people.crowd.links import campaign_link_create
from annotation.quality.quiz import quiz_set
from tests.factories import CaptionFactory, ImageFactory, SplitFactory, UserFactory
from tests.support.queue_support import client_for, queue_pairs
from tests.support.rating_support import db_id

N = 3
QUOTA = 3
LINK_KINDS = ("STS", "SIS")
KINDS = ("STS", "SIS", "SITS")
QUIZ_KIND = "SITS"
GOLD_ONE_IN = 2
SPARE_IMAGES = 6
RATERS, PARTICIPANTS = 4, 2
ACTORS = RATERS + PARTICIPANTS


@dataclass
class Actor:
    name: str
    user: object
    client: APIClient
    participant: object | None = None  # the Participant row of a crowd participant

    def __repr__(self) -> str:  # hypothesis prints steps with it
        return self.name


@dataclass
class World:
    main: object  # Dataset
    other: object  # Dataset
    admin: APIClient
    raters: list[Actor]
    participants: list[Actor]
    quiz_gold_ids: list[int]  # the SITS quiz's gold pairs (r0 answered them)
    spare_images: list  # images in no pair: fresh gold pairs are made of them
    actors: list[Actor] = field(default_factory=list)


def world_build() -> World:
    admin = APIClient()
    admin.force_authenticate(UserFactory(roles=["admin"]))
    split = SplitFactory(dataset__name="main")
    main = split.dataset
    for kind in KINDS:
        queue_pairs(split=split, kind=kind, n_pairs=4, ratings_per_pair=N)
    answer = admin.put(
        f"/api/datasets/{main.name}/quality/",
        {"gold_one_in": GOLD_ONE_IN, "auto_pause": False, "pause_window": 5, "pause_max_error": 1.0},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    _gold_upload(admin, main, _sis_gold_csv(split, pairs=2))
    sits_before = set(GoldPair.objects.filter(dataset=main, kind=QUIZ_KIND).values_list("pk", flat=True))
    _gold_upload(admin, main, _sits_gold_csv(split, pairs=6))
    sits = sorted(set(GoldPair.objects.filter(dataset=main, kind=QUIZ_KIND).values_list("pk", flat=True)) - sits_before)
    quiz_ids = sits[:5]  # the sixth stays a queue gold pair
    assert quiz_set(dataset_id=main.pk, gold_pair_ids=quiz_ids, in_quiz=True) == 5
    # Five questions are the smallest pool for attempts of one.
    assert admin.put(f"/api/datasets/{main.name}/quiz/", {"quiz_length": 1}, format="json").status_code == 200
    raters = [_rater("r0", kinds=("STS", "SIS"), dataset=main)]
    raters += [_rater(f"r{n}", kinds=KINDS) for n in range(1, RATERS)]
    _quiz_take(raters[0], main)
    link = campaign_link_create(dataset=main, name="wave", kinds=list(LINK_KINDS), quota=QUOTA, completion_code="DONE")
    participants = []
    for n in range(PARTICIPANTS):
        joined = participant_join(token=link.token, params={"PROLIFIC_PID": f"{n:024x}"})
        participants.append(Actor(f"p{n}", joined.user, client_for(joined.user), participant=joined))
    other_split = SplitFactory(dataset__name="other")
    queue_pairs(split=other_split, kind="STS", n_pairs=2, ratings_per_pair=N)
    spare = [ImageFactory(split=split, dataset=main) for _ in range(SPARE_IMAGES)]
    world = World(main, other_split.dataset, admin, raters, participants, quiz_ids, spare)
    world.actors = raters + participants
    return world


def _rater(name: str, *, kinds, dataset=None) -> Actor:
    """A rater an admin qualified for ``kinds`` in ``dataset`` (None: in every dataset)."""
    user = UserFactory(username=name, roles=["rater"], qualified_for=list(kinds), qualified_in=dataset)
    return Actor(name, user, client_for(user))


def _gold_upload(admin, dataset, csv_text: str):
    upload = SimpleUploadedFile("gold.csv", csv_text.encode(), content_type="text/csv")
    answer = admin.post(f"/api/datasets/{dataset.name}/gold/", {"file": upload}, format="multipart")
    assert answer.status_code == 201, answer.content
    return answer


def _sis_gold_csv(split, *, pairs: int) -> str:
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(2 * pairs)]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{images[2 * i].key},{images[2 * i + 1].key},{1 + i},agreed" for i in range(pairs)]
    return "\n".join(lines) + "\n"


def _sits_gold_csv(split, *, pairs: int) -> str:
    captions = [CaptionFactory(image=ImageFactory(split=split, dataset=split.dataset)) for _ in range(pairs)]
    lines = ["caption,image,gold_score,explanation"]
    lines += [f"{c.key},{c.image.key},{(i % 5) + 0.5},matches the scene" for i, c in enumerate(captions)]
    return "\n".join(lines) + "\n"


def _quiz_take(actor: Actor, dataset) -> None:
    """The actor answers the quiz of QUIZ_KIND through the API with the reference scores
    (read from the database) and so passes it."""
    url = f"/api/rate/{dataset.name}/quiz/{QUIZ_KIND}/"
    state = actor.client.post(url, {}, format="json").json()
    step = 0
    while state["result"] is None:
        reference = GoldPair.objects.get(pk=db_id("question", state["gold_pair_id"])).gold_score
        body = {
            "gold_pair_id": state["gold_pair_id"],
            "score": reference,
            "time_on_item_ms": 5000,
            "time_to_first_move_ms": 900,
            "adjustments": 1,
            "idempotency_key": f"quiz-{actor.name}-{step}",
        }
        answer = actor.client.post(url + "answer/", body, format="json")
        assert answer.status_code == 201, answer.content
        state, step = answer.json()["state"], step + 1
    assert state["result"]["passed"] and state["qualified"], state


GOLD_HEADER = {"STS": "caption1,caption2", "SIS": "image1,image2", "SITS": "caption,image"}


def gold_csv(kind: str, items, *, swapped: bool, score: float = 2.5) -> SimpleUploadedFile:
    """A one-line gold CSV of these two items (a caption and an image for SITS, which has
    one order only)."""
    first, second = items[::-1] if swapped and kind != "SITS" else items
    text = f"{GOLD_HEADER[kind]},gold_score,explanation\n{first.key},{second.key},{score},agreed\n"
    return SimpleUploadedFile("gold.csv", text.encode(), content_type="text/csv")


# --- the invariants ------------------------------------------------------------------------
# Each reads the database in one or two statements: they run after every step.


def complete_pair_problems(world: World) -> list[str]:
    """Every complete pair has exactly N valid ratings from N distinct raters; and the
    queue's bookkeeping agrees (ratings_done counts the valid ratings; a pair in the queue
    has as many open or leased slots as it lacks ratings; the open-pairs counters)."""
    valid = Q(ratings__status=RatingStatus.VALID)
    pairs = Pair.objects.filter(dataset_id__in=(world.main.pk, world.other.pk)).annotate(
        valid=Count("ratings__id", filter=valid, distinct=True),
        raters=Count("ratings__rater_id", filter=valid, distinct=True),
        unfilled=Count("slots__id", filter=Q(slots__state__in=(SlotState.OPEN, SlotState.LEASED)), distinct=True),
    )
    problems, still_open = [], Counter()
    for p in pairs.values(
        "id", "dataset_id", "kind", "ratings_done", "ratings_required", "retired_at", "valid", "raters", "unfilled"
    ):
        name = f"pair {p['id']} ({p['kind']})"
        if p["ratings_done"] >= p["ratings_required"] and (p["valid"], p["raters"]) != (N, N):
            problems.append(f"{name} is complete with {p['valid']} valid ratings from {p['raters']} raters")
        if p["ratings_done"] != p["valid"] or p["raters"] != p["valid"]:
            problems.append(f"{name}: ratings_done {p['ratings_done']}, {p['valid']} valid from {p['raters']} raters")
        if p["retired_at"] is None:
            if p["valid"] + p["unfilled"] != p["ratings_required"]:
                problems.append(f"{name}: {p['valid']} valid + {p['unfilled']} open or leased slots != N")
            if p["ratings_done"] < p["ratings_required"]:
                still_open[(p["dataset_id"], p["kind"])] += 1
    counters = QueueCounter.objects.filter(dataset_id__in=(world.main.pk, world.other.pk))
    for dataset_id, kind, pairs_open in counters.values_list("dataset_id", "kind", "pairs_open"):
        if pairs_open != still_open[(dataset_id, kind)]:
            problems.append(f"counter {kind}: {pairs_open} open pairs, the pairs say {still_open[(dataset_id, kind)]}")
    return problems


def uncounted_problems(barred: list[tuple[str, int, str, str]], why_barred: str) -> list[str]:
    """No rating a paused (or excluded) rater gave counts: an ordinary one is not valid,
    and no gold rating of theirs was stored. ``barred``: (actor, user id, idempotency key,
    why) of each submit the API accepted while the actor was barred; ``why_barred``:
    which of them to check ("paused" or "excluded")."""
    why = {(user_id, key): (name, reason) for name, user_id, key, reason in barred if reason == why_barred}
    if not why:
        return []
    wanted = Q()
    for user_id, key in why:
        wanted |= Q(rater_id=user_id, idempotency_key=key)
    problems = []
    for user_id, key, pair_id in Rating.objects.filter(wanted, status=RatingStatus.VALID).values_list(
        "rater_id", "idempotency_key", "pair_id"
    ):
        name, reason = why[(user_id, key)]
        problems.append(f"{name} gave a rating while {reason} and it counts (pair {pair_id}, key {key})")
    for user_id, key in GoldRating.objects.filter(wanted).values_list("rater_id", "idempotency_key"):
        name, reason = why[(user_id, key)]
        problems.append(f"{name} gave a gold rating while {reason} (key {key})")
    return problems


def quota_problems(world: World) -> list[str]:
    """No participant exceeds the quota: items rated (ratings of any status and gold
    items, in every dataset) plus items held now (leases, ordinary and gold)."""
    names = {actor.user.pk: actor.name for actor in world.participants}
    done = _per_rater(Rating.objects.filter(rater_id__in=names)) + _per_rater(
        GoldRating.objects.filter(rater_id__in=names, purpose=GoldPurpose.QUEUE)
    )
    held = _per_rater(RatingSlot.objects.filter(rater_id__in=names, state=SlotState.LEASED)) + _per_rater(
        GoldLease.objects.filter(rater_id__in=names, state=GoldLeaseState.LEASED)
    )
    return [
        f"{names[uid]} rated {done[uid]} items and holds {held[uid]}, over the quota of {QUOTA}"
        for uid in names
        if done[uid] + held[uid] > QUOTA
    ]


def link_problems(world: World) -> list[str]:
    """No participant holds or rated anything outside the link's dataset and kinds."""
    names = {actor.user.pk: actor.name for actor in world.participants}
    inside = Q(dataset_id=world.main.pk, kind__in=LINK_KINDS)
    problems = []
    for model in (RatingSlot, GoldLease):
        outside = model.objects.filter(rater_id__in=names).exclude(inside)
        for uid, dataset, kind in outside.values_list("rater_id", "dataset__name", "kind"):
            problems.append(f"{names[uid]} was served a {kind} item in {dataset}, outside the link")
    return problems


def _per_rater(rows) -> Counter:
    return Counter(dict(rows.values("rater_id").annotate(n=Count("id")).values_list("rater_id", "n")))


def _same_items() -> Q:
    """A pair whose items are those of the gold pair of the outer gold lease."""
    gold = "gold_pair__"
    return (
        Q(kind=TaskKind.STS, caption_a=OuterRef(gold + "caption_a"), caption_b=OuterRef(gold + "caption_b"))
        | Q(kind=TaskKind.SIS, image_a=OuterRef(gold + "image_a"), image_b=OuterRef(gold + "image_b"))
        | Q(kind=TaskKind.SITS, caption_a=OuterRef(gold + "caption_a"), image_a=OuterRef(gold + "image_a"))
    )


def quiz_as_gold_problems(world: World) -> list[str]:
    """No rater is served as gold a pair they met in a quiz."""
    names = {actor.user.pk: actor.name for actor in world.actors}
    in_quiz = GoldRating.objects.filter(
        purpose=GoldPurpose.QUIZ, rater_id=OuterRef("rater_id"), gold_pair_id=OuterRef("gold_pair_id")
    )
    leases = GoldLease.objects.filter(Exists(in_quiz)).values_list("rater_id", "gold_pair_id")
    return [f"{names[uid]} met quiz pair {gold_id} in the quiz and again as gold" for uid, gold_id in leases]


def gold_twin_problems(world: World, met_pairs: dict[int, set[int]]) -> list[str]:
    """No rater is served as gold the items of an ordinary pair they met (hold or held,
    rated or skipped; ``met_pairs``: the pair ids the machine saw served to each user)."""
    names = {actor.user.pk: actor.name for actor in world.actors}
    twin = Pair.objects.filter(_same_items(), kind=OuterRef("gold_pair__kind")).values("pk")[:1]
    leases = GoldLease.objects.annotate(twin=Subquery(twin)).filter(twin__isnull=False)
    problems = []
    for uid, gold_id, twin_id in leases.values_list("rater_id", "gold_pair_id", "twin"):
        met = twin_id in met_pairs.get(uid, ()) or any(
            model.objects.filter(rater_id=uid, pair_id=twin_id).exists() for model in (RatingSlot, Rating, PairSkip)
        )
        if met:
            problems.append(f"{names[uid]} was served gold pair {gold_id}, the items of pair {twin_id} they met")
    return problems
