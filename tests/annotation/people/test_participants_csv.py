"""The participants CSV of a campaign link (GET /api/datasets/<d>/campaign-links/<id>/
participants/, linked from the admin's link page): participants driven through the link
and the rating API, their figures, the flag, escaping, and who may read it."""

import csv
import io
import itertools
import statistics

import pytest
from rest_framework.test import APIClient

from annotation.models import GoldLease, GoldPurpose, GoldRating, QualitySettings, Rating, TaskKind
from annotation.people.crowd.links import campaign_link_create
from annotation.quality.flags import MIN_FAST_RATINGS, MIN_GOLD_MET
from tests.factories import UserFactory
from tests.support.crowd_support import ParticipantClient, crowd_dataset

pytestmark = pytest.mark.django_db

# The speed floors are 1.5 s (SIS) and 3 s (STS): the quick participant's items are all under them.
QUICK_MS, CAREFUL_MS = 500, 9_000


class Participant(ParticipantClient):
    def rate(self, *, n: int, time_ms: int) -> int:
        """Rate ``n`` items, SIS first, then STS when no SIS is served; returns how many."""
        for done in range(n):
            slot = self.claim(TaskKind.SIS) or self.claim(TaskKind.STS)
            if slot is None:
                return done
            body = {
                "score": 2.5,
                "time_on_item_ms": time_ms + 10 * done,
                "idempotency_key": f"{self.external_id}-{next(self.keys)}",
                "time_to_first_move_ms": 100,
                "adjustments": 1,
            }
            response = self._post(f"slots/{slot['slot_id']}/submit/", body)
            assert response.status_code == 201, response.content
        return n


@pytest.fixture
def world(tmp_path):
    dataset = crowd_dataset(tmp_path, gold_one_in=2)
    # Gold error off: which gold pairs each one meets is random; the column is checked by hand.
    QualitySettings.objects.filter(dataset=dataset).update(flag_gold_error_above=None)
    # The link's own pattern lets an id begin like a formula: it is escaped in the CSV.
    link = campaign_link_create(
        dataset=dataset, name="pilot", kinds=["SIS", "STS"], quota=12, completion_code="DONE-1", id_pattern=r"[-\w]+"
    )
    quick = Participant(link, "-quick")
    careful = Participant(link, "careful_2")
    idle = Participant(link, "idle3")
    for participant in (careful, quick, idle):
        assert participant.join().status_code == 302
    assert careful.rate(n=6, time_ms=CAREFUL_MS) == 6
    assert quick.rate(n=12, time_ms=QUICK_MS) == 12
    assert quick.done_page().status_code == 200
    return dataset, link, {"quick": quick, "careful": careful, "idle": idle}


