"""Flags that act over HTTP: the flagged rater first with the reasons, the
admin's Pause / Lift pause / Exclude buttons (researchers see the flags, no buttons),
the exclude page with what it hits, the exclusion's page with its undo, and every write
refused to researchers, raters, participants and anonymous users."""

import re

import pytest
from django.test import Client

from annotation.models import (
    ExclusionState,
    QualitySettings,
    RaterPause,
    Rating,
    RatingExclusion,
    RatingStatus,
)
from tests.factories import UserFactory
from tests.support.campaign_views import RATER_NAMES, client_for

pytestmark = pytest.mark.django_db

BAD = "eve"


@pytest.fixture
def flagged(campaign):
    """The campaign with eve's snapshot row made the bad rater of the real-data run."""
    for row in campaign.data["raters"]:
        if row["username"] == BAD:
            row.update(loo_correlation=0.05, shared_pairs=40, gold_error=1.81, gold_items=12, fast_share=1.0)
            row["ratings_total_all"] = 10  # the fewest ratings (and the minimum): first only because flagged
        else:
            row.update(loo_correlation=0.85, shared_pairs=40, gold_error=0.3, gold_items=12, fast_share=0.0)
            row["ratings_total_all"] = 50
    campaign.save()
    return campaign


def _user(name):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=name)


def _row_names(html: str) -> list[str]:
    return re.findall(r'<tr id="rater-\d+"[^>]*><th scope="row" data-sort="([^"]*)"', html)


def test_the_flagged_rater_comes_first_with_the_reasons_and_the_others_are_not_flagged(flagged):
    html = client_for("admin").get("/campaigns/coco/raters/").content.decode()
    names = _row_names(html)
    assert names[0] == BAD and sorted(names) == RATER_NAMES
    first_row = html[html.index(f'id="rater-{_user(BAD).pk}"') :].split("</tr>", 1)[0]
    assert 'class="flagged"' in first_row and "⚑ Flagged" in first_row
    for reason in ("LOO r 0.05 &lt; 0.30", "gold error 1.81 &gt; 1.00", "100% under the speed floor &gt; 50%"):
        assert reason in first_row
    assert html.count("⚑ Flagged") == 1, "nobody else is flagged"
    assert "LOO r below 0.30 (from 10 shared pairs)" in html, "the thresholds are stated"


def test_thresholds_come_from_the_datasets_quality_settings(flagged):
    QualitySettings.objects.create(
        dataset=flagged.dataset, flag_loo_below=None, flag_gold_error_above=None, flag_fast_share_above=None
    )
    html = client_for("admin").get("/campaigns/coco/raters/").content.decode()
    assert "⚑ Flagged" not in html and "LOO r: off" in html
    dashboard = client_for("researcher").get("/campaigns/coco/").content.decode()
    assert "No rater is past the thresholds." in dashboard


def test_the_dashboard_lists_the_flagged_raters(flagged):
    html = client_for("researcher").get("/campaigns/coco/").content.decode()
    section = html[html.index('id="flagged"') :].split("</section>", 1)[0]
    assert f">{BAD}</a>" in section and "gold error 1.81 &gt; 1.00" in section
    assert all(f">{name}</a>" not in section for name in RATER_NAMES if name != BAD)


def test_admins_get_the_buttons_and_researchers_only_the_flags(flagged):
    eve = _user(BAD)
    admin_html = client_for("admin").get("/campaigns/coco/raters/").content.decode()
    assert f'action="/campaigns/coco/raters/{eve.pk}/pause/"' in admin_html
    assert f'href="/campaigns/coco/raters/{eve.pk}/exclude/"' in admin_html
    assert "csrfmiddlewaretoken" in admin_html
    rater_page = client_for("admin").get(f"/campaigns/coco/raters/{eve.pk}/").content.decode()
    assert "⚑ Flagged" in rater_page and f'action="/campaigns/coco/raters/{eve.pk}/pause/"' in rater_page
    for url in ("/campaigns/coco/raters/", f"/campaigns/coco/raters/{eve.pk}/"):
        html = client_for("researcher").get(url).content.decode()
        assert "⚑ Flagged" in html
        assert "/pause/" not in html and "/exclude/" not in html and "Actions" not in html


