"""A campaign with gold pairs and its gold rate, and telling a served item gold, for the gold serving tests."""

from annotation.models import GoldLease, QualitySettings
from annotation.quality.gold.upload import gold_pairs_upload
from tests.factories import ImageFactory, SplitFactory
from tests.support.queue_support import queue_pairs
from tests.support.rating_support import db_id


def campaign(tmp_path, *, n_pairs: int, n_gold: int, ratings_per_pair: int = 3, one_in: int = 3):
    """A split with ``n_pairs`` SIS pairs queued and ``n_gold`` gold SIS pairs on other
    images, served one claim in ``one_in``."""
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=n_pairs, ratings_per_pair=ratings_per_pair)
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(n_gold + 1)]
    lines = ["image1,image2,gold_score"] + [
        f"{images[i].key},{images[i + 1].key},{i % 6 * 0.8:.1f}" for i in range(n_gold)
    ]
    path = tmp_path / "gold.csv"
    path.write_text("\n".join(lines) + "\n")
    assert gold_pairs_upload(dataset=split.dataset, path=path) == n_gold
    set_rate(split.dataset, one_in)
    return split.dataset


def set_rate(dataset, one_in: int) -> None:
    QualitySettings.objects.update_or_create(dataset=dataset, defaults={"gold_one_in": one_in})


def is_gold(answer: dict) -> bool:
    """What the attacker cannot see: whether the assignment is a gold lease."""
    return GoldLease.objects.filter(pk=db_id("slot", answer["slot_id"])).exists()
