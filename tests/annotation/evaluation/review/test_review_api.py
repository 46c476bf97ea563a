"""The crowd's review through the HTTP API on PostgreSQL: queuing an explained
evaluation's failures (once), claiming a review (the query and both images), submitting
it with its marks, the marks' rules and the ways around them, exactly N distinct raters
per failure, gold review pairs, and the figures and file that come out."""

import csv
import io
from pathlib import Path

import pytest

from annotation.models import (
    GoldPair,
    GoldRating,
    GoldSource,
    Job,
    JobStatus,
    Pair,
    QualitySettings,
    Rating,
    RatingSlot,
    ReviewItem,
    ReviewMarks,
    SlotState,
    TaskKind,
)
from annotation.serving.gold_ids import ids_reserve
from tests.support.evaluation_data import CAPTION_KEYS, IMAGE_KEYS
from tests.support.export_data import client_for
from tests.support.rating_support import db_id
from tests.support.review_support import (
    review_all,
    review_body,
    review_claim,
    review_submit,
    reviewer,
)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def queue(job_id, raters=None, client=None):
    body = {} if raters is None else {"raters": raters}
    return (client or client_for("researcher")).post(f"/api/evaluations/{job_id}/review/", body, format="json")


def test_queuing_makes_one_pair_per_distinct_failure_once(job):
    dataset, job_id = job
    before = client_for("researcher").get(f"/api/evaluations/{job_id}/review/")
    assert before.status_code == 200 and before.json() == {"job": job_id, "queued": False}
    assert client_for("researcher").get(f"/api/evaluations/{job_id}/review.csv").status_code == 404
    first = queue(job_id, raters=3)
    assert first.status_code == 201, first.content
    assert first.json() | {"batch": None} == {
        "job": job_id,
        "created": True,
        "failures": 12,
        "pairs_new": 6,
        "raters_per_failure": 3,
        "batch": None,
    }
    pairs = Pair.objects.filter(dataset=dataset, kind=TaskKind.REV)
    assert pairs.count() == 6 and {p.ratings_required for p in pairs} == {3}
    assert RatingSlot.objects.filter(pair__in=pairs).count() == 18
    assert ReviewItem.objects.count() == 12
    # The truth image stays first, the retrieved second, whatever their ids.
    first_query = pairs.get(caption_a__key=CAPTION_KEYS[0])
    assert (first_query.image_a.key, first_query.image_b.key) == (IMAGE_KEYS[0], IMAGE_KEYS[2])
    again = queue(job_id, raters=3)
    assert again.status_code == 200 and again.json()["created"] is False and again.json()["pairs_new"] == 0
    assert Pair.objects.filter(kind=TaskKind.REV).count() == 6 and ReviewItem.objects.count() == 12
    other = queue(job_id, raters=4)
    assert other.status_code == 400 and "queued for 3 raters each already" in other.json()["detail"]
    assert queue(job_id).json()["raters_per_failure"] == 3  # left out: as queued


def test_queuing_names_what_cannot_be_reviewed(job, django_capture_on_commit_callbacks):
    dataset, job_id = job
    assert queue(job_id, client=client_for("rater")).status_code == 403
    assert queue(999_999).status_code == 404
    assert queue(job_id, raters=0).status_code == 400
    plain = Job.objects.create(
        kind=Job.Kind.EVALUATE, params={"dataset": dataset.name, "split": "val", "explain": None}, status="succeeded"
    )
    answer = queue(plain.id)
    assert answer.status_code == 400 and "is not an explained evaluation" in answer.json()["detail"]
    # An explained evaluation that found no failure.
    explained = Job.objects.get(pk=job_id)
    header = (Path(explained.result["out"]) / "failures.csv").read_text().splitlines()[0] + "\n"
    empty = Job.objects.create(
        kind=Job.Kind.EVALUATE,
        params=explained.params,
        status=JobStatus.SUCCEEDED,
        result=explained.result | {"out": explained.result["out"] + "-empty"},
    )
    Path(empty.result["out"]).mkdir()
    (Path(empty.result["out"]) / "failures.csv").write_text(header)
    answer = queue(empty.id)
    assert answer.status_code == 400 and "found no failures: there is nothing to review" in answer.json()["detail"]
    running = Job.objects.create(kind=Job.Kind.EVALUATE, params=explained.params, status=JobStatus.RUNNING)
    assert queue(running.id).status_code == 409


