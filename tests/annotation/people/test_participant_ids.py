"""A participant id must look like an id of the link's platform (Prolific: 24
hexadecimal characters; MTurk: a worker id) or match the link's own pattern, which is
checked when the link is saved. Through the join page (HTTP); the refusals of malformed
ids are in test_crowd.py's table of bad links and ids."""

import html
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import CampaignLink, Participant
from annotation.people.crowd.external_ids import MAX_ID_PATTERN
from annotation.people.crowd.links import CampaignLinkError, campaign_link_create
from tests.factories import SplitFactory, UserFactory
from tests.support.migration_support import migrate_to, migrate_to_latest
from tests.support.queue_support import queue_pairs

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=4, ratings_per_pair=3)
    return split.dataset


def make_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS"], "quota": 3, "completion_code": "DONE-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def opened(link, external_id: str, address: str = "203.0.113.5"):
    return Client(REMOTE_ADDR=address).get(f"/join/{link.token}/", {link.id_param: external_id})


@pytest.mark.parametrize(
    ("extra", "external_id"),
    [
        ({}, "5f0c2d9e8b7a6f5e4d3c2b1a"),
        ({}, "5F0C2D9E8B7A6F5E4D3C2B1A"),
        ({"id_param": "workerId"}, "A1B2C3D4E5F6"),
        ({"id_param": "workerId"}, "A1B2C3D4E5F6G7"),
        ({"id_param": "pid", "id_pattern": r"lab-\d{4}"}, "lab-0042"),
        ({"id_pattern": r"pilot-\d+"}, "pilot-7"),
    ],
)
def test_an_id_of_the_platforms_format_or_the_links_pattern_joins(dataset, extra, external_id):
    link = make_link(dataset, **extra)
    assert opened(link, external_id).status_code == 302
    assert Participant.objects.get(link=link).external_id == external_id


def test_the_links_own_pattern_takes_the_place_of_the_platforms_format(dataset):
    link = make_link(dataset, id_pattern=r"pilot-\d+")
    refused = opened(link, "5f0c2d9e8b7a6f5e4d3c2b1a")
    assert refused.status_code == 400
    assert "(PROLIFIC_PID) is not the form this study expects" in html.unescape(refused.content.decode())
    assert not Participant.objects.exists() and not get_user_model().objects.exists()


def test_a_participant_whose_id_a_narrowed_pattern_no_longer_takes_cannot_come_back(dataset):
    """The admin page's help says so: the pattern holds on every visit."""
    link = make_link(dataset, id_pattern=r"pilot-\d+")
    assert opened(link, "pilot-7").status_code == 302
    CampaignLink.objects.filter(pk=link.pk).update(id_pattern=r"pilot-\d{2}")
    assert opened(link, "pilot-7").status_code == 400
    assert opened(link, "pilot-17").status_code == 302


PATTERN_PROBLEMS = [
    ({"id_pattern": "lab-(\\d"}, "the id pattern is not a regular expression: missing ), unterminated subpattern"),
    ({"id_pattern": "x*"}, "the id pattern must not match an empty id"),
    ({"id_pattern": "x" * 201}, "the id pattern must be at most 200 characters, got 201"),
    (
        {"id_param": "participant"},
        "the id parameter 'participant' is no platform's whose id format is known (PROLIFIC_PID (Prolific), "
        "workerId (MTurk)): give the link an id pattern, a regular expression every participant id must match",
    ),
]


@pytest.mark.parametrize(("values", "message"), PATTERN_PROBLEMS)
def test_a_links_pattern_is_checked_when_the_service_saves_it(dataset, values, message):
    with pytest.raises(CampaignLinkError) as refused:
        make_link(dataset, **values)
    assert str(refused.value).startswith(message)
    assert not CampaignLink.objects.exists()


def test_a_pattern_of_the_longest_length_allowed_is_taken(dataset):
    longest = "lab-" + "x" * (MAX_ID_PATTERN - 4)
    make_link(dataset, id_pattern=longest)
    assert list(CampaignLink.objects.values_list("id_pattern", flat=True)) == [longest]


