"""factory_boy factories shared by all tests."""

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from annotation.models import (
    Caption,
    Dataset,
    Image,
    Pair,
    Qualification,
    Rating,
    RatingSlot,
    SamplingMethod,
    Split,
    TaskKind,
)
from annotation.serving.pairs import PairSpec, pairs_create_bulk
from sampling.models import SamplingBatch


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")
    image_url_prefix = "https://images.example.org/"


class SplitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Split

    dataset = factory.SubFactory(DatasetFactory)
    name = "val"


class ImageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Image

    split = factory.SubFactory(SplitFactory)
    dataset = factory.SelfAttribute("split.dataset")
    cocoid = factory.Sequence(lambda n: n + 1)
    key = factory.LazyAttribute(lambda o: f"COCO_val2014_{o.cocoid:012d}.jpg")
    file_path = factory.LazyAttribute(lambda o: f"val2014/{o.key}")


class CaptionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Caption

    image = factory.SubFactory(ImageFactory)
    dataset = factory.SelfAttribute("image.dataset")
    sentid = factory.Sequence(lambda n: 100_000 + n)
    key = factory.LazyAttribute(lambda o: f"COCO_val2014:sentid:{o.sentid}")
    text = factory.Sequence(lambda n: f"A caption number {n} about a scene.")


class SamplingBatchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SamplingBatch

    split = factory.SubFactory(SplitFactory)
    dataset = factory.SelfAttribute("split.dataset")
    methods = factory.LazyFunction(dict)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests")

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        """UserFactory(roles=["rater"]) puts the user in those groups."""
        for role in extracted or []:
            group, _ = Group.objects.get_or_create(name=role)
            self.groups.add(group)
        if create:
            self.save()

    @factory.post_generation
    def qualified_for(self, create, extracted, **kwargs):
        """UserFactory(qualified_for=["STS", "SIS"]) grants those task kinds in every
        dataset (as an admin does)."""
        for kind in extracted or []:
            Qualification.objects.get_or_create(rater=self, dataset=None, kind=TaskKind(kind))

    @factory.post_generation
    def qualified_in(self, create, extracted, **kwargs):
        """UserFactory(qualified_for=["STS"], qualified_in=dataset) grants them in that
        dataset alone (as a quiz or a campaign link does). Runs after qualified_for."""
        if extracted is not None:
            Qualification.objects.filter(rater=self, dataset__isnull=True).update(dataset=extracted)


# The method a pair of each kind gets when the test does not name one.
DEFAULT_METHOD = {
    TaskKind.STS: SamplingMethod.C2C_COCAPTION,
    TaskKind.SIS: SamplingMethod.I2I_CSIM,
    TaskKind.SITS: SamplingMethod.C2I_ORIGINAL,
}


def _new_image(pair, *, needed_for: tuple[str, ...]):
    return ImageFactory(split=pair.batch.split) if pair.kind in needed_for else None


class PairFactory(factory.Factory):
    """A queued pair written by ``pairs_create_bulk``, as sampling writes pairs: with its
    ``batch.ratings_per_pair`` open slots (dataset, kind, priority copied) and counted in
    the open-pairs counter. Create only (no build).

    ``kind`` chooses the items made for it in the batch's split: STS two captions of one
    image (co-captions), SIS two images, SITS a caption and its own image. Items passed
    in may come in any order; the pair is stored canonical (a < b). Raises ValueError
    when the dataset already has that pair.
    """

    class Meta:
        model = Pair

    batch = factory.SubFactory(SamplingBatchFactory)
    kind = TaskKind.SIS
    sampling_method = factory.LazyAttribute(lambda o: DEFAULT_METHOD[o.kind])
    image_a = factory.LazyAttribute(lambda o: _new_image(o, needed_for=(TaskKind.SIS, TaskKind.SITS)))
    image_b = factory.LazyAttribute(lambda o: _new_image(o, needed_for=(TaskKind.SIS,)))
    caption_a = factory.LazyAttribute(
        lambda o: (
            CaptionFactory(image=o.image_a or ImageFactory(split=o.batch.split))
            if o.kind in (TaskKind.STS, TaskKind.SITS)
            else None
        )
    )
    caption_b = factory.LazyAttribute(
        lambda o: CaptionFactory(image=o.caption_a.image) if o.kind == TaskKind.STS else None
    )

    @classmethod
    def _build(cls, model_class, *args, **kwargs):
        raise TypeError("PairFactory only creates pairs (through pairs_create_bulk); use PairFactory()")

    @classmethod
    def _create(cls, model_class, *, batch, kind, sampling_method, **items):
        ids = {column: item.pk if item is not None else None for column, item in items.items()}
        spec = PairSpec(kind, sampling_method, **ids).canonical()
        with transaction.atomic():
            created = pairs_create_bulk(batch=batch, specs=[spec])
        if not created:
            raise ValueError(f"dataset {batch.dataset.name!r} already has the {kind} pair {ids}")
        return model_class.objects.get(
            batch=batch,
            kind=kind,
            caption_a_id=spec.caption_a,
            caption_b_id=spec.caption_b,
            image_a_id=spec.image_a,
            image_b_id=spec.image_b,
        )


class RatingSlotFactory(factory.Factory):
    """The open slot ``index`` of a pair (default: slot 0 of a new PairFactory pair).

    Slots are made with their pair by ``pairs_create_bulk`` and change state only
    through the rating service, so this looks one up; lease or rate it with
    ``tests.support.rating_support.rate_pair`` or the queue services. Create only.
    """

    class Meta:
        model = RatingSlot

    pair = factory.SubFactory(PairFactory)
    index = 0

    @classmethod
    def _build(cls, model_class, *args, **kwargs):
        raise TypeError("RatingSlotFactory only looks up slots that pairs_create_bulk made; use RatingSlotFactory()")

    @classmethod
    def _create(cls, model_class, *, pair, index, **unexpected):
        if unexpected:
            raise TypeError(
                f"RatingSlotFactory takes only pair and index, not {sorted(unexpected)}: "
                "a slot's state changes through the rating service (tests.support.rating_support.rate_pair)"
            )
        slot = model_class.objects.filter(pair=pair, index=index).first()
        if slot is None:
            raise ValueError(f"pair #{pair.pk} has no slot {index}; it has {pair.ratings_required}")
        return slot


class RatingFactory(factory.Factory):
    """A rating stored by the rating service on the pair's next open slot (leased to
    ``rater`` first, as a claim leaves it): the pair's count, its slots and the
    open-pairs counter are updated as in production. Create only."""

    class Meta:
        model = Rating

    pair = factory.SubFactory(PairFactory)
    rater = factory.SubFactory(UserFactory, roles=["rater"], password=None)
    score = 3.0
    time_on_item_ms = 10_000

    @classmethod
    def _build(cls, model_class, *args, **kwargs):
        raise TypeError("RatingFactory only creates ratings (through the rating service); use RatingFactory()")

    @classmethod
    def _create(cls, model_class, *, pair, rater, score, time_on_item_ms):
        from tests.support.rating_support import rate_pair  # it uses UserFactory from here

        (result,) = rate_pair(pair, [score], raters=[rater], times_ms=[time_on_item_ms])
        return model_class.objects.get(pk=result.rating_id)


def make_items(*, split, n_images: int, captions_per_image: int = 5):
    """Create n_images images with captions_per_image captions each. Returns (images, captions)."""
    images = [ImageFactory(split=split) for _ in range(n_images)]
    captions = [CaptionFactory(image=image) for image in images for _ in range(captions_per_image)]
    return images, captions
