"""A campaign link signs in only the participant account it made itself for its
platform's id (``<platform>-<link id>-<external id>``): an id whose name is any other
account's (an invited rater, a superuser, an account of another link, a participant
account given a password or a role) is refused with a 409 page and nobody is signed in.
Participant accounts rate (rating and quiz APIs) but never reach the admin, the campaign
or research pages, or the admin and researcher APIs."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from annotation.models import Participant
from annotation.people.crowd.links import campaign_link_create
from tests.factories import UserFactory
from tests.support.crowd_support import ParticipantClient, crowd_dataset, platform_id
from tests.support.crowd_support import platform_id as pid

pytestmark = pytest.mark.django_db

LONG_AGO = timezone.now() - timedelta(days=30)


@pytest.fixture
def dataset(tmp_path):
    return crowd_dataset(tmp_path)


def make_link(dataset, **extra):
    values = {"name": "wave", "kinds": ["SIS", "STS"], "quota": 5, "completion_code": "FULL-1", **extra}
    return campaign_link_create(dataset=dataset, **values)


def signed_in_as(client: Client):
    """The user id the client's session is signed in as (None: nobody)."""
    return client.session.get("_auth_user_id")


def assert_no_staff_access(client: Client, dataset) -> None:
    """Neither the admin, the staff pages, nor the admin and researcher APIs open."""
    admin = client.get("/admin/")
    assert admin.status_code == 302 and "/admin/login/" in admin["Location"]
    assert client.get("/admin/auth/user/").status_code == 302
    for page in ("/campaigns/", f"/campaigns/{dataset.name}/", f"/campaigns/{dataset.name}/raters/", "/research/"):
        response = client.get(page)
        assert response.status_code in (302, 403), page
        assert response.status_code == 403 or "/login/" in response["Location"], page
    for api in (
        f"/api/datasets/{dataset.name}/pauses/",
        f"/api/datasets/{dataset.name}/gold/",
        f"/api/datasets/{dataset.name}/exclusions/",
        f"/api/datasets/{dataset.name}/campaign-links/",
        "/api/exports/",
    ):
        assert client.get(api).status_code in (401, 403), api


@pytest.mark.parametrize(
    ("platform", "external_id", "make", "id_param"),
    [
        # An invited rater who set their password.
        ("prolific", "alice", {"roles": ["rater"]}, "PROLIFIC_PID"),
        # A superuser whose name reads like a worker id of the link.
        ("mturk", "ops", {"is_staff": True, "is_superuser": True}, "workerId"),
    ],
)
def test_a_link_never_signs_in_an_account_it_did_not_make(dataset, platform, external_id, make, id_param):
    link = make_link(dataset, id_param=id_param)
    flags = {name: value for name, value in make.items() if name != "roles"}
    victim_name = f"{platform}-{link.pk}-{platform_id(external_id, id_param)}"
    victim = UserFactory(username=victim_name, roles=make.get("roles", []), **flags)
    get_user_model().objects.filter(pk=victim.pk).update(last_login=LONG_AGO)
    visitor = ParticipantClient(link, external_id)
    response = visitor.join()
    page = response.content.decode()
    assert response.status_code == 409
    assert "cannot be used" in page and "contact the researcher" in page
    assert signed_in_as(visitor.http) is None
    assert_no_staff_access(visitor.http, dataset)
    victim.refresh_from_db()
    assert victim.last_login == LONG_AGO


def test_the_refused_visitor_is_nobody_and_the_account_is_untouched(dataset):
    link = make_link(dataset, id_param="workerId")
    victim = UserFactory(username=f"mturk-{link.pk}-{platform_id('ops', 'workerId')}", is_staff=True, is_superuser=True)
    get_user_model().objects.filter(pk=victim.pk).update(last_login=LONG_AGO)
    visitor = ParticipantClient(link, "ops")
    assert visitor.join().status_code == 409
    assert visitor.http.post(f"/api/rate/{dataset.name}/claim/", {}, content_type="application/json").status_code in (
        401,
        403,
    )
    victim.refresh_from_db()
    assert victim.last_login == LONG_AGO and victim.has_usable_password()
    assert set(victim.groups.values_list("name", flat=True)) == set()
    assert not Participant.objects.exists()
    assert_no_staff_access(visitor.http, dataset)