@pytest.mark.parametrize(("values", "message"), PATTERN_PROBLEMS)
def test_a_links_pattern_is_checked_when_the_api_saves_it(dataset, values, message, admin_api):
    body = {"name": "wave", "kinds": ["SIS"], "quota": 3, "completion_code": "DONE-1", **values}
    refused = admin_api.post(f"/api/datasets/{dataset.name}/campaign-links/", body, format="json")
    assert refused.status_code == 400 and refused.json()["detail"].startswith(message)
    assert not CampaignLink.objects.exists()
    made = admin_api.post(
        f"/api/datasets/{dataset.name}/campaign-links/", {**body, "id_pattern": r"lab-\d{4}"}, format="json"
    )
    assert made.status_code == 201 and made.json()["id_pattern"] == r"lab-\d{4}"


def test_a_links_pattern_is_checked_when_the_admin_form_saves_it(dataset, admin_client):
    form = {
        "name": "wave 1",
        "dataset": dataset.pk,
        "kinds": ["SIS"],
        "quota": 3,
        "completion_code": "CODE7",
        "id_param": "participant",
        "id_pattern": "",
        "active": "on",
        "questions-TOTAL_FORMS": 0,
        "questions-INITIAL_FORMS": 0,
        "participants-TOTAL_FORMS": 0,
        "participants-INITIAL_FORMS": 0,
    }
    for pattern, message in (("", "give the link an id pattern"), ("x*", "must not match an empty id")):
        page = admin_client.post("/admin/annotation/campaignlink/add/", {**form, "id_pattern": pattern})
        assert page.status_code == 200 and message in html.unescape(page.content.decode())
    assert not CampaignLink.objects.exists()
    made = admin_client.post("/admin/annotation/campaignlink/add/", {**form, "id_pattern": r"lab-\d{4}"})
    assert made.status_code == 302, made.content.decode()[:2000]
    link = CampaignLink.objects.get()
    assert (link.id_param, link.id_pattern) == ("participant", r"lab-\d{4}")
    assert opened(link, "lab-1234").status_code == 302 and opened(link, "lab-12", "203.0.113.6").status_code == 400


def test_the_database_refuses_a_link_of_an_unknown_platform_without_a_pattern(dataset):
    from django.db import IntegrityError, transaction

    link = make_link(dataset)
    with pytest.raises(IntegrityError), transaction.atomic():
        CampaignLink.objects.filter(pk=link.pk).update(id_param="participant")
    CampaignLink.objects.filter(pk=link.pk).update(id_param="participant", id_pattern=r"\w+")


BEFORE = [("annotation", "0037_drop_token_refused_function")]
AFTER = [("annotation", "0038_quiz_pool_participant_ids_signups")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_what_links_of_other_platforms_took_as_their_pattern():
    old = migrate_to(BEFORE)
    Dataset = old.get_model("annotation", "Dataset")
    Link = old.get_model("annotation", "CampaignLink")
    dataset = Dataset.objects.create(name="coco", image_url_prefix="https://x/")
    common = {
        "dataset": dataset,
        "kinds": ["SIS"],
        "quota": 3,
        "completion_code": "C-1",
        "created_at": datetime(2026, 1, 1, tzinfo=UTC),
    }
    for n, id_param in enumerate(("PROLIFIC_PID", "workerId", "Uid")):
        Link.objects.create(name=id_param, token=f"token-{n}", id_param=id_param, **common)
    new = migrate_to(AFTER).get_model("annotation", "CampaignLink")
    patterns = dict(new.objects.values_list("id_param", "id_pattern"))
    assert patterns == {"PROLIFIC_PID": "", "workerId": "", "Uid": r"[A-Za-z0-9_-]{1,64}"}
    migrate_to_latest()


def test_a_participant_id_is_never_a_way_to_another_account(dataset):
    """A pattern an admin made too wide still cannot name an account the link did not make."""
    link = make_link(dataset, id_pattern=r".+")
    UserFactory(username=f"prolific-{link.pk}-admin", roles=["admin"])
    assert opened(link, "admin").status_code == 409
    assert opened(link, "a b").status_code == 400, "the user name's characters still hold"
