"""The sampling API: admins create, start and watch batches; errors come back as 4xx with a detail."""

import pytest
from rest_framework.test import APIClient

from sampling.models import SamplingBatch
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_an_admin_creates_a_batch_that_runs_and_reports_its_progress(
    admin_api, small, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/sampling/batches/",
            {
                "dataset": small.dataset.name,
                "split": "val",
                "methods": {"i2i_csim": None, "c2c_cocaption": 3},
                "k": 1,
                "seed": 4,
            },
            format="json",
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "pending"
    assert body["progress_message"] == "queued"
    assert body["spaces"] == ["txt"]

    # The task ran in-process when the request's transaction committed.
    detail = admin_api.get(f"/api/sampling/batches/{body['id']}/").json()
    assert detail["status"] == "succeeded"
    assert detail["pairs_per_method"] == {"i2i_csim": 2, "c2c_cocaption": 3}
    assert detail["progress_done"] == detail["progress_total"] > 0
    assert detail["stats"]["index"] == {"txt": "exact"}
    listed = admin_api.get("/api/sampling/batches/").json()
    assert [batch["id"] for batch in listed] == [body["id"]]


def test_a_batch_created_without_start_waits_until_started(admin_api, small, django_capture_on_commit_callbacks):
    body = admin_api.post(
        "/api/sampling/batches/",
        {"dataset": small.dataset.name, "split": "val", "methods": {"c2c_cocaption": None}, "start": False},
        format="json",
    ).json()
    assert body["status"] == "pending"
    with django_capture_on_commit_callbacks(execute=True):
        started = admin_api.post(f"/api/sampling/batches/{body['id']}/start/")
    assert started.status_code == 202
    assert admin_api.get(f"/api/sampling/batches/{body['id']}/").json()["status"] == "succeeded"
    again = admin_api.post(f"/api/sampling/batches/{body['id']}/start/")
    assert again.status_code == 409
    assert "already succeeded with 4 pairs" in again.json()["detail"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"methods": {"i2i_csim": None}, "k": 0}, "k must be a whole number of neighbours, at least 1"),
        ({"methods": {"c2c_cocaption": 50}}, "c2c_cocaption: budget 50 is more than the 4 fresh pairs"),
        ({"methods": {"i2i_csim": None}, "k": 1, "spaces": ["img"]}, "space 'img' holds image embeddings"),
        ({"methods": {"i2i_csim": None}}, "k=5 but split"),
        ({"methods": {"c2i_intrasim": None}}, "c2i_intrasim derives pairs from rated SIS and STS pivots"),
        (
            {"methods": {"c2c_cocaption": None}, "seed": 2**63},
            "seed: Ensure this value is less than or equal to 9223372036854775807.",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_problem_and_creates_nothing(admin_api, small, payload, message):
    response = admin_api.post(
        "/api/sampling/batches/", {"dataset": small.dataset.name, "split": "val", **payload}, format="json"
    )
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert SamplingBatch.objects.count() == 0


def test_unknown_batch_and_split_are_404(admin_api, small):
    assert admin_api.get("/api/sampling/batches/999999/").status_code == 404
    response = admin_api.get(f"/api/sampling/splits/{small.dataset.name}/train/")
    assert response.status_code == 404
    assert "has no split 'train'" in response.json()["detail"]


def test_the_split_summary_tells_what_a_batch_can_use(admin_api, small):
    body = admin_api.get(f"/api/sampling/splits/{small.dataset.name}/val/").json()
    assert body["images"] == 4
    assert body["captions"] == 8
    assert body["cocaption_pairs"] == 4
    assert body["ready_pivots"] == 0
    assert body["pivots"] == {"SIS": {"ready": 0, "total": 0}, "STS": {"ready": 0, "total": 0}}
    assert {(space["name"], space["modality"]) for space in body["spaces"]} == {("img", "image"), ("txt", "caption")}


def test_an_admin_uploads_a_pair_list(admin_api, small, tmp_path, django_capture_on_commit_callbacks):
    path = tmp_path / "sis_val.csv"
    path.write_text(
        f"image1,image2,agg_score,sampling_method\n{small.image_key(0)},{small.image_key(2)},0.5,i2i_csim\n",
        encoding="utf-8",
    )
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/sampling/batches/upload/",
            {"dataset": small.dataset.name, "split": "val", "file": handle},
            format="multipart",
        )
    assert response.status_code == 201, response.json()
    batch_id = response.json()["id"]
    assert admin_api.get(f"/api/sampling/batches/{batch_id}/").json()["pairs_per_method"] == {"i2i_csim": 1}
    bad = tmp_path / "bad.csv"
    bad.write_text("image1,image2\na,b\n", encoding="utf-8")
    with bad.open("rb") as handle:
        response = admin_api.post(
            "/api/sampling/batches/upload/",
            {"dataset": small.dataset.name, "split": "val", "file": handle},
            format="multipart",
        )
    assert response.status_code == 400
    assert "missing the sampling_method column" in response.json()["detail"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("image1,image2,sampling_method\n{a},{b}\x00,i2i_csim\n", "line 2, column image2: has a NUL character"),
        ("image1,image2,sampling_\x00method\n{a},{b},i2i_csim\n", "line 1, column 3: has a NUL character"),
    ],
)
def test_a_nul_character_in_a_pair_list_is_a_400_naming_line_and_column(admin_api, small, tmp_path, text, message):
    path = tmp_path / "sis_val.csv"
    path.write_text(text.format(a=small.image_key(0), b=small.image_key(2)), encoding="utf-8")
    with path.open("rb") as handle:
        response = admin_api.post(
            "/api/sampling/batches/upload/",
            {"dataset": small.dataset.name, "split": "val", "file": handle},
            format="multipart",
        )
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith(f"sis_val.csv: {message} (U+0000)")
    assert SamplingBatch.objects.count() == 0


