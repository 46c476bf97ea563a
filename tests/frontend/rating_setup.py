"""Build a rateable dataset for browser tests and benchmarks: the demo dataset with
queued pairs of every kind."""

import itertools

from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Caption, Dataset, Image, TaskKind
from annotation.serving.pairs import PairSpec, pairs_create_bulk
from sampling.models import SamplingBatch


def demo_with_pairs(*, per_kind: int = 10, ratings_per_pair: int = 5) -> Dataset:
    """Load the demo (12 images, 60 captions, accounts, worked examples) and queue
    ``per_kind`` pairs of each kind."""
    call_command("load_demo", force=True, stdout=open("/dev/null", "w"))  # noqa: SIM115
    dataset = Dataset.objects.get(name="demo")
    split = dataset.splits.get()
    batch = SamplingBatch.objects.create(
        dataset=dataset, split=split, methods={"uploaded": None}, ratings_per_pair=ratings_per_pair
    )
    images = list(Image.objects.filter(dataset=dataset).order_by("id"))
    captions = list(Caption.objects.filter(dataset=dataset).order_by("id"))
    pairs = {
        TaskKind.STS: itertools.combinations(captions, 2),
        TaskKind.SIS: itertools.combinations(images, 2),
        TaskKind.SITS: itertools.product(captions, images),
    }
    specs = []
    for a, b in itertools.islice(pairs[TaskKind.STS], per_kind):
        specs.append(PairSpec(TaskKind.STS, "c2c_isim", caption_a=a.id, caption_b=b.id))
    for a, b in itertools.islice(pairs[TaskKind.SIS], per_kind):
        specs.append(PairSpec(TaskKind.SIS, "i2i_csim", image_a=a.id, image_b=b.id))
    for a, b in itertools.islice(pairs[TaskKind.SITS], per_kind):
        specs.append(PairSpec(TaskKind.SITS, "c2i_intrasim", caption_a=a.id, image_a=b.id))
    pairs_create_bulk(batch=batch, specs=specs)
    return dataset


def rater(username: str = "rater1"):
    return get_user_model().objects.get(username=username)
