"""Build a rateable dataset for browser tests and benchmarks: the demo dataset with
queued pairs of every kind."""

from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Caption, Dataset, Image, TaskKind
from annotation.services import PairSpec, pairs_create_bulk
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
    specs = []
    for n in range(per_kind):
        specs.append(PairSpec(TaskKind.STS, "c2c_cocaption", caption_a=captions[n].id, caption_b=captions[n + 7].id))
        specs.append(
            PairSpec(TaskKind.SIS, "i2i_csim", image_a=images[n % 12].id, image_b=images[(n + 1 + n // 12) % 12].id)
        )
        specs.append(
            PairSpec(TaskKind.SITS, "c2i_original", caption_a=captions[n * 5 % 60].id, image_a=images[n % 12].id)
        )
    pairs_create_bulk(batch=batch, specs=specs)
    return dataset


def rater(username: str = "rater1"):
    return get_user_model().objects.get(username=username)
