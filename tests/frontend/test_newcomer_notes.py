"""A newcomer's smaller notes, as page text: "Exports" once on the home
page, the admin home leading with campaign work, the Paused card saying no. (The
sampling batch-create message is tested in tests/sampling/admin/test_admin.py.)"""

import re

import pytest
from django.test import Client

from annotation.models import TaskKind
from tests.factories import DatasetFactory, PairFactory, SamplingBatchFactory, SplitFactory, UserFactory
from tests.frontend.campaign_setup import rate_campaign

pytestmark = pytest.mark.django_db


def signed_in(**user) -> Client:
    client = Client()
    client.force_login(UserFactory(**user))
    return client


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def section(html: str, section_id: str) -> str:
    start = html.index(f'id="{section_id}"')
    return html[start : html.index("</section>", start)]


@pytest.mark.parametrize("user", [{"roles": ["researcher"]}, {"roles": ["admin"]}, {"is_staff": True}])
def test_the_home_page_names_exports_once(user):
    html = signed_in(**user).get("/").content.decode()
    research = section(html, "researcher")
    assert re.findall(r"\bExports\b", text_of(html)) == ["Exports"], "one button, no second link of that name"
    assert 'href="/research/"' in research and research.count('href="/research/"') == 1
    assert 'href="/campaigns/"' in research and 'href="/api/docs/"' in research


def test_the_admin_home_leads_with_campaign_work():
    html = signed_in(is_staff=True, is_superuser=True).get("/admin/").content.decode()
    campaign = html.index('id="campaign-module"')
    assert campaign < html.index('class="app-annotation'), "campaign work before the app list"
    module = html[campaign : html.index("</table>", campaign)]
    assert "Campaign work" in module
    for url in (
        "/campaigns/",
        "/admin/annotation/campaignlink/",
        "/admin/annotation/participant/",
        "/admin/auth/user/add-raters/",
        "/admin/annotation/raterpause/",
        "/admin/annotation/ratingexclusion/",
        "/admin/annotation/goldpair/",
        "/admin/sampling/samplingbatch/",
    ):
        assert f'href="{url}"' in module, url


def test_the_paused_card_and_column_say_no_for_a_rater_nobody_paused():
    batch = SamplingBatchFactory(split=SplitFactory(dataset=DatasetFactory(name="coco")))
    for _ in range(3):
        PairFactory(batch=batch, kind=TaskKind.STS)
    raters = [UserFactory(username=name, roles=["rater"]) for name in ("ann", "ben", "cat", "dan", "eve")]
    snapshot = rate_campaign(batch.dataset, raters)
    client = signed_in(roles=["researcher"])
    rater_id = snapshot.data["raters"][0]["rater_id"]
    card = client.get(f"/campaigns/coco/raters/{rater_id}/").content.decode()
    assert "<div><dt>Paused</dt><dd>no</dd></div>" in card
    table = client.get("/campaigns/coco/raters/").content.decode()
    body = table[table.index("<tbody") : table.index("</tbody>")]
    assert body.count(">no</td>") == len(raters), "one plain no per rater"
