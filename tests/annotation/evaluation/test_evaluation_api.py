"""Evaluation jobs through the API: start one with the dataset's own embedding spaces,
poll it, read its comparison and download its files; the figures are the command's; bad
requests and refused roles leave no job."""

import csv
import io
import json

import pytest
from rest_framework.test import APIClient

from annotation.models import Job, JobStatus
from annotation.runs.jobs import job_create
from tests.support.evaluation_data import EXPECTED, assert_retrieval_matches, import_hand_spaces
from tests.support.export_data import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def spaces(hand_dataset, hand_files, settings, tmp_path):
    settings.EXPORT_DIR = str(tmp_path / "exports")
    import_hand_spaces(hand_dataset, hand_files)
    # A finished export whose CxC files are the hand-built ratings.
    export = job_create(
        kind=Job.Kind.EXPORT_DATASET, params={"dataset": hand_dataset.name, "formats": ["cxc"], "splits": ["val"]}
    )
    Job.objects.filter(pk=export.pk).update(status=JobStatus.SUCCEEDED, result={"out": str(hand_files["ratings"])})
    return {"dataset": hand_dataset.name, "export": export.pk}


def joint_model(name="mine", **changes):
    return {"name": name, "image_space": "image-model", "caption_space": "caption-model", "joint": True, **changes}