def test_an_admin_pauses_and_lifts_from_the_rater_table(flagged):
    eve, client = _user(BAD), client_for("admin")
    response = client.post(f"/campaigns/coco/raters/{eve.pk}/pause/", {"next": "/campaigns/coco/raters/"})
    assert (response.status_code, response["Location"]) == (302, "/campaigns/coco/raters/")
    pause = RaterPause.objects.get(rater=eve, lifted_at__isnull=True)
    assert pause.reason.startswith("paused from the campaign page (flagged: LOO r 0.05 < 0.30;")
    html = client.get("/campaigns/coco/raters/").content.decode()
    assert f'action="/campaigns/coco/raters/{eve.pk}/lift-pause/"' in html and "Lift pause" in html
    again = client.post(f"/campaigns/coco/raters/{eve.pk}/pause/")
    assert again.status_code == 409 and "already paused" in again.content.decode()
    lifted = client.post(f"/campaigns/coco/raters/{eve.pk}/lift-pause/", {"next": "https://evil.example/"})
    assert (lifted.status_code, lifted["Location"]) == (302, f"/campaigns/coco/raters/#rater-{eve.pk}")
    pause.refresh_from_db()
    assert pause.lifted_at is not None
    not_paused = client.post(f"/campaigns/coco/raters/{eve.pk}/lift-pause/")
    assert not_paused.status_code == 409 and "is not paused" in not_paused.content.decode()


def test_an_admin_cannot_be_paused_from_the_page(flagged):
    other_admin = UserFactory(roles=["admin"])
    response = client_for("admin").post(f"/campaigns/coco/raters/{other_admin.pk}/pause/")
    assert response.status_code == 400 and "cannot be paused" in response.content.decode()
    assert not RaterPause.objects.exists()


def test_exclude_shows_what_it_hits_then_excludes_pauses_and_undoes(flagged, django_capture_on_commit_callbacks):
    eve, client = _user(BAD), client_for("admin")
    valid = Rating.objects.filter(rater=eve, status=RatingStatus.VALID)
    count, pairs = valid.count(), valid.values("pair").distinct().count()
    assert count > 0
    page = client.get(f"/campaigns/coco/raters/{eve.pk}/exclude/").content.decode()
    assert f'<strong id="reach-ratings">{count}</strong>' in page
    assert f'<strong id="reach-pairs">{pairs}</strong>' in page
    assert "excluded from the campaign page (flagged: LOO r 0.05 &lt; 0.30" in page
    assert not RatingExclusion.objects.exists(), "the preview writes nothing"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/campaigns/coco/raters/{eve.pk}/exclude/", {"reason": "bad rater"})
    exclusion = RatingExclusion.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/campaigns/coco/exclusions/{exclusion.pk}/")
    exclusion.refresh_from_db()
    assert (exclusion.state, exclusion.ratings_excluded, exclusion.reason) == (
        ExclusionState.APPLIED,
        count,
        "bad rater",
    )
    assert RaterPause.objects.filter(rater=eve, lifted_at__isnull=True).exists(), "exclude pauses by default"
    page = client.get(f"/campaigns/coco/exclusions/{exclusion.pk}/").content.decode()
    assert f"Applied: {count} ratings excluded" in page and 'id="undo-exclusion"' in page
    table = client.get("/campaigns/coco/raters/").content.decode()
    assert f'href="/campaigns/coco/exclusions/{exclusion.pk}/">exclusion #{exclusion.pk} (applied)' in table
    with django_capture_on_commit_callbacks(execute=True):
        undo = client.post(f"/campaigns/coco/exclusions/{exclusion.pk}/undo/")
    assert (undo.status_code, undo["Location"]) == (302, f"/campaigns/coco/exclusions/{exclusion.pk}/")
    exclusion.refresh_from_db()
    assert exclusion.state == ExclusionState.UNDONE and exclusion.ratings_restored == count
    assert valid.count() == count
    page = client.get(f"/campaigns/coco/exclusions/{exclusion.pk}/").content.decode()
    assert f"Undone: {count} ratings restored" in page and 'id="undo-exclusion"' not in page
    assert client.post(f"/campaigns/coco/exclusions/{exclusion.pk}/undo/").status_code == 409


@pytest.mark.parametrize("lift", [False, True])
def test_undo_says_the_rater_stays_paused_or_lifts_the_pause(flagged, django_capture_on_commit_callbacks, lift):
    eve, client = _user(BAD), client_for("admin")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/campaigns/coco/raters/{eve.pk}/exclude/", {"reason": "bad rater"})
    exclusion = RatingExclusion.objects.get()
    page = client.get(f"/campaigns/coco/exclusions/{exclusion.pk}/").content.decode()
    assert 'name="lift_pause" id="lift-with-undo" checked' in page, "the exclusion's own pause: lifting is offered"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/campaigns/coco/exclusions/{exclusion.pk}/undo/", {"lift_pause": "on"} if lift else {})
    paused = RaterPause.objects.filter(rater=eve, lifted_at__isnull=True).exists()
    page = client.get(f"/campaigns/coco/exclusions/{exclusion.pk}/").content.decode()
    if lift:
        assert not paused and 'id="pause-note"' not in page and "not paused" in page
        assert RaterPause.objects.get(rater=eve).lift_note == f"lifted with the undo of exclusion #{exclusion.pk}"
    else:
        assert paused and f"<strong>{BAD} is still paused</strong>" in page and 'id="lift-pause"' in page
    table = client.get("/campaigns/coco/raters/").content.decode()
    row = table[table.index(f'id="rater-{eve.pk}"') :].split("</tr>", 1)[0]
    assert f'data-label="Paused">{"no" if lift else "yes"}</td>' in row


