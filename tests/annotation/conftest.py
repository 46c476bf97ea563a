import pytest

from annotation.models import TaskKind
from tests.factories import SplitFactory
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import TTL, Clock


@pytest.fixture
def clock(monkeypatch, settings):
    """A hand-moved clock installed as django.utils.timezone.now, with leases of TTL seconds."""
    settings.LEASE_TTL_SECONDS = TTL
    clock = Clock()
    monkeypatch.setattr("django.utils.timezone.now", clock)
    return clock


# The hand-built evaluation split (tests/support/evaluation_data.py) in the database, and
# its vectors and ratings as files.
@pytest.fixture
def hand_dataset():
    from tests.factories import CaptionFactory, ImageFactory, SplitFactory
    from tests.support.evaluation_data import CAPTION_KEYS, CAPTION_OF, IMAGE_KEYS

    split = SplitFactory(name="val")
    images = [ImageFactory(split=split, key=key, cocoid=n + 1) for n, key in enumerate(IMAGE_KEYS)]
    for c, key in enumerate(CAPTION_KEYS):
        CaptionFactory(image=images[CAPTION_OF[c]], key=key, sentid=int(key.rsplit(":", 1)[1]))
    return split.dataset


@pytest.fixture
def hand_files(tmp_path):
    from tests.support.evaluation_data import write_hand_files

    return write_hand_files(tmp_path / "input")


@pytest.fixture
def seeded(monkeypatch):
    """Make the quiz attempts' draws reproducible: ``seeded(n)`` seeds the next ones."""
    import random

    def seed(value: int):
        generator = random.Random(value)
        monkeypatch.setattr("annotation.quality.quiz._generator", lambda **attempt: generator)

    return seed


# Gold pairs in two datasets, for the gold counters' tests.
@pytest.fixture
def two_splits(tmp_path):
    """Dataset A: 4 SIS and 3 STS gold pairs; dataset B: 2 SIS."""
    splits = [SplitFactory(), SplitFactory()]
    gold_upload(splits[0], TaskKind.SIS, 4, tmp_path)
    gold_upload(splits[0], TaskKind.STS, 3, tmp_path)
    gold_upload(splits[1], TaskKind.SIS, 2, tmp_path)
    return splits
