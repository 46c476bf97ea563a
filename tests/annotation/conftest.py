import pytest

from tests.annotation.queue_support import TTL, Clock


@pytest.fixture
def clock(monkeypatch, settings):
    """A hand-moved clock installed as django.utils.timezone.now, with leases of TTL seconds."""
    settings.LEASE_TTL_SECONDS = TTL
    clock = Clock()
    monkeypatch.setattr("django.utils.timezone.now", clock)
    return clock


# The hand-built evaluation split (tests/annotation/evaluation_data.py) in the database, and
# its vectors and ratings as files.
@pytest.fixture
def hand_dataset():
    from tests.annotation.evaluation_data import CAPTION_KEYS, CAPTION_OF, IMAGE_KEYS
    from tests.factories import CaptionFactory, ImageFactory, SplitFactory

    split = SplitFactory(name="val")
    images = [ImageFactory(split=split, key=key, cocoid=n + 1) for n, key in enumerate(IMAGE_KEYS)]
    for c, key in enumerate(CAPTION_KEYS):
        CaptionFactory(image=images[CAPTION_OF[c]], key=key, sentid=int(key.rsplit(":", 1)[1]))
    return split.dataset


@pytest.fixture
def hand_files(tmp_path):
    from tests.annotation.evaluation_data import write_hand_files

    return write_hand_files(tmp_path / "input")


@pytest.fixture
def seeded(monkeypatch):
    """Make the quiz attempts' draws reproducible: ``seeded(n)`` seeds the next ones."""
    import random

    def seed(value: int):
        generator = random.Random(value)
        monkeypatch.setattr("annotation.quality.quiz._generator", lambda: generator)

    return seed