@pytest.mark.parametrize(
    "account",
    [
        "rater_without_password",  # invited, the invitation not yet used
        "researcher",
        "staff_without_password",
        "participant_given_a_password",  # the link's own account, since changed
        "participant_given_the_rater_role",
        "other_case",  # Prolific-7-Bob is not prolific-7-bob's to take
        "other_platform",  # a 'prolific' id parameter's participant account of that name
    ],
)
def test_every_other_clash_is_refused(dataset, account):
    users = get_user_model()
    link = make_link(dataset, name="second wave")
    name = f"prolific-{link.pk}-{pid('bob')}"
    if account.startswith("participant_"):
        ParticipantClient(link, "bob").join()
        user = users.objects.get(username=name)
        if account == "participant_given_a_password":
            user.set_password("a-password-of-their-own")
            user.save()
        else:
            user.groups.add(Group.objects.get_or_create(name="rater")[0])
    elif account == "other_case":
        UserFactory(username=f"Prolific-{link.pk}-{pid('bob').upper()}", roles=["rater"])
    elif account == "other_platform":
        other = make_link(dataset, name="other platform", id_param="prolific", id_pattern="[0-9a-f]{24}")
        user = UserFactory(username=name, roles=["participant"])
        user.set_unusable_password()
        user.save()
        Participant.objects.create(link=other, user=user, external_id=pid("bob"), started_at=timezone.now())
    else:
        user = UserFactory(
            username=name,
            roles={"rater_without_password": ["rater"], "researcher": ["researcher"]}.get(account, []),
            is_staff=account == "staff_without_password",
        )
        if account != "researcher":
            user.set_unusable_password()
            user.save()
    users_before, runs_before = users.objects.count(), Participant.objects.filter(link=link).count()
    visitor = ParticipantClient(link, "bob")
    response = visitor.join()
    assert response.status_code == 409, (account, response.status_code)
    assert "cannot be used" in response.content.decode()
    assert signed_in_as(visitor.http) is None
    assert users.objects.count() == users_before
    assert Participant.objects.filter(link=link).count() == runs_before


def test_the_accounts_own_link_refuses_it_once_it_is_more_than_a_participant(dataset):
    link = make_link(dataset)
    first = ParticipantClient(link, "carol")
    assert first.join().status_code == 302
    user = get_user_model().objects.get(username=f"prolific-{link.pk}-{pid('carol')}")
    user.is_staff = True
    user.save()
    again = ParticipantClient(link, "carol")
    assert again.join().status_code == 409 and signed_in_as(again.http) is None


def test_a_participant_account_is_the_participant_role_only_and_its_links_own(dataset):
    first_link = make_link(dataset)
    browser = ParticipantClient(first_link, "dana")
    assert browser.join().status_code == 302
    user = get_user_model().objects.get(username=f"prolific-{first_link.pk}-{pid('dana')}")
    assert set(user.groups.values_list("name", flat=True)) == {"participant"}
    assert not user.has_usable_password() and not user.is_staff
    assert Participant.objects.filter(link=first_link, external_id=pid("dana"), user=user).exists()
    again = ParticipantClient(first_link, "dana")
    assert again.join().status_code == 302 and signed_in_as(again.http) == str(user.pk)
    # Another platform's link of the dataset makes an account of its own for the same id.
    mturk_link = make_link(dataset, name="mturk wave", id_param="workerId")
    worker = ParticipantClient(mturk_link, "dana")
    assert worker.join().status_code == 302
    assert signed_in_as(worker.http) not in (None, str(user.pk))
    assert Participant.objects.get(link=mturk_link).user.username == f"mturk-{mturk_link.pk}-{worker.external_id}"


def test_an_account_an_earlier_join_made_comes_back_through_its_participant_row(dataset):
    """Accounts made before links made their own (``prolific-<id>``) keep their runs."""
    link = make_link(dataset)
    earlier = UserFactory(username=f"prolific-{pid('hal')}", roles=["participant"])
    earlier.set_unusable_password()
    earlier.save()
    Participant.objects.create(link=link, user=earlier, external_id=pid("hal"), started_at=timezone.now())
    browser = ParticipantClient(link, "hal")
    assert browser.join().status_code == 302 and signed_in_as(browser.http) == str(earlier.pk)
    assert get_user_model().objects.filter(username__contains=pid("hal")).count() == 1


def test_a_participant_rates_through_the_api_but_reaches_no_staff_page(dataset):
    browser = ParticipantClient(make_link(dataset), "erin")
    assert browser.join().status_code == 302
    slot = browser.claim("SIS")
    assert slot is not None and browser.submit(slot).status_code == 201
    assert browser.http.get(f"/api/rate/{dataset.name}/progress/").status_code == 200
    assert_no_staff_access(browser.http, dataset)
    bulk = browser.http.post("/api/raters/", {}, content_type="application/json")
    assert bulk.status_code == 403


def test_the_migration_leaves_earlier_participant_accounts_the_participant_role_only(dataset):
    """Accounts earlier links made were raters too; the migration takes the rater group
    away from them (and from nobody else), so their links let them in again."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("annotation.migrations.0019_campaign_partial_code")
    link = make_link(dataset)
    assert ParticipantClient(link, "fay").join().status_code == 302
    earlier = get_user_model().objects.get(username=f"prolific-{link.pk}-{pid('fay')}")
    earlier.groups.add(Group.objects.get_or_create(name="rater")[0])
    invited = UserFactory(username=f"prolific-{pid('gus')}", roles=["rater", "participant"])
    Participant.objects.create(link=link, user=invited, external_id=pid("gus"), started_at=timezone.now())
    assert ParticipantClient(link, "fay").join().status_code == 409
    migration.participants_lose_the_rater_group(apps, None)
    assert set(earlier.groups.values_list("name", flat=True)) == {"participant"}
    assert set(invited.groups.values_list("name", flat=True)) == {"rater", "participant"}
    assert ParticipantClient(link, "fay").join().status_code == 302
