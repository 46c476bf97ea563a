"""Every endpoint that serves CSV, downloaded over HTTP as the admin and the researcher
download it (export jobs' files and zip included), with formula-like text planted in each
free-text field that reaches it (tests/support/hostile_world.py): no cell of any of them
begins like a formula unescaped, and each planted value is there, escaped.

The endpoints are those of tests/support/csv_endpoints.py, and the list cannot fall
behind the code silently: a project view whose code makes a file answer must be listed
(or listed as serving no CSV, with the reason), and any test anywhere that downloads a
CSV or zip from a view not listed fails (tests/conftest.py)."""

from __future__ import annotations

import csv
import io
import re
import zipfile

import pytest
from django.contrib import admin
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import get_resolver
from rest_framework.test import APIClient

from annotation.dashboard.services import campaign_snapshot_refresh
from annotation.models import Caption, Job, JobStatus
from annotation.runs.jobs import job_create
from tests.factories import SplitFactory, UserFactory
from tests.support import csv_endpoints
from tests.support.csv_endpoints import (
    CSV_ENDPOINTS,
    FILE_VIEWS_NOT_CSV,
    file_answer_actions,
    file_answer_views,
    serves_csv,
)
from tests.support.evaluation_data import CAPTION_KEYS, annotate_hand_dataset
from tests.support.hostile_world import (
    ALLOWED_EMAIL,
    ALLOWED_EXTERNAL_ID,
    ALLOWED_USERNAME,
    FORMULA_LEADS,
    hostile,
    hostile_campaign,
    hostile_plain,
)

pytestmark = pytest.mark.django_db