def _rows(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def _url(dataset, link) -> str:
    return f"/api/datasets/{dataset.name}/campaign-links/{link.pk}/participants/"


def _token_client(*roles) -> APIClient:
    user = UserFactory(roles=list(roles))
    response = APIClient().post(
        "/api/auth/token/", {"username": user.username, "password": "pw-for-tests"}, format="json"
    )
    return APIClient(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")


def test_each_participant_has_a_row_with_status_figures_and_flag(world):
    dataset, link, people = world
    rows = _rows(_token_client("admin").get(_url(dataset, link)))
    assert [row["external_id"] for row in rows] == ["careful_2", "'-quick", "idle3"], "in joining order, escaped"
    careful, quick, idle = rows
    # The admin's word for the outcome, not a synonym of it.
    assert (careful["status"], quick["status"], idle["status"]) == ("started", "completed", "started")
    assert link.participants.get(external_id="-quick").outcome == quick["status"]
    assert quick["finished_at"] != "" and careful["finished_at"] == ""
    user = people["quick"].http.session["_auth_user_id"]
    ratings = Rating.objects.filter(rater_id=user, pair__dataset=dataset)
    gold = GoldRating.objects.filter(rater_id=user, dataset=dataset, purpose=GoldPurpose.QUEUE)
    assert int(quick["items_rated"]) == ratings.count() + gold.count() == 12
    assert int(quick["gold_items"]) == gold.count() > 0
    expected_error = statistics.mean(abs(g.score - g.gold_score) for g in gold)
    assert float(quick["gold_error"]) == pytest.approx(expected_error, abs=1e-4)
    times = [*ratings.values_list("time_on_item_ms", flat=True), *gold.values_list("time_on_item_ms", flat=True)]
    assert float(quick["median_seconds_per_item"]) == pytest.approx(statistics.median(times) / 1000, abs=0.01)
    assert float(quick["share_under_speed_floor"]) == 1.0
    assert float(careful["share_under_speed_floor"]) == 0.0
    assert (quick["flagged"], quick["flag_reasons"]) == ("yes", "100% under the speed floor > 50%")
    assert (careful["flagged"], careful["flag_reasons"]) == ("no", "")
    assert (idle["items_rated"], idle["gold_error"], idle["median_seconds_per_item"], idle["flagged"]) == (
        "0",
        "",
        "",
        "no",
    )
    assert quick["loo_r"] == "", "no campaign snapshot yet"


def test_a_participant_who_skips_the_gold_pairs_is_flagged_for_it(world):
    dataset, link, people = world
    dodger = people["idle"]
    user = int(dodger.http.session["_auth_user_id"])
    for _ in itertools.count():
        slot = dodger.claim(TaskKind.SIS) or dodger.claim(TaskKind.STS)
        if slot is None:
            break
        dodger.skip(slot)
    passed = GoldLease.objects.filter(rater_id=user, state="skipped").count()
    assert passed >= 1
    rows = {row["external_id"]: row for row in _rows(_token_client("researcher").get(_url(dataset, link)))}
    assert float(rows["idle3"]["gold_skip_share"]) == 1.0
    # Flagged from MIN_GOLD_MET gold pairs met; how many are served is random (one in two).
    flagged = passed >= MIN_GOLD_MET
    assert (rows["idle3"]["flagged"], rows["idle3"]["flag_reasons"]) == (
        ("yes", "100% of gold pairs skipped > 50%") if flagged else ("no", "")
    )


def test_a_short_quota_clicked_through_is_flagged_on_its_share_under_the_speed_floor(tmp_path):
    # A study of 5 items: fewer ratings than a count-based minimum of 10 would ever see.
    dataset = crowd_dataset(tmp_path, gold_one_in=0)
    link = campaign_link_create(dataset=dataset, name="short", kinds=["SIS", "STS"], quota=5, completion_code="C-5")
    fast, careful, started = (Participant(link, name) for name in ("fast", "careful", "started"))
    for participant in (fast, careful, started):
        assert participant.join().status_code == 302
    assert fast.rate(n=5, time_ms=800) == 5  # 0.8-0.84 s per item: under the 1.5 s and 3 s floors
    assert careful.rate(n=5, time_ms=CAREFUL_MS) == 5
    assert started.rate(n=1, time_ms=800) == 1  # one quick item of five: too early to judge
    rows = {row["external_id"]: row for row in _rows(_token_client("admin").get(_url(dataset, link)))}
    by_name = {
        name: rows[person.external_id] for name, person in (("fast", fast), ("careful", careful), ("started", started))
    }
    assert (by_name["fast"]["items_rated"], by_name["fast"]["share_under_speed_floor"]) == ("5", "1.0")
    assert (by_name["fast"]["flagged"], by_name["fast"]["flag_reasons"]) == ("yes", "100% under the speed floor > 50%")
    assert (by_name["careful"]["flagged"], by_name["careful"]["flag_reasons"]) == ("no", "")
    assert (by_name["started"]["flagged"], by_name["started"]["share_under_speed_floor"]) == ("no", "1.0")


def test_a_quota_under_the_minimum_is_judged_whole(tmp_path):
    dataset = crowd_dataset(tmp_path, gold_one_in=0)
    assert MIN_FAST_RATINGS > 3
    link = campaign_link_create(dataset=dataset, name="tiny", kinds=["SIS"], quota=3, completion_code="C-3")
    fast = Participant(link, "fast3")
    assert fast.join().status_code == 302
    assert fast.rate(n=2, time_ms=1_000) == 2
    (row,) = _rows(_token_client("admin").get(_url(dataset, link)))
    assert row["flagged"] == "no", "two of three items: the quota is not done"
    assert fast.rate(n=1, time_ms=1_200) == 1
    (row,) = _rows(_token_client("admin").get(_url(dataset, link)))
    assert (row["items_rated"], row["flagged"], row["flag_reasons"]) == ("3", "yes", "100% under the speed floor > 50%")


@pytest.mark.parametrize("roles", [["rater"], ["participant"]])
def test_raters_and_participants_are_refused(world, roles):
    dataset, link, _ = world
    assert _token_client(*roles).get(_url(dataset, link)).status_code == 403


def test_anonymous_callers_are_refused_and_unknown_links_are_404(world):
    dataset, link, people = world
    assert APIClient().get(_url(dataset, link)).status_code == 401
    assert people["careful"].http.get(_url(dataset, link)).status_code == 403, "a participant's own session"
    admin = _token_client("admin")
    assert admin.get(f"/api/datasets/{dataset.name}/campaign-links/999999/participants/").status_code == 404
    assert admin.get(f"/api/datasets/nope/campaign-links/{link.pk}/participants/").status_code == 404


def test_the_admins_link_page_offers_the_download(world, admin_client):
    dataset, link, _ = world
    page = admin_client.get(f"/admin/annotation/campaignlink/{link.pk}/change/").content.decode()
    assert f'href="{_url(dataset, link)}"' in page
    rows = _rows(admin_client.get(_url(dataset, link)))
    assert len(rows) == 3, "the admin's session downloads it"


def test_every_outcome_of_a_run_has_a_status_in_the_csv():
    from annotation.models import ParticipantOutcome
    from annotation.quality.participants import STATUS

    assert set(STATUS) == {"", *ParticipantOutcome.values}
