"""The researcher page's words against the files an export writes: every file has a note,
and the notes count rows as the writers do (JSONL: one object per pair, raw: one row per
rating)."""

import csv
import io
import json
from pathlib import Path

import pytest
from django.test import Client
from django.utils.timezone import now

from annotation.models import Job, Participant
from annotation.people.crowd.links import campaign_link_create
from annotation.people.crowd.questions import answers_save, study_question_add
from frontend.research import FILE_NOTES, FORMAT_NOTES, file_note
from tests.factories import DatasetFactory, UserFactory
from tests.support.export_data import client_for, rated_factory_dataset, start_export

pytestmark = pytest.mark.django_db


def study_answer(rated) -> None:
    """One answer of a participant (a rater of the dataset) to a campaign link's question,
    so the export writes study_answers.csv too."""
    link = campaign_link_create(dataset=rated.dataset, name="wave", kinds=["STS"], quota=3, completion_code="C1")
    question = study_question_add(link, phase="pre", prompt="Your age?")
    participant = Participant.objects.create(link=link, user=rated.raters[0], external_id="e1", started_at=now())
    answers_save(participant, phase="pre", answers={str(question.pk): "30"})


def test_every_file_of_an_export_is_described_and_counted_as_the_page_says(django_capture_on_commit_callbacks):
    rated = rated_factory_dataset(n_images=6)
    study_answer(rated)
    client = client_for("researcher")
    started = start_export(client, {"dataset": rated.dataset.name}, django_capture_on_commit_callbacks).json()
    job = client.get(f"/api/exports/{started['id']}/").json()
    out = Path(Job.objects.get(pk=job["id"]).result["out"])
    notes = {entry["name"]: file_note(entry["name"]) for entry in job["files"]}
    assert set(notes.values()) == {note for _, _, note in FILE_NOTES}, "every note describes a file"
    pairs = sum(1 for pair in rated.complete if pair.kind == "STS")
    lines = (out / "sts_val.jsonl").read_text().splitlines()
    assert "one JSON object per complete pair" in notes["sts_val.jsonl"] and len(lines) == pairs
    assert len(json.loads(lines[0])["ratings"]) == 5, "the pair's ratings are inside its object"
    raw = list(csv.reader(io.StringIO((out / "sts_val_raw.csv").read_text())))
    assert notes["sts_val_raw.csv"].startswith("one row per rating") and len(raw) - 1 == 5 * pairs
    assert notes["sts_val.csv"].startswith("one row per complete pair")
    assert "per pair" in FORMAT_NOTES["jsonl"] and "per rating" not in FORMAT_NOTES["jsonl"]
    with pytest.raises(ValueError, match="notes.txt"):
        file_note("notes.txt")


def test_the_page_states_the_notes():
    DatasetFactory(name="coco")
    client = Client()
    client.force_login(UserFactory(roles=["researcher"], password=None))
    html = client.get("/research/").content.decode()
    assert "one JSON object per pair" in html and "one JSON object per rating" not in html
    assert "What each file holds" in html and "&lt;task&gt;_&lt;split&gt;_raw.parquet" in html


def test_the_printed_command_names_the_datasets_own_spaces():
    from frontend.research import cli_model

    two_models = [
        {"name": "minilm", "modality": "caption", "dimension": 384},
        {"name": "efficientnet_lite0", "modality": "image", "dimension": 1280},
    ]
    assert cli_model(two_models) == "stored:image-space=efficientnet_lite0,caption-space=minilm,spaces=unimodal"
    joint = [{"name": "clip-txt", "modality": "caption", "dimension": 512}, {**two_models[1], "dimension": 512}]
    assert cli_model(joint) == "stored:image-space=efficientnet_lite0,caption-space=clip-txt"
    assert cli_model([]) == ""