def test_the_paused_column_and_csv_read_the_pause_as_it_stands_now(flagged):
    eve, client = _user(BAD), client_for("admin")
    assert client.post(f"/campaigns/coco/raters/{eve.pk}/pause/").status_code == 302
    for who in ("admin", "researcher"):
        html = client_for(who).get("/campaigns/coco/raters/").content.decode()
        row = html[html.index(f'id="rater-{eve.pk}"') :].split("</tr>", 1)[0]
        assert 'data-label="Paused">yes</td>' in row, f"{who}: no snapshot since the pause"
    csv_text = client.get("/campaigns/coco/raters/?format=csv").content.decode()
    (line,) = [line for line in csv_text.splitlines() if line.startswith(f"{eve.pk},")]
    assert line.endswith(",paused")
    card = client.get(f"/campaigns/coco/raters/{eve.pk}/").content.decode()
    assert "<div><dt>Paused</dt><dd>yes</dd></div>" in card


def test_exclude_can_keep_the_rater_active(flagged, django_capture_on_commit_callbacks):
    eve = _user(BAD)
    with django_capture_on_commit_callbacks(execute=True):
        client_for("admin").post(f"/campaigns/coco/raters/{eve.pk}/exclude/", {"reason": "r", "keep_active": "on"})
    assert RatingExclusion.objects.get().pause == "kept_active"
    assert not RaterPause.objects.exists()


def test_exclude_refusals_are_shown_on_the_page(flagged):
    eve, client = _user(BAD), client_for("admin")
    empty = client.post(f"/campaigns/coco/raters/{eve.pk}/exclude/", {"reason": "  "})
    assert empty.status_code == 400 and "needs a reason" in empty.content.decode()
    assert 'id="confirm-exclude"' in empty.content.decode(), "the form again, to fix the reason"
    nobody = UserFactory(roles=["rater"])
    none = client.get(f"/campaigns/coco/raters/{nobody.pk}/exclude/")
    assert none.status_code == 400 and "has no valid ratings" in none.content.decode()
    assert 'id="confirm-exclude"' not in none.content.decode()
    client.post(f"/campaigns/coco/raters/{eve.pk}/exclude/", {"reason": "first"})
    twin = client.get(f"/campaigns/coco/raters/{eve.pk}/exclude/")
    assert twin.status_code == 409 and "already excluded" in twin.content.decode()
    assert RatingExclusion.objects.count() == 1
    assert client.get("/campaigns/coco/raters/999999/exclude/").status_code == 404
    assert client.get("/campaigns/nope/raters/1/exclude/").status_code == 404


def _write_requests(eve_id: int, exclusion_id: int) -> list[tuple[str, str]]:
    return [
        ("post", f"/campaigns/coco/raters/{eve_id}/pause/"),
        ("post", f"/campaigns/coco/raters/{eve_id}/lift-pause/"),
        ("get", f"/campaigns/coco/raters/{eve_id}/exclude/"),
        ("post", f"/campaigns/coco/raters/{eve_id}/exclude/"),
        ("get", f"/campaigns/coco/exclusions/{exclusion_id}/"),
        ("post", f"/campaigns/coco/exclusions/{exclusion_id}/undo/"),
    ]


@pytest.mark.parametrize("roles", [["researcher"], ["rater"], ["participant"], []])
def test_every_action_is_refused_to_everyone_but_admins(flagged, roles):
    eve = _user(BAD)
    exclusion = RatingExclusion.objects.create(
        dataset=flagged.dataset,
        rater=eve,
        reason="r",
        created_by=UserFactory(roles=["admin"]),
        state="applied",
        created_at=flagged.made_at,
    )
    client = client_for(*roles)
    for method, url in _write_requests(eve.pk, exclusion.pk):
        response = getattr(client, method)(url, {"reason": "x"})
        assert response.status_code == 403, (roles, url)
    anonymous = Client()
    for method, url in _write_requests(eve.pk, exclusion.pk):
        response = getattr(anonymous, method)(url, {"reason": "x"})
        assert (response.status_code, response["Location"].split("?")[0]) == (302, "/login/"), url
    assert not RaterPause.objects.exists()
    exclusion.refresh_from_db()
    assert exclusion.state == "applied" and RatingExclusion.objects.count() == 1


def test_the_buttons_need_the_csrf_token_and_post(flagged):
    eve = _user(BAD)
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(roles=["admin"]))
    assert client.post(f"/campaigns/coco/raters/{eve.pk}/pause/").status_code == 403
    assert client.post(f"/campaigns/coco/raters/{eve.pk}/exclude/", {"reason": "x"}).status_code == 403
    assert client.get(f"/campaigns/coco/raters/{eve.pk}/pause/").status_code == 405
    assert not RaterPause.objects.exists() and not RatingExclusion.objects.exists()
