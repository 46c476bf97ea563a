"""The rater-effects model and adaptive N on the campaign pages: the snapshot's model
figures per rater, the ratings adaptive N saved, the reliability curve, and the pages
that show them (with a screenshot)."""

from __future__ import annotations

import itertools

import pytest
from django.test import Client

from annotation.dashboard.services import campaign_snapshot_refresh
from annotation.models import Pair
from annotation.quality.rater_fits import rater_model_refit
from tests.factories import DatasetFactory, SplitFactory, UserFactory
from tests.support.queue_support import claim, queue_pairs, rater, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def adaptive_campaign():
    """Dataset "adaptive": 12 SIS pairs of an adaptive batch (3 to 6 ratings, half-width
    1.0) rated by 8 raters until nothing is left: odd pairs agree (they close at 3), even
    pairs are disputed (they grow). Fitted and with a fresh snapshot."""
    split = SplitFactory(dataset=DatasetFactory(name="adaptive"))
    queue_pairs(split=split, n_pairs=12, ratings_per_pair=3, adaptive=(6, 1.0))
    raters = [rater(kinds=("SIS",)) for _ in range(8)]
    spread = itertools.cycle([0.0, 5.0, 2.5, 1.0, 4.0])
    served = True
    while served:
        served = False
        for number, user in enumerate(raters):
            assignment = claim(user, split.dataset)
            if assignment is None:
                continue
            score = 4.8 + 0.02 * number if assignment.pair_id % 2 else next(spread)
            submit(user, split.dataset, assignment.slot_id, f"{user.pk}-{assignment.slot_id}", score=score)
            served = True
    rater_model_refit(dataset=split.dataset)
    return campaign_snapshot_refresh(split.dataset)


def test_the_snapshot_counts_what_adaptive_n_saved(adaptive_campaign):
    pairs = Pair.objects.filter(dataset__name="adaptive")
    closed = [pair for pair in pairs if pair.ratings_done == pair.ratings_required]
    assert len(closed) == 12
    assert {pair.ratings_required for pair in closed if pair.id % 2} == {3}
    assert all(pair.ratings_required > 3 for pair in closed if not pair.id % 2)
    adaptive = adaptive_campaign.data["progress"]["adaptive"]
    ratings = sum(pair.ratings_done for pair in closed)
    assert adaptive == {
        "pairs_closed": 12,
        "ratings": ratings,
        "fixed_n": 5,
        "fixed_ratings": 60,
        "saved": 60 - ratings,
        "saved_share": (60 - ratings) / 60,
    }


def test_each_rater_row_carries_the_models_bias_and_noise(adaptive_campaign):
    rows = adaptive_campaign.data["raters"]
    assert len(rows) == 8
    for row in rows:
        sis = row["model"]["sis"]
        assert sis["ratings"] == row["ratings_total"]["sis"]
        assert sis["noise_low"] < sis["noise_sd"] < sis["noise_high"]
        assert sis["bias_low"] < sis["bias"] < sis["bias_high"]
    (curve,) = adaptive_campaign.data["quality"]["reliability_by_kind"]
    assert curve["kind"] == "sis" and curve["measured"][0]["raters"] == 1


def test_the_pages_show_the_savings_the_curve_and_the_model_columns(adaptive_campaign):
    client = Client()
    client.force_login(UserFactory(roles=["researcher"]))
    html = client.get("/campaigns/adaptive/").content.decode()
    adaptive = adaptive_campaign.data["progress"]["adaptive"]
    assert 'id="adaptive-savings"' in html
    assert f"12 adaptive pairs closed with {adaptive['ratings']} ratings" in html
    assert f"{adaptive['saved']} ratings saved" in html
    assert 'data-chart="reliability"' in html and "N = 10" in html and "1 vs 1: " in html
    raters_page = client.get("/campaigns/adaptive/raters/").content.decode()
    assert "Model noise" in raters_page and "Model bias" in raters_page
    csv_text = client.get("/campaigns/adaptive/raters/?format=csv").content.decode()
    assert "model_noise" in csv_text.splitlines()[0]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_savings_and_the_curve_as_a_person_sees_them(adaptive_campaign, page, live_server, screenshot_dir):
    from tests.support.browser import session_for

    UserFactory(username="lab-researcher", roles=["researcher"])
    session_for(page, live_server, username="lab-researcher")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/campaigns/adaptive/")
    assert "adaptive pairs closed" in page.locator("#adaptive-savings").inner_text()
    chart = page.locator('[data-chart="reliability"]')
    chart.locator(".plot-container svg.main-svg").first.wait_for()
    assert chart.locator(".scatterlayer .trace").count() == 2  # the SIS curve and its measured halves
    card = page.locator("figure.chart-card", has=chart)
    card.locator("summary").click()
    cells = card.locator("tbody tr").first.locator("td")
    assert cells.count() == 9  # halves measured, then N = 1 .. 10 (8 columns)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=screenshot_dir / "campaign-adaptive-1280.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    chart.locator(".plot-container svg.main-svg").first.wait_for()
    page.screenshot(path=screenshot_dir / "campaign-adaptive-390.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/campaigns/adaptive/raters/")
    page.wait_for_selector("table")
    assert page.get_by_role("columnheader", name="Model noise").count() == 1
    page.screenshot(path=screenshot_dir / "campaign-adaptive-raters-1280.png", full_page=True)