def test_a_claim_shows_the_query_and_both_images_and_a_submit_stores_the_marks(job):
    dataset, job_id = job
    queue(job_id)
    user, client = reviewer()
    claimed = review_claim(client, dataset)
    assert claimed.status_code == 200, claimed.content
    item = claimed.json()
    slot = RatingSlot.objects.get(pk=db_id("review", item["slot_id"]))
    assert item["kind"] == "REV" and item["query"] == slot.pair.caption_a.text
    assert item["expected"]["url"].endswith(slot.pair.image_a.key)
    assert item["retrieved"]["url"].endswith(slot.pair.image_b.key)
    body = review_body(1.5, ["object_class", "object_count"])
    stored = review_submit(client, dataset, item["slot_id"], body)
    assert stored.status_code == 201, stored.content
    rating = Rating.objects.get(rater=user)
    assert rating.score == 1.5 and rating.review_marks.marks == 1 | 4
    # A repeat answers the stored review and keeps its first marks.
    repeat = review_submit(client, dataset, item["slot_id"], body | {"marks": ["fair_alternative"]})
    assert repeat.status_code == 200 and repeat.json()["replayed"] is True
    assert ReviewMarks.objects.get().marks == 1 | 4 and Rating.objects.count() == 1


def test_bad_marks_are_refused_and_nothing_is_stored(job):
    dataset, job_id = job
    queue(job_id)
    _, client = reviewer()
    slot_id = review_claim(client, dataset).json()["slot_id"]
    both = review_submit(client, dataset, slot_id, review_body(4.0, ["fair_alternative", "size"]))
    assert both.status_code == 400 and "tick it alone" in both.json()["detail"]
    unknown = review_submit(client, dataset, slot_id, review_body(4.0, ["mood"]))
    assert unknown.status_code == 400 and "unknown mark 'mood'" in unknown.json()["detail"]
    missing = review_body(4.0)
    del missing["marks"]
    assert review_submit(client, dataset, slot_id, missing).status_code == 400
    assert Rating.objects.count() == 0 and ReviewMarks.objects.count() == 0
    assert RatingSlot.objects.get(pk=db_id("review", slot_id)).state == SlotState.LEASED
    alone = review_submit(client, dataset, slot_id, review_body(4.0, ["fair_alternative"]))
    assert alone.status_code == 201 and ReviewMarks.objects.get().marks == 64


def test_the_way_around_the_marks_through_the_rating_endpoints_is_closed(job):
    """A review is never stored without its marks: the rating endpoints take no review id,
    serve no review to a claim of any kind, and refuse the REV kind by name."""
    dataset, job_id = job
    queue(job_id)
    user, client = reviewer()
    from annotation.models import Qualification

    Qualification.objects.create(rater=user, dataset=None, kind=TaskKind.STS)
    # A claim of any kind serves no review (nothing else is queued: 204), nor by name.
    assert client.post(f"/api/rate/{dataset.name}/claim/", {}, format="json").status_code == 204
    assert client.post(f"/api/rate/{dataset.name}/claim/", {"kind": "REV"}, format="json").status_code == 400
    slot_id = review_claim(client, dataset).json()["slot_id"]
    plain = {k: v for k, v in review_body(3.0).items() if k != "marks"}
    around = client.post(f"/api/rate/{dataset.name}/slots/{slot_id}/submit/", plain, format="json")
    assert around.status_code in (404, 409) and Rating.objects.count() == 0
    # Nor does the next-pair claim of a plain submit name the REV kind.
    url = f"/api/rate/{dataset.name}/slots/{slot_id}/submit/"
    nxt = client.post(url, plain | {"claim_next_kind": "REV"}, format="json")
    assert nxt.status_code == 400 and "claim_next_kind" in nxt.json()["errors"] and Rating.objects.count() == 0
    assert review_submit(client, dataset, slot_id, review_body(3.0)).status_code == 201


def test_exactly_n_distinct_raters_review_each_failure_once(job):
    dataset, job_id = job
    queue(job_id, raters=2)
    (first, c1), (second, c2), (_, c3) = reviewer(), reviewer(), reviewer()
    assert review_all(c1, dataset) == 6
    # The first rater never meets a failure twice: nothing is left for them.
    assert review_claim(c1, dataset).status_code == 204
    assert review_all(c2, dataset) == 6
    assert review_all(c3, dataset) == 0
    for pair in Pair.objects.filter(kind=TaskKind.REV):
        raters = list(Rating.objects.filter(pair=pair).values_list("rater_id", flat=True))
        assert sorted(raters) == sorted({first.pk, second.pk}) and pair.ratings_done == 2
    assert ReviewMarks.objects.filter(rating__isnull=False).count() == 12


