"""Explained failures from an evaluation run, on PostgreSQL: `manage.py evaluate
--explain` (the global table, the failures file) and an evaluation job with ``explain``
through the API (its report, comparison and failures file); the figures are the pure
module's on the hand-built split with its objects."""

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.support.evaluation_data import CAPTION_KEYS, IMAGE_KEYS, annotate_hand_dataset, import_hand_spaces
from tests.support.export_data import client_for

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def annotated(hand_dataset, hand_files, settings, tmp_path):
    settings.EXPORT_DIR = str(tmp_path / "exports")
    annotate_hand_dataset(hand_dataset)
    import_hand_spaces(hand_dataset, hand_files)
    return hand_dataset


def _evaluate(dataset, tmp_path, **options):
    out = io.StringIO()
    failures = tmp_path / "out" / "failures.csv"
    call_command(
        "evaluate",
        dataset=dataset.name,
        split="val",
        explain=True,
        failures=str(failures),
        size_threshold=0.05,
        stdout=out,
        **options,
    )
    return out.getvalue(), list(csv.DictReader(failures.open()))


def test_the_command_prints_the_global_table_and_writes_the_failures(annotated, tmp_path):
    text, rows = _evaluate(
        annotated, tmp_path, model=["a:caption-space=caption-model", "b:caption-space=caption-model"]
    )
    table = text[text.index("Explained failures") :]
    assert "T_D 0.05 of the image's area" in table
    assert [line.split()[-2:] for line in table.splitlines() if line.startswith("|F|")] == [["6", "6"]]
    assert [line.split()[-2:] for line in table.splitlines() if line.startswith("MRR@5")] == [["0.500", "0.500"]]
    assert "6 failures" not in text and "12 failures written to" in text
    assert [row["model"] for row in rows] == ["a"] * 6 + ["b"] * 6
    first = rows[0]
    assert (first["query"], first["truth_image"], first["retrieved_image"], first["rank"]) == (
        CAPTION_KEYS[0],
        IMAGE_KEYS[0],
        IMAGE_KEYS[2],
        "2",
    )
    assert float(first["agnostic_CA"]) == 0.5
    assert float(first["agnostic_SD"]) == pytest.approx(0.1)
    assert first["agnostic_SD_binary"] == "1"
    assert first["informed_NCS"] == ""
    assert first["query_text"] == "A dog leaps for a frisbee."


def test_explain_needs_caption_vectors(annotated, tmp_path):
    with pytest.raises(CommandError, match="--explain ranks captions"):
        _evaluate(annotated, tmp_path, image_space="image-model")
    assert not (tmp_path / "out").exists()


def test_an_unknown_category_is_named(annotated, tmp_path):
    from annotation.models import ObjectAnnotation

    ObjectAnnotation.objects.filter(category="cat").update(category="gryphon")
    with pytest.raises(CommandError, match="'gryphon' is not in the WordNet tables"):
        _evaluate(annotated, tmp_path, caption_space="caption-model")