def start(client, payload, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post("/api/evaluations/", payload, format="json")


@pytest.mark.parametrize("role", ["researcher", "admin"])
def test_an_evaluation_runs_in_the_background_and_gives_the_commands_figures(
    spaces, role, django_capture_on_commit_callbacks
):
    client = client_for(role)
    payload = {
        "dataset": spaces["dataset"],
        "split": "val",
        "models": [joint_model(), joint_model("captions only", image_space=None, joint=False)],
        "ratings_export": spaces["export"],
        "audited": False,
    }
    response = start(client, payload, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    started = response.json()
    assert (started["status"], started["comparison"], started["files"]) == ("pending", [], [])
    job = client.get(f"/api/evaluations/{started['id']}/").json()
    assert job["status"] == "succeeded", job
    assert job["progress_done"] == job["progress_total"] == 2
    assert [m["name"] for m in job["models"]] == ["mine", "captions only"]
    recall = next(
        r for r in job["comparison"] if (r["task"], r["positives"], r["metric"]) == ("text_to_image", "cxc", "R@1")
    )
    assert set(recall["models"]) == {"mine"}, "a caption-only model has no text->image figure"
    assert [f["name"] for f in job["files"]] == ["report.json", "comparison.csv"]
    report = json.loads(b"".join(client.get(job["files"][0]["url"]).streaming_content))
    assert_retrieval_matches(report["models"]["mine"]["retrieval"], EXPECTED)
    assert report["comparison"] == job["comparison"]
    table = list(csv.DictReader(io.StringIO(b"".join(client.get(job["files"][1]["url"]).streaming_content).decode())))
    assert {row["model"] for row in table} == {"mine", "captions only"}
    assert client.get("/api/evaluations/", {"dataset": spaces["dataset"]}).json()[0]["id"] == job["id"]
    assert client.get("/api/evaluations/", {"dataset": "other"}).json() == []


@pytest.mark.parametrize("who", ["rater", "anonymous", "no role"])
def test_raters_and_anonymous_users_cannot_evaluate(spaces, who, django_capture_on_commit_callbacks):
    payload = {"dataset": spaces["dataset"], "split": "val", "models": [joint_model()], "audited": False}
    done = start(client_for("researcher"), payload, django_capture_on_commit_callbacks).json()
    client = {"rater": client_for("rater"), "anonymous": APIClient(), "no role": client_for()}[who]
    expected = 401 if who == "anonymous" else 403
    before = Job.objects.count()
    for method, url in [
        ("post", "/api/evaluations/"),
        ("get", "/api/evaluations/"),
        ("get", f"/api/evaluations/{done['id']}/"),
        ("get", f"/api/evaluations/{done['id']}/files/report.json"),
    ]:
        response = getattr(client, method)(url, payload if method == "post" else None, format="json")
        assert response.status_code == expected, (who, url, response.status_code)
        assert "detail" in response.json()
    assert Job.objects.count() == before


@pytest.mark.parametrize(
    ("changes", "status", "detail"),
    [
        ({"models": [joint_model(image_space="clip-img")]}, 404, "no embedding space 'clip-img'"),
        ({"models": [joint_model(image_space="caption-model")]}, 400, "holds caption vectors, not image vectors"),
        ({"models": [joint_model(caption_space=None)]}, 400, "a joint space needs an image and a caption space"),
        ({"models": [joint_model(image_space=None, caption_space=None, joint=False)]}, 400, "names no embedding"),
        ({"models": [joint_model(), joint_model()]}, 400, "a name of its own"),
        ({"models": []}, 400, "choose at least one model"),
        ({"split": "test"}, 404, "no split 'test'"),
        ({"dataset": "nope"}, 404, "no dataset named 'nope'"),
        ({"ratings_export": 999999}, 404, "no export job #999999"),
    ],
)
def test_bad_requests_name_the_problem_and_start_nothing(spaces, changes, status, detail):
    payload = {"dataset": spaces["dataset"], "split": "val", "models": [joint_model()], **changes}
    before = Job.objects.count()
    response = client_for("researcher").post("/api/evaluations/", payload, format="json")
    assert response.status_code == status, response.content
    assert detail in json.dumps(response.json())
    assert Job.objects.count() == before


def test_an_unfinished_export_is_refused_and_files_wait_for_success(spaces):
    client = client_for("researcher")
    Job.objects.filter(pk=spaces["export"]).update(status=JobStatus.RUNNING)
    payload = {
        "dataset": spaces["dataset"],
        "split": "val",
        "models": [joint_model()],
        "ratings_export": spaces["export"],
    }
    response = client.post("/api/evaluations/", payload, format="json")
    assert response.status_code == 409 and "is running" in response.json()["detail"]
    del payload["ratings_export"]
    pending = client.post("/api/evaluations/", payload, format="json").json()  # not run: on-commit not executed
    response = client.get(f"/api/evaluations/{pending['id']}/files/report.json")
    assert response.status_code == 409 and "is pending" in response.json()["detail"]
    assert client.get(f"/api/evaluations/{spaces['export']}/").status_code == 404, "an export is no evaluation"


def test_evaluations_are_numbered_from_one_though_job_ids_are_shared(spaces, django_capture_on_commit_callbacks):
    """Imports and exports take job ids too (the fixture's export is one): the number a
    researcher reads counts evaluations only."""
    client = client_for("researcher")
    payload = {"dataset": spaces["dataset"], "split": "val", "models": [joint_model()], "audited": False}
    first = start(client, payload, django_capture_on_commit_callbacks).json()
    second = start(client, payload, django_capture_on_commit_callbacks).json()
    assert first["id"] > spaces["export"] and (first["number"], second["number"]) == (1, 2)
    listed = client.get("/api/evaluations/", {"dataset": spaces["dataset"]}).json()
    assert [(job["id"], job["number"]) for job in listed] == [(second["id"], 2), (first["id"], 1)]
    done = client.get(f"/api/evaluations/{first['id']}/").json()
    assert done["number"] == 1 and done["items"] == {"images": 3, "captions": 6}
    # What was not evaluated, and why, per model; a figure without a value says why too.
    assert done["skipped"]["mine"]["coco_1k"] == "COCO 1K needs at least 1000 images; the split has 3"
    assert "this split has 3 images" in done["skipped"]["mine"]["coco_5k"]
    for row in done["comparison"]:
        entry = row["models"]["mine"]
        assert entry["value"] is not None or entry["unavailable"], row
