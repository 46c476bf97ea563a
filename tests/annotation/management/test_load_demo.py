"""The bundled demo dataset: loads once, with accounts, and its embeddings make sense."""

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.core.roles import ADMIN, RATER, RESEARCHER, has_role
from annotation.evaluation.explain.vocabulary import vocabulary
from annotation.management.commands.load_demo import DEMO_ACCOUNTS, DEMO_DIR
from annotation.models import Caption, Dataset, EmbeddingSpace, Image, ObjectAnnotation, Qualification
from frontend.models import WorkedExample
from sampling.encoders import cocaption_retrieval_rate


@pytest.mark.django_db
def test_load_demo_loads_dataset_spaces_and_accounts(settings, capsys):
    settings.RUN_MODE = "embedded"
    call_command("load_demo")
    out = capsys.readouterr().out
    assert "Loaded demo dataset 'demo': 12 images, 60 captions, 2 embedding spaces." in out
    for username, password, role in DEMO_ACCOUNTS:
        assert f"{username:<10} password: {password}" in out
        user = get_user_model().objects.get(username=username)
        assert user.check_password(password)
        assert has_role(user, role)
    dataset = Dataset.objects.get(name="demo")
    assert Image.objects.filter(dataset=dataset).count() == 12
    for image in Image.objects.filter(dataset=dataset):
        assert image.captions.count() == 5
        assert image.width and image.height
    assert sorted(EmbeddingSpace.objects.values_list("name", "modality", "dimension", "count")) == [
        ("efficientnet_lite0", "image", 1280, 12),
        ("minilm", "caption", 384, 60),
    ]
    for space in EmbeddingSpace.objects.all():
        np.testing.assert_allclose(np.linalg.norm(np.load(space.vectors_path), axis=1), 1.0, rtol=1e-5)
    rater = get_user_model().objects.get(username="rater1")
    granted = set(Qualification.objects.filter(rater=rater).values_list("kind", flat=True))
    assert granted == {"STS", "SIS", "SITS", "REV"}, "the demo's raters rate every CxC kind and review failures"
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser and has_role(admin, ADMIN)
    assert not has_role(get_user_model().objects.get(username="researcher"), RATER)
    examples = WorkedExample.objects.filter(dataset=dataset)
    assert set(examples.values_list("kind", flat=True)) == {"SIS", "SITS", "STS"}
    assert examples.count() == 9
    assert has_role(get_user_model().objects.get(username="researcher"), RESEARCHER)
    assert "Loaded 63 object annotations of 18 categories into the demo photos." in out
    assert Image.objects.filter(dataset=dataset, annotated_objects__isnull=True).count() == 0
    cat = ObjectAnnotation.objects.filter(image__key="DEMO_demo_000000000003.jpg")
    assert sorted(cat.values_list("category", flat=True)) == ["cat", "eye", "eye"]
    # Every category of the demo has its WordNet synset (the explainable evaluation needs them).
    assert all(name in vocabulary() for name in ObjectAnnotation.objects.values_list("category", flat=True))


@pytest.mark.django_db
def test_load_demo_twice_changes_nothing(settings, capsys):
    settings.RUN_MODE = "embedded"
    call_command("load_demo")
    counts = (Image.objects.count(), Caption.objects.count(), EmbeddingSpace.objects.count())
    users = get_user_model().objects.count()
    objects = ObjectAnnotation.objects.count()
    call_command("load_demo")
    assert "already loaded" in capsys.readouterr().out
    assert (Image.objects.count(), Caption.objects.count(), EmbeddingSpace.objects.count()) == counts
    assert ObjectAnnotation.objects.count() == objects
    assert get_user_model().objects.count() == users


@pytest.mark.django_db
def test_load_demo_brings_the_objects_to_a_demo_loaded_before_them(settings, capsys):
    settings.RUN_MODE = "embedded"
    call_command("load_demo")
    ObjectAnnotation.objects.all().delete()
    call_command("load_demo")
    assert "Loaded 63 object annotations" in capsys.readouterr().out
    assert ObjectAnnotation.objects.count() == 63


@pytest.mark.django_db
def test_load_demo_refuses_services_mode_without_force(settings):
    settings.RUN_MODE = "services"
    with pytest.raises(CommandError, match="embedded mode only"):
        call_command("load_demo")
    assert not Dataset.objects.exists()


def test_demo_caption_vectors_find_co_captions():
    """Pure: the committed caption vectors put a caption's nearest neighbour among its
    co-captions far above chance (4 of 59 other captions: about 7%)."""
    vectors = np.load(DEMO_DIR / "embeddings" / "minilm.npy")
    keys = (DEMO_DIR / "embeddings" / "minilm.ids.txt").read_text().split()
    assert vectors.shape == (60, 384)
    groups = [(int(key.rsplit(":", 1)[1]) - 1) // 5 for key in keys]  # demo sentids run 1..60, five per image
    assert cocaption_retrieval_rate(vectors, groups) >= 0.8


def test_cocaption_retrieval_rate_on_hand_built_vectors():
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [1.0, 1.0]])
    assert cocaption_retrieval_rate(vectors[:4], ["a", "a", "b", "b"]) == 1.0
    assert cocaption_retrieval_rate(vectors[:4], ["a", "b", "a", "b"]) == 0.0
