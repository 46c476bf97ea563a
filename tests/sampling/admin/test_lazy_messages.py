"""Django's messages are made on first use (config.middleware.LazyMessageMiddleware): an
API request never makes a message storage; an admin action's message still reaches the
next page."""

import pytest
from django.contrib.messages import middleware as django_messages_middleware

from config import middleware
from tests.factories import UserFactory
from tests.support.sampling_admin import CREATE_URL, form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def storages_made(monkeypatch):
    made = []
    original = middleware.default_storage

    def counting(request):
        made.append(request.path)
        return original(request)

    # Django's own middleware too: with it in MIDDLEWARE instead, every request counts.
    monkeypatch.setattr(middleware, "default_storage", counting)
    monkeypatch.setattr(django_messages_middleware, "default_storage", counting)
    return made


def test_an_api_request_makes_no_message_storage(client, storages_made):
    rater = UserFactory(roles=["rater"], password="pw-for-the-test")
    client.force_login(rater)
    response = client.get("/api/datasets/")
    assert response.status_code == 200
    assert storages_made == []
    assert "messages" not in response.cookies


def test_an_admin_message_still_reaches_the_next_page(admin_client, small, storages_made):
    response = admin_client.post(CREATE_URL, form_data(small.split, use_c2c_cocaption="on"), follow=True)
    page = response.content.decode()
    assert 'class="messagelist"' in page and "Batch #" in page
    assert CREATE_URL in storages_made
