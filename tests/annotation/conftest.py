import pytest

from tests.annotation.queue_support import TTL, Clock


@pytest.fixture
def clock(monkeypatch, settings):
    """A hand-moved clock installed as django.utils.timezone.now, with leases of TTL seconds."""
    settings.LEASE_TTL_SECONDS = TTL
    clock = Clock()
    monkeypatch.setattr("django.utils.timezone.now", clock)
    return clock