def test_a_gold_review_is_served_and_its_marks_stored(job):
    """A gold review pair (a known score) is served now and then like any gold pair, and
    its review's marks are stored with the gold rating."""
    dataset, job_id = job
    queue(job_id, raters=1)
    failure = Pair.objects.filter(kind=TaskKind.REV).first()
    # The same query with the two images the other way round: a review pair of its own.
    gold = GoldPair(
        pk=ids_reserve(Pair, 1)[0],
        dataset=dataset,
        split=failure.split,
        kind=TaskKind.REV,
        caption_a=failure.caption_a,
        image_a=failure.image_b,
        image_b=failure.image_a,
        gold_score=0.5,
        source=GoldSource.UPLOAD,
    )
    gold.save()
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"gold_one_in": 1})
    user, client = reviewer()
    claimed = review_claim(client, dataset)
    assert claimed.status_code == 200, claimed.content
    item = claimed.json()
    assert item["expected"]["url"].endswith(gold.image_a.key) and item["retrieved"]["url"].endswith(gold.image_b.key)
    assert review_submit(client, dataset, item["slot_id"], review_body(0.7, ["size"])).status_code == 201
    gold_rating = GoldRating.objects.get(rater=user)
    assert gold_rating.gold_score == 0.5 and gold_rating.review_marks.marks == 16
    assert Rating.objects.count() == 0


def test_the_figures_and_the_file_of_a_review(job):
    dataset, job_id = job
    queue(job_id, raters=3)
    # Three raters score each failure by its truth image: query 0's failures low, others higher.
    scores = {}

    def score_of(item):
        scores.setdefault(item["query"], 0.5 + len(scores) * 0.7)
        return scores[item["query"]]

    for _ in range(3):
        _, client = reviewer()
        review_all(client, dataset, score_of=score_of, marks_of=lambda item: ["object_class", "details"])
    researcher = client_for("researcher")
    report = researcher.get(f"/api/evaluations/{job_id}/review/").json()
    assert report["raters_per_failure"] == 3 and set(report["models"]) == {"one", "two"}
    one = report["models"]["one"]
    assert (one["failures"], one["reviewed"], one["complete"]) == (6, 6, 6)
    assert one["marks"]["object_class"] == {"failures": 6, "share": 1.0, "reviewed": 6}
    assert one["marks"]["fair_alternative"]["failures"] == 0
    ca = one["correlations"]["agnostic_CA"]
    assert set(ca) == {"rho", "p", "n"} and ca["n"] == 6
    assert set(one["correlations"]) == {f"{f}_{m}" for f in ("agnostic", "informed") for m in ("CA", "NCS", "CE", "SD")}
    text = researcher.get(f"/api/evaluations/{job_id}/review.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 12 and {row["raters"] for row in rows} == {"3"}
    assert {row["marks"] for row in rows} == {"object_class; details"}
    assert {float(row["human_mean"]) for row in rows} == {round(value, 4) for value in scores.values()}
    assert client_for("rater").get(f"/api/evaluations/{job_id}/review/").status_code == 403


def test_a_review_can_be_kept_skipped_and_is_never_stored_for_another_kind(job):
    dataset, job_id = job
    queue(job_id, raters=1)
    user, client = reviewer()
    slot_id = review_claim(client, dataset).json()["slot_id"]
    kept = client.post(f"/api/rate/{dataset.name}/review/{slot_id}/heartbeat/", {}, format="json")
    assert kept.status_code == 200 and kept.json()["lease_expires_at"]
    assert client.post(f"/api/rate/{dataset.name}/review/{slot_id}/skip/", {}, format="json").status_code == 200
    # The skipped failure is not served to them again: five of the six are left.
    assert review_all(client, dataset) == 5
    # The service refuses to store a review of a pair of another kind (its marks would
    # describe nothing), and stores nothing.
    from annotation.evaluation.review.reviewing import NotAReview
    from annotation.evaluation.review.reviewing import review_submit as store_review
    from annotation.models import Qualification
    from annotation.rating import policy
    from tests.factories import PairFactory, SamplingBatchFactory
    from tests.support.queue_support import submit_kwargs

    split = Pair.objects.filter(kind=TaskKind.REV).first().split
    PairFactory(batch=SamplingBatchFactory(split=split), kind=TaskKind.SIS)
    Qualification.objects.create(rater=user, dataset=None, kind=TaskKind.SIS)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind=TaskKind.SIS)
    before = Rating.objects.count()
    with pytest.raises(NotAReview, match="is a SIS pair, not a failure to review"):
        store_review(rater=user, dataset=dataset.name, slot_id=held.slot_id, marks=["size"], **submit_kwargs("sis-1"))
    assert Rating.objects.count() == before and not ReviewMarks.objects.filter(rating__pair__kind="SIS").exists()


