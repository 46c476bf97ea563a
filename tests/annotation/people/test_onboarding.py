"""Raters in bulk from a CSV, with invitation links to set a password."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.core.roles import RATER, has_role
from annotation.models import Invitation, Qualification
from annotation.people.accounts import WeakPassword
from annotation.people.onboarding import (
    InvitationInvalid,
    RaterListError,
    invitation_accept,
    rater_list_read,
    raters_add,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


def csv_file(tmp_path, *lines, name="raters.csv"):
    path = tmp_path / name
    path.write_text("\n".join(["username,email,kinds", *lines]) + "\n")
    return path


def test_raters_are_added_qualified_with_invitations_and_no_password(tmp_path):
    rows = rater_list_read(csv_file(tmp_path, "ana,ana@example.org,STS SIS", "bo,,sits"))
    invited = raters_add(rows=rows)
    assert [(i.username, i.kinds) for i in invited] == [("ana", ("SIS", "STS")), ("bo", ("SITS",))]
    ana = User.objects.get(username="ana")
    assert has_role(ana, RATER) and not ana.has_usable_password() and ana.email == "ana@example.org"
    assert set(Qualification.objects.filter(rater=ana).values_list("kind", flat=True)) == {"STS", "SIS"}
    stored = Invitation.objects.get(user=ana)
    assert stored.token_digest != invited[0].token and invited[0].token not in stored.token_digest


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["ana,,STS", "Ana,,SIS"], "line 4: username 'Ana' repeats line 3"),
        (["ana,,STS MTS"], "line 3, column kinds: MTS; use one or more of STS, SIS, SITS"),
        (["ana,,"], "line 3, column kinds: none given"),
        (["an a,,STS"], "line 3, column username: 'an a' is not a valid username"),
        (["ana,not-mail,STS"], "line 3, column email: 'not-mail' is not an e-mail address"),
        (["ana,STS"], "line 3 has 2 fields, the header 3"),
    ],
)
def test_a_bad_list_is_refused_whole(tmp_path, lines, message):
    with pytest.raises(RaterListError, match=re.escape(message)):
        raters_add(rows=rater_list_read(csv_file(tmp_path, "zed,,STS", *lines)))
    assert not User.objects.filter(username="zed").exists()


def test_a_taken_username_refuses_the_list(tmp_path):
    UserFactory(username="taken")
    with pytest.raises(RaterListError, match="line 3: a user named 'taken' exists already"):
        raters_add(rows=rater_list_read(csv_file(tmp_path, "new1,,STS", "taken,,SIS")))
    assert not User.objects.filter(username="new1").exists()


def test_an_invitation_sets_the_password_once(tmp_path):
    (invited,) = raters_add(rows=rater_list_read(csv_file(tmp_path, "cy,,STS")))
    with pytest.raises(WeakPassword):
        invitation_accept(token=invited.token, password="12345678")
    user = invitation_accept(token=invited.token, password="a-good-long-passphrase")
    assert user.check_password("a-good-long-passphrase")
    with pytest.raises(InvitationInvalid, match="used already"):
        invitation_accept(token=invited.token, password="another-good-passphrase")
    with pytest.raises(InvitationInvalid, match="not known"):
        invitation_accept(token="nope", password="another-good-passphrase")


def test_an_expired_invitation_is_refused(tmp_path):
    (invited,) = raters_add(
        rows=rater_list_read(csv_file(tmp_path, "di,,SIS")), now=timezone.now() - timedelta(days=30)
    )
    with pytest.raises(InvitationInvalid, match="expired"):
        invitation_accept(token=invited.token, password="a-good-long-passphrase")


def test_the_command_prints_links_and_never_a_password(tmp_path, capsys):
    call_command(
        "raters",
        "add",
        "--csv",
        str(csv_file(tmp_path, "ed,,STS", "fa,,SIS SITS")),
        "--base-url",
        "https://r.example.org/",
    )
    out = capsys.readouterr().out
    assert "Added 2 rater(s)" in out
    links = re.findall(r"https://r\.example\.org/invite/[\w-]+/", out)
    assert len(links) == 2
    with pytest.raises(CommandError, match="no rater was added: .*line 2: a user named 'ed' exists already"):
        call_command("raters", "add", "--csv", str(csv_file(tmp_path, "ed,,STS", name="again.csv")))


def test_the_invitation_page(client, tmp_path):
    (invited,) = raters_add(rows=rater_list_read(csv_file(tmp_path, "gu,,STS")))
    url = f"/invite/{invited.token}/"
    assert "Welcome, gu" in client.get(url).content.decode()
    weak = client.post(url, {"new_password1": "gu", "new_password2": "gu"})
    assert weak.status_code == 200 and "too short" in weak.content.decode()
    done = client.post(url, {"new_password1": "a-good-long-passphrase", "new_password2": "a-good-long-passphrase"})
    assert done.status_code == 302 and done["Location"] == "/rate/"
    assert client.get("/rate/").status_code == 200
    again = client.get(url)
    assert again.status_code == 404 and "used already" in again.content.decode()