def test_an_evaluation_job_with_explain_writes_the_failures(annotated, django_capture_on_commit_callbacks):
    client = client_for("researcher")
    payload = {
        "dataset": annotated.name,
        "split": "val",
        "models": [{"name": "mine", "image_space": "image-model", "caption_space": "caption-model", "joint": True}],
        "audited": False,
        "explain": True,
        "size_threshold": 0.05,
    }
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post("/api/evaluations/", payload, format="json")
    assert started.status_code == 202, started.content
    job = client.get(f"/api/evaluations/{started.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    assert [f["name"] for f in job["files"]] == ["report.json", "comparison.csv", "failures.csv"]
    assert client.get(f"/api/evaluations/{job['id']}/files/adversarial.csv").status_code == 404
    failures = {
        (r["metric"], r["task"]): r["models"]["mine"]["value"] for r in job["comparison"] if r["section"] == "explain"
    }
    assert failures[("failures", "caption_to_corpus")] == 6
    assert failures[("MRR@N", "caption_to_corpus")] == 0.5
    assert failures[("CA", "agnostic")] == pytest.approx(1 / 6 * (0.5 + 0 + 0 + 0 + 0 + 0.5))
    report = json.loads(b"".join(client.get(job["files"][0]["url"]).streaming_content))
    assert report["models"]["mine"]["explain"]["size_threshold"] == 0.05
    rows = list(csv.DictReader(io.StringIO(b"".join(client.get(job["files"][2]["url"]).streaming_content).decode())))
    assert len(rows) == 6 and {row["model"] for row in rows} == {"mine"}


def test_a_job_without_explain_has_no_failures_file(annotated, django_capture_on_commit_callbacks):
    client = client_for("researcher")
    model = {"name": "m", "image_space": "image-model", "caption_space": "caption-model", "joint": True}
    payload = {"dataset": annotated.name, "split": "val", "models": [model], "audited": False}
    with django_capture_on_commit_callbacks(execute=True):
        job_id = client.post("/api/evaluations/", payload, format="json").json()["id"]
    assert client.get(f"/api/evaluations/{job_id}/").json()["status"] == "succeeded"
    assert client.get(f"/api/evaluations/{job_id}/files/failures.csv").status_code == 404
    assert client.get(f"/api/evaluations/{job_id}/files/adversarial.csv").status_code == 404


def test_explain_with_only_image_spaces_is_refused(annotated):
    payload = {
        "dataset": annotated.name,
        "split": "val",
        "models": [{"name": "m", "image_space": "image-model"}],
        "explain": True,
    }
    response = client_for("researcher").post("/api/evaluations/", payload, format="json")
    assert response.status_code == 400
    assert "give a model a caption space" in response.json()["detail"]


# --- adversarial queries --------------------------------------------------------------------


@pytest.fixture
def hashed(annotated, tmp_path):
    """The split's captions embedded by the `embed` command's stand-in encoder (``hashing``)."""
    call_command(
        "embed",
        dataset=annotated.name,
        space="hashed",
        encoder="hashing",
        out_dir=tmp_path / "spaces",
        do_import=True,
        stdout=io.StringIO(),
    )
    return annotated


def test_the_command_re_ranks_adversarial_queries_with_the_spaces_own_encoder(hashed, tmp_path):
    out, changes = tmp_path / "report.json", tmp_path / "out" / "adversarial.csv"
    text, _ = _evaluate(
        hashed, tmp_path, caption_space="hashed", adversarial=True, out=str(out), adversarial_changes=str(changes)
    )
    changed = list(csv.DictReader(changes.open()))
    assert [(row["kind"], row["word"], row["query_text"]) for row in changed] == [
        ("antonym", "wet", "A wet cat sleeps on a sofa."),
        ("colour", "brown", "A brown dog in the park."),
        ("size", "small", "A small cat."),
    ]
    assert changed[0]["changed_text"] == "A dry cat sleeps on a sofa."
    assert (changed[0]["query"], changed[0]["image"]) == (CAPTION_KEYS[2], IMAGE_KEYS[1])
    assert "3 changed captions written to" in text
    kinds = json.loads(out.read_text())["explain"]["adversarial"]["kinds"]
    # One caption has each kind's word: "wet", "brown", "small".
    assert [(kind, effects["queries"]) for kind, effects in kinds.items()] == [
        ("antonym", 1),
        ("colour", 1),
        ("size", 1),
    ]
    assert [kinds[kind]["examples"][0]["word"] for kind in kinds] == ["wet", "brown", "small"]
    assert kinds["antonym"]["examples"][0]["text"] == "A dry cat sleeps on a sofa."
    for effects in kinds.values():
        assert effects["falls"] + effects["stays"] + effects["rises"] == 1
    table = text[text.index("Adversarial queries") :]
    assert "seed 0, colours over 150 apart, from every named colour" in table
    assert [line.split()[-1] for line in table.splitlines() if line.startswith("size: changed queries")] == ["1"]


def test_adversarial_queries_need_explain_and_a_known_encoder(annotated, tmp_path):
    with pytest.raises(CommandError, match="add --explain"):
        call_command("evaluate", dataset=annotated.name, split="val", caption_space="caption-model", adversarial=True)
    with pytest.raises(CommandError, match="needs its caption encoder"):
        _evaluate(annotated, tmp_path, caption_space="caption-model", adversarial=True)
    # The hand-built vectors are 3-d: the named encoder's 384-d vectors cannot be ranked against them.
    with pytest.raises(CommandError, match="encoder 'hashing'.*expected"):
        _evaluate(annotated, tmp_path, caption_space="caption-model", adversarial=True, encoder="hashing")
    with pytest.raises(CommandError, match="'clip' is no caption encoder|made by 'clip'"):
        _evaluate(annotated, tmp_path, caption_space="caption-model", adversarial=True, encoder="clip")


def test_an_evaluation_job_runs_the_adversarial_queries(hashed, django_capture_on_commit_callbacks):
    client = client_for("researcher")
    payload = {
        "dataset": hashed.name,
        "split": "val",
        "models": [{"name": "hashed", "caption_space": "hashed"}],
        "audited": False,
        "explain": True,
        "adversarial": {"seed": 3, "colour_pool": "captions"},
    }
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post("/api/evaluations/", payload, format="json")
    assert started.status_code == 202, started.content
    job = client.get(f"/api/evaluations/{started.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    assert job["explain"]["adversarial"] == {"seed": 3, "colour_distance": 150.0, "colour_pool": "captions"}
    moves = {
        (r["task"], r["metric"]): r["models"]["hashed"]["value"]
        for r in job["comparison"]
        if r["section"] == "adversarial"
    }
    assert moves[("size", "queries")] == 1
    # The only colour the captions use is brown: no colour lies far enough from it.
    assert moves[("colour", "queries")] == 0
    assert moves[("colour", "change R@5")] is None
    names = [f["name"] for f in job["files"]]
    assert names == ["report.json", "comparison.csv", "failures.csv", "adversarial.csv"]
    changed = list(csv.DictReader(io.StringIO(b"".join(client.get(job["files"][3]["url"]).streaming_content).decode())))
    assert [(row["model"], row["kind"]) for row in changed] == [("hashed", "antonym"), ("hashed", "size")]
    for row in changed:
        assert int(row["rank_after"]) >= 1 and int(row["rank_before"]) >= 1


def test_adversarial_queries_without_explain_are_refused(hashed):
    payload = {
        "dataset": hashed.name,
        "split": "val",
        "models": [{"name": "hashed", "caption_space": "hashed"}],
        "adversarial": {},
    }
    response = client_for("researcher").post("/api/evaluations/", payload, format="json")
    assert response.status_code == 400
    assert "ask for explain too" in response.json()["detail"]


def test_an_evaluation_job_refuses_a_space_of_no_known_encoder(annotated):
    payload = {
        "dataset": annotated.name,
        "split": "val",
        "models": [{"name": "hand", "caption_space": "caption-model"}],
        "explain": True,
        "adversarial": {},
    }
    response = client_for("researcher").post("/api/evaluations/", payload, format="json")
    assert response.status_code == 400
    assert "model 'hand': the caption vectors were made by 'an unnamed encoder'" in response.json()["detail"]


# --- the failures a page at a time ------------------------------------------------------------


@pytest.fixture
def explained_job(annotated, django_capture_on_commit_callbacks):
    client = client_for("researcher")
    model = {"image_space": "image-model", "caption_space": "caption-model", "joint": True}
    payload = {
        "dataset": annotated.name,
        "split": "val",
        "models": [{"name": "one", **model}, {"name": "two", **model}],
        "audited": False,
        "explain": True,
        "size_threshold": 0.05,
    }
    with django_capture_on_commit_callbacks(execute=True):
        job_id = client.post("/api/evaluations/", payload, format="json").json()["id"]
    return client, f"/api/evaluations/{job_id}/failures/"


def test_the_failures_come_a_page_at_a_time_sorted_by_a_metric(explained_job):
    client, url = explained_job
    page = client.get(url, {"sort": "agnostic_CA", "descending": "true", "limit": 3}).json()
    assert page["count"] == 6 and page["models"] == ["one", "two"]
    assert [row["agnostic_CA"] for row in page["rows"]] == [0.5, 0.5, 0.0]
    first = page["rows"][0]
    assert (first["model"], first["query"], first["rank"]) == ("one", CAPTION_KEYS[0], 2)
    assert first["agnostic_CE"] == 1 and first["informed_NCS"] is None
    assert first["truth_image_url"].endswith(IMAGE_KEYS[0]) and first["retrieved_image_url"].endswith(IMAGE_KEYS[2])
    # Undefined values sort last both ways.
    ascending = client.get(url, {"sort": "agnostic_SD", "model": "two"}).json()["rows"]
    values = [row["agnostic_SD"] for row in ascending]
    assert values[-1] is None and values[0] is not None and values == sorted(values, key=lambda v: (v is None, v))
    assert {row["model"] for row in ascending} == {"two"}
    assert len(client.get(url, {"offset": 5}).json()["rows"]) == 1


def test_a_failures_page_names_a_bad_request(explained_job):
    client, url = explained_job
    assert client.get(url, {"model": "three"}).status_code == 404
    assert "no failures of model 'three'" in client.get(url, {"model": "three"}).json()["detail"]
    assert client.get(url, {"sort": "colour"}).status_code == 400
    assert client.get(url, {"limit": 201}).status_code == 400
    assert client_for("rater").get(url).status_code == 403
