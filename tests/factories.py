"""factory_boy factories shared by all tests."""

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotation.models import Caption, Dataset, Image, Qualification, Split, TaskKind
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
        """UserFactory(qualified_for=["STS", "SIS"]) grants those task kinds."""
        for kind in extracted or []:
            Qualification.objects.get_or_create(rater=self, kind=TaskKind(kind))


def make_items(*, split, n_images: int, captions_per_image: int = 5):
    """Create n_images images with captions_per_image captions each. Returns (images, captions)."""
    images = [ImageFactory(split=split) for _ in range(n_images)]
    captions = [CaptionFactory(image=image) for image in images for _ in range(captions_per_image)]
    return images, captions