# A cell a spreadsheet reads as a number, not a formula (-1.5, -2, 1e-05, 1,000).
NUMBER = re.compile(r"[-+]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _unescaped(cells: list[str]) -> list[str]:
    return [cell for cell in cells if cell.startswith(FORMULA_LEADS) and not NUMBER.fullmatch(cell)]


def _body(response) -> str:
    assert response.status_code == 200, (response.status_code, getattr(response, "content", b"")[:300])
    assert serves_csv(response)
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8")


# --- the walks: endpoint -> {file name: text} -----------------------------------------------


def _export(world, researcher, capture) -> dict:
    with capture(execute=True):
        started = researcher.post("/api/exports/", {"dataset": world.dataset.name, "formats": ["cxc"]}, format="json")
    assert started.status_code == 202, started.content
    job = researcher.get(f"/api/exports/{started.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    return job


def walk_export_files(world, clients, capture) -> dict[str, str]:
    job = _export(world, clients["researcher"], capture)
    files = clients["researcher"].get(f"/api/exports/{job['id']}/files/").json()
    csv_files = [entry for entry in files if entry["name"].endswith(".csv")]
    assert {"study_answers.csv", "gold_val.csv", "sts_val_raw.csv"} <= {entry["name"] for entry in csv_files}
    return {entry["name"]: _body(clients["researcher"].get(entry["url"])) for entry in csv_files}


def walk_export_archive(world, clients, capture) -> dict[str, str]:
    job = _export(world, clients["researcher"], capture)
    archive = zipfile.ZipFile(io.BytesIO(_body_bytes(clients["researcher"].get(f"/api/exports/{job['id']}/archive"))))
    names = [name for name in archive.namelist() if name.endswith(".csv")]
    assert any(name.endswith("/study_answers.csv") for name in names), names
    return {name: archive.read(name).decode("utf-8") for name in names}


def _body_bytes(response) -> bytes:
    assert response.status_code == 200 and serves_csv(response)
    return b"".join(response.streaming_content)


def walk_evaluation_file(world, clients, capture) -> dict[str, str]:
    dataset, files = world.hand_dataset, world.hand_files
    # The failures file carries the captions' text: the first caption's is planted.
    annotate_hand_dataset(dataset)
    Caption.objects.filter(dataset=dataset, key=CAPTION_KEYS[0]).update(text=hostile("failure_query_text"))
    # ... and the adversarial file the changed ones': this text's "small" is changed; it
    # shares the first one's words, so the first caption fails.
    Caption.objects.filter(dataset=dataset, key=CAPTION_KEYS[3]).update(text=hostile("small_caption"))
    call_command(
        "embed",
        dataset=dataset.name,
        space="hashed",
        encoder="hashing",
        out_dir=files["ratings"].parent,
        do_import=True,
        stdout=io.StringIO(),
    )
    export = job_create(
        kind=Job.Kind.EXPORT_DATASET, params={"dataset": dataset.name, "formats": ["cxc"], "splits": ["val"]}
    )
    Job.objects.filter(pk=export.pk).update(status=JobStatus.SUCCEEDED, result={"out": str(files["ratings"])})
    payload = {
        "dataset": dataset.name,
        "split": "val",
        # The adversarial queries re-embed with the caption space's own encoder: hashing.
        "models": [{"name": hostile("model_name"), "caption_space": "hashed"}],
        "ratings_export": export.pk,
        "audited": False,
        "explain": True,
        "adversarial": {},
    }
    with capture(execute=True):
        started = clients["researcher"].post("/api/evaluations/", payload, format="json")
    assert started.status_code == 202, started.content
    job = clients["researcher"].get(f"/api/evaluations/{started.json()['id']}/").json()
    urls = {entry["name"]: entry["url"] for entry in job["files"]}
    names = ("comparison.csv", "failures.csv", "adversarial.csv")
    return {name: _body(clients["researcher"].get(urls[name])) for name in names}


def walk_review_file(world, clients, capture) -> dict[str, str]:
    # The failures of the explained evaluation the walk of evaluation-file ran (the walks
    # run in order), queued for review: the file carries the model's name and the query.
    job = Job.objects.filter(kind=Job.Kind.EVALUATE, params__explain__isnull=False).latest("id")
    queued = clients["researcher"].post(f"/api/evaluations/{job.pk}/review/", {"raters": 1}, format="json")
    assert queued.status_code == 201, queued.content
    return {"review.csv": _body(clients["researcher"].get(f"/api/evaluations/{job.pk}/review.csv"))}


def walk_participants(world, clients, capture) -> dict[str, str]:
    url = f"/api/datasets/{world.dataset.name}/campaign-links/{world.link.pk}/participants/"
    return {"participants.csv": _body(clients["admin_api"].get(url))}


def walk_campaign_raters(world, clients, capture) -> dict[str, str]:
    campaign_snapshot_refresh(world.dataset)
    return {"raters.csv": _body(clients["admin"].get(f"/campaigns/{world.dataset.name}/raters/?format=csv"))}


# Usernames and an address the bulk add accepts although they begin like formulas.
INVITED_API = ("-5+5", "@sum", ALLOWED_EMAIL)
INVITED_ADMIN = ("-6+6", "@adminsum", ALLOWED_EMAIL)


def _raters_file(invited: tuple[str, str, str]) -> SimpleUploadedFile:
    first, second, email = invited
    text = f"username,email,kinds\n{first},{email},SIS\n{second},,STS\n"
    return SimpleUploadedFile("raters.csv", text.encode(), content_type="text/csv")


def walk_invitations_api(world, clients, capture) -> dict[str, str]:
    answer = clients["admin_api"].post("/api/raters/", {"file": _raters_file(INVITED_API)}, format="multipart")
    assert answer.status_code == 201, answer.content
    url = answer["Link"][1 : answer["Link"].index(">")]
    return {"invitation-links.csv": _body(clients["admin_api"].post(url))}


def walk_invitations_admin(world, clients, capture) -> dict[str, str]:
    page = clients["admin"].post("/admin/auth/user/add-raters/", {"file": _raters_file(INVITED_ADMIN)}).content.decode()
    action = page.split('id="invitations-csv"')[0].rsplit('action="', 1)[1].split('"', 1)[0]
    return {"invitation-links.csv": _body(clients["admin"].post(action))}


WALKS = {
    "export-file": walk_export_files,
    "export-archive": walk_export_archive,
    "evaluation-file": walk_evaluation_file,
    "evaluation-review-csv": walk_review_file,
    "campaign-link-participants": walk_participants,
    "campaign-raters": walk_campaign_raters,
    "rater-invitations-csv": walk_invitations_api,
    "admin:auth_user_invitations_csv": walk_invitations_admin,
}

_EXPORTED = {
    hostile("answer"),
    "=1+2 tab_answer",
    hostile("question"),
    hostile("link_name"),
    hostile("caption_key"),
    hostile_plain("image_key"),
    hostile_plain("sits_caption_key"),
    hostile("gold_key"),
}
# What each walk must find (escaped): the planted values that reach it.
PLANTED = {
    "export-file": _EXPORTED,
    "export-archive": _EXPORTED,
    "evaluation-file": {hostile("model_name"), hostile("failure_query_text"), hostile("small_caption")},
    "evaluation-review-csv": {hostile("model_name"), hostile("failure_query_text")},
    "campaign-link-participants": {hostile("external_id"), ALLOWED_EXTERNAL_ID},
    "campaign-raters": {hostile("username"), ALLOWED_USERNAME},
    "rater-invitations-csv": set(INVITED_API),
    "admin:auth_user_invitations_csv": set(INVITED_ADMIN),
}


@pytest.fixture
def world(tmp_path, hand_dataset, hand_files):
    world = hostile_campaign(tmp_path)
    world.hand_dataset, world.hand_files = hand_dataset, hand_files
    return world


@pytest.fixture
def clients(admin_client):
    researcher, admin_api = APIClient(), APIClient()
    researcher.force_authenticate(UserFactory(roles=["researcher"], password=None))
    admin_api.force_authenticate(UserFactory(roles=["admin"], password=None))
    return {"researcher": researcher, "admin_api": admin_api, "admin": admin_client}


def test_no_csv_the_app_serves_has_a_formula_cell_unescaped(world, clients, django_capture_on_commit_callbacks):
    problems, missing = {}, {}
    for endpoint, walk in WALKS.items():
        files = walk(world, clients, django_capture_on_commit_callbacks)
        assert files, f"{endpoint}: the walk downloaded no CSV"
        cells = [cell for text in files.values() for cell in _cells(text)]
        for name, text in files.items():
            if bad := _unescaped(_cells(text)):
                problems[f"{endpoint} {name}"] = bad
        found = {cell[1:] for cell in cells if cell.startswith("'")}
        if lost := PLANTED[endpoint] - found:
            missing[endpoint] = sorted(lost)
    assert problems == {}, "formula cells written unescaped"
    assert missing == {}, "planted values that did not come out escaped"


def test_the_walk_covers_every_endpoint_listed_and_every_view_that_answers_with_a_file():
    assert set(WALKS) == set(CSV_ENDPOINTS) == set(PLANTED)
    resolver = get_resolver()
    found = file_answer_views(resolver.url_patterns) | file_answer_actions(admin.site)
    unknown = sorted(set(found) - set(CSV_ENDPOINTS) - set(FILE_VIEWS_NOT_CSV))
    assert unknown == [], "list these in tests/support/csv_endpoints.py and walk the CSV ones here"
    names = _view_names(resolver.url_patterns)
    assert set(CSV_ENDPOINTS) | set(FILE_VIEWS_NOT_CSV) <= names, "a listed view is gone from the URL conf"


def _view_names(patterns, namespace: str = "") -> set[str]:
    names = set()
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            names |= _view_names(pattern.url_patterns, inner)
        elif pattern.name:
            names.add(f"{namespace}{pattern.name}")
    return names


def test_a_csv_from_a_view_the_walk_does_not_know_fails_the_test(admin_client, monkeypatch):
    """The net of tests/conftest.py: with campaign-raters taken off the list, downloading
    its CSV fails whichever test does it."""
    monkeypatch.setattr(
        csv_endpoints, "CSV_ENDPOINTS", {k: v for k, v in CSV_ENDPOINTS.items() if k != "campaign-raters"}
    )
    dataset = SplitFactory().dataset
    campaign_snapshot_refresh(dataset)
    with pytest.raises(pytest.fail.Exception, match="'campaign-raters' served a CSV"):
        admin_client.get(f"/campaigns/{dataset.name}/raters/?format=csv")