def test_reviews_stay_out_of_the_cxc_export_and_the_campaign_numbers(job, django_capture_on_commit_callbacks):
    """One SIS pair rated beside the reviews: the export and the dashboard count it alone."""
    from annotation.dashboard.services import campaign_snapshot_refresh
    from annotation.models import Qualification
    from annotation.rating import policy
    from tests.factories import PairFactory, SamplingBatchFactory
    from tests.support.export_data import start_export
    from tests.support.queue_support import submit_kwargs

    dataset, job_id = job
    queue(job_id, raters=1)
    user, client = reviewer()
    review_all(client, dataset)
    split = Pair.objects.filter(kind=TaskKind.REV).first().split
    sis = PairFactory(batch=SamplingBatchFactory(split=split, ratings_per_pair=1), kind=TaskKind.SIS)
    Qualification.objects.create(rater=user, dataset=None, kind=TaskKind.SIS)
    held = policy.slot_claim(rater=user, dataset=dataset.name, kind=TaskKind.SIS)
    policy.rating_submit(rater=user, dataset=dataset.name, slot_id=held.slot_id, **submit_kwargs("sis-1", 4.0))
    progress = campaign_snapshot_refresh(dataset).data["progress"]
    assert [(kind["kind"], kind["pairs_complete"]) for kind in progress["by_kind"]] == [
        ("sts", 0),
        ("sis", 1),
        ("sits", 0),
    ]
    assert len(progress["by_batch"]) == 1
    researcher = client_for("researcher")
    started = start_export(
        researcher, {"dataset": dataset.name, "formats": ["cxc"]}, django_capture_on_commit_callbacks
    )
    assert started.status_code == 202, started.content
    files = researcher.get(f"/api/exports/{started.json()['id']}/files/").json()
    texts = {e["name"]: b"".join(researcher.get(e["url"]).streaming_content).decode() for e in files}
    rows = list(csv.DictReader(io.StringIO(texts["sis_val.csv"])))
    assert [(row["image1"], row["image2"]) for row in rows] == [(sis.image_a.key, sis.image_b.key)]
    assert set(texts) == {"sis_val.csv", "sis_val_raw.csv", "manifest.json", "agreement.json", "rater_model.json"}
    for name, text in texts.items():
        assert "REV" not in text and "review" not in text and CAPTION_KEYS[0] not in text, name


def test_an_excluded_reviewer_no_longer_counts_and_another_takes_their_place(job, django_capture_on_commit_callbacks):
    dataset, job_id = job
    queue(job_id, raters=1)
    excluded, first = reviewer()
    review_all(first, dataset, score_of=lambda item: 0.5)
    admin = client_for("admin")
    with django_capture_on_commit_callbacks(execute=True):
        answer = admin.post(
            f"/api/datasets/{dataset.name}/exclusions/",
            {"rater": excluded.username, "reason": "careless reviews"},
            format="json",
        )
    assert answer.status_code == 202, answer.content
    report = client_for("researcher").get(f"/api/evaluations/{job_id}/review/").json()
    assert report["models"]["one"]["reviewed"] == 0
    # Each failure opened a slot again; another reviewer's scores are the ones that count.
    assert review_all(reviewer()[1], dataset, score_of=lambda item: 4.5) == 6
    report = client_for("researcher").get(f"/api/evaluations/{job_id}/review/").json()
    assert report["models"]["one"]["complete"] == 6
    page = client_for("researcher").get(f"/api/evaluations/{job_id}/failures/").json()
    assert {row["review"]["mean"] for row in page["rows"]} == {4.5}
    assert {row["review"]["raters"] for row in page["rows"]} == {1}