def test_only_admins_may_sample(small):
    client = APIClient()
    client.force_authenticate(UserFactory(roles=["rater"]))
    response = client.post(
        "/api/sampling/batches/",
        {"dataset": small.dataset.name, "split": "val", "methods": {"c2c_cocaption": None}},
        format="json",
    )
    assert response.status_code == 403
    assert client.get("/api/sampling/batches/").status_code == 403
    assert SamplingBatch.objects.count() == 0


def test_reads_show_a_dead_runners_batch_as_stale_and_a_start_fails_then_reruns_it(
    admin_api, admin_client, small, monkeypatch, django_capture_on_commit_callbacks
):
    body = admin_api.post(
        "/api/sampling/batches/",
        {"dataset": small.dataset.name, "split": "val", "methods": {"c2c_cocaption": None}, "start": False},
        format="json",
    ).json()
    SamplingBatch.objects.filter(pk=body["id"]).update(status="running", runner="worker-host:4242")
    monkeypatch.setattr("annotation.runs.lifecycle.runner_alive", lambda lock_class, object_id, runner: False)

    detail = admin_api.get(f"/api/sampling/batches/{body['id']}/").json()
    assert (detail["status"], detail["stale"]) == ("running", True)
    assert admin_api.get("/api/sampling/batches/").json()[0]["stale"] is True
    page = admin_client.get("/admin/sampling/samplingbatch/").content.decode()
    assert "(stale: its process is gone)" in page
    assert SamplingBatch.objects.get(pk=body["id"]).status == "running"  # no read wrote

    with django_capture_on_commit_callbacks(execute=True):
        started = admin_api.post(f"/api/sampling/batches/{body['id']}/start/")
    assert started.status_code == 202, started.json()
    after = admin_api.get(f"/api/sampling/batches/{body['id']}/").json()
    assert (after["status"], after["stale"]) == ("succeeded", False)


def adaptive_batch_created(admin_api, small, capture, **rule):
    """A batch of three co-caption pairs with the adaptive ``rule``, created and run."""
    with capture(execute=True):
        response = admin_api.post(
            "/api/sampling/batches/",
            {"dataset": small.dataset.name, "split": "val", "methods": {"c2c_cocaption": 3}} | rule,
            format="json",
        )
    assert response.status_code == 201, response.json()
    return response


def test_an_adaptive_batch_queues_its_pairs_with_the_minimum_and_the_rule(
    admin_api, small, django_capture_on_commit_callbacks
):
    from annotation.models import Pair, RatingSlot

    response = adaptive_batch_created(
        admin_api, small, django_capture_on_commit_callbacks, ratings_per_pair=3, ratings_max=8, adaptive_half_width=0.6
    )
    assert (response.json()["ratings_max"], response.json()["adaptive_half_width"]) == (8, 0.6)
    pairs = Pair.objects.filter(batch_id=response.json()["id"])
    assert set(pairs.values_list("ratings_required", "ratings_max")) == {(3, 8)}
    assert RatingSlot.objects.filter(pair__in=pairs).count() == 3 * pairs.count() == 9


def test_a_batch_with_a_budget_is_told_its_target_once_its_pairs_are_queued(
    admin_api, small, django_capture_on_commit_callbacks
):
    response = adaptive_batch_created(
        admin_api, small, django_capture_on_commit_callbacks, ratings_per_pair=2, ratings_max=6, adaptive_budget=10
    )
    body = admin_api.get(f"/api/sampling/batches/{response.json()['id']}/").json()
    plan = body["adaptive_plan"]
    assert (body["adaptive_budget"], plan["budget"], plan["pairs_open"], plan["ratings_spent"]) == (10, 10, 3, 0)
    # No fit yet: the target solved for 10 / 3 ratings a pair with raters of unit noise.
    assert round(body["adaptive_half_width"], 4) == plan["half_width"] != 1.0
    assert plan["expected_ratings"] <= 10 and plan["ratings_per_open_pair"] <= 10 / 3


@pytest.mark.parametrize(
    ("adaptive", "message"),
    [
        ({"ratings_max": 8}, "adaptive_half_width: adaptive N needs either adaptive_half_width or adaptive_budget"),
        (
            {"ratings_max": 8, "adaptive_half_width": 0.5, "adaptive_budget": 30},
            "adaptive_half_width: adaptive N needs either adaptive_half_width or adaptive_budget",
        ),
        ({"adaptive_half_width": 0.5}, "ratings_max: adaptive N needs ratings_max"),
        ({"adaptive_budget": 30}, "ratings_max: adaptive N needs ratings_max"),
        ({"ratings_max": 8, "adaptive_budget": 0}, "the budget must be a whole number of ratings, 1 or more"),
        ({"ratings_max": 3, "adaptive_half_width": 0.5}, "maximum must be a whole number above ratings_per_pair (3)"),
        ({"ratings_max": 8, "adaptive_half_width": -1}, "half-width must be above 0"),
    ],
)
def test_an_adaptive_rule_half_given_or_out_of_range_is_refused(admin_api, small, adaptive, message):
    response = admin_api.post(
        "/api/sampling/batches/",
        {"dataset": small.dataset.name, "split": "val", "methods": {"c2c_cocaption": 3}, "ratings_per_pair": 3}
        | adaptive,
        format="json",
    )
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert not SamplingBatch.objects.exists()
